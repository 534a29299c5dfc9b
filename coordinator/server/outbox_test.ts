import assert from "node:assert/strict";
import { FRAME_HEADER_BYTES } from "../../net/mod.ts";
import { Outbox, UnreadRepliesError } from "./outbox.ts";

/** A writer whose writes wait until released, recording each frame's first payload byte. */
function gatedWriter() {
  const written: number[] = [];
  let release: () => void = () => {};
  let gate = new Promise<void>((r) => release = r);
  return {
    written,
    open() {
      release();
    },
    writer: {
      async write(p: Uint8Array): Promise<number> {
        await gate;
        written.push(p[FRAME_HEADER_BYTES]);
        gate = Promise.resolve();
        return p.length;
      },
    },
  };
}

Deno.test("replies keep their order; queued states coalesce to the newest", async () => {
  const w = gatedWriter();
  const outbox = new Outbox(w.writer, (e) => assert.fail(e));
  outbox.sendState(new Uint8Array([1])); // starts writing, blocked on the gate
  outbox.sendState(new Uint8Array([2]));
  outbox.send(new Uint8Array([10]));
  outbox.sendState(new Uint8Array([3]));
  outbox.send(new Uint8Array([11]));
  w.open();
  await outbox.flush();
  assert.deepEqual(w.written, [1, 10, 11, 3]);
});

Deno.test("the first failed write closes the outbox and is reported once", async () => {
  const errors: Error[] = [];
  let writes = 0;
  const outbox = new Outbox({
    write() {
      writes++;
      return Promise.reject(new Error("broken pipe"));
    },
  }, (e) => errors.push(e));
  outbox.send(new Uint8Array([1]));
  outbox.send(new Uint8Array([2]));
  await outbox.flush();
  outbox.send(new Uint8Array([3]));
  await outbox.flush();
  assert.equal(writes, 1);
  assert.deepEqual(errors.map((e) => e.message), ["broken pipe"]);
});

Deno.test("a peer that leaves too many replies unread fails the outbox", async () => {
  const w = gatedWriter(); // never opened: the peer reads nothing
  const errors: Error[] = [];
  const outbox = new Outbox(w.writer, (e) => errors.push(e), { maxQueued: 3 });
  for (let i = 0; i < 6; i++) outbox.send(new Uint8Array([i])); // the first is being written
  assert.deepEqual(errors.map((e) => e.message), ["the peer left 3 replies unread"]);
  assert.ok(errors[0] instanceof UnreadRepliesError);
  outbox.send(new Uint8Array([9]));
  assert.equal(errors.length, 1, "reported once");
  w.open();
  await outbox.flush();
  assert.deepEqual(w.written, [0], "nothing more is written once it failed");
});

Deno.test("a last frame is read last: no state or reply queued after it is written", async () => {
  const w = gatedWriter();
  const outbox = new Outbox(w.writer, (e) => assert.fail(e));
  outbox.sendState(new Uint8Array([1])); // being written, blocked on the gate
  outbox.send(new Uint8Array([10]));
  outbox.sendState(new Uint8Array([2])); // not written yet: dropped by the last frame
  outbox.sendLast(new Uint8Array([99]));
  outbox.sendState(new Uint8Array([3])); // pushed while the refusal is on its way
  outbox.send(new Uint8Array([11]));
  w.open();
  await outbox.flush();
  assert.deepEqual(w.written, [1, 10, 99]);
});

Deno.test("a state's frame is made from the last state written, coalesced ones skipped", async () => {
  const w = gatedWriter();
  const bases: (number | null)[] = [];
  const outbox = new Outbox(w.writer, (e) => assert.fail(e), {
    stateFrame: (base, state) => {
      bases.push(base === null ? null : base[0]);
      return new Uint8Array([100 + state[0]]);
    },
  });
  outbox.sendState(new Uint8Array([1])); // written first, from nothing
  outbox.sendState(new Uint8Array([2])); // replaced by 3 before it is written
  outbox.sendState(new Uint8Array([3]));
  w.open();
  await outbox.flush();
  outbox.sendState(new Uint8Array([4]));
  await outbox.flush();
  assert.deepEqual(w.written, [101, 103, 104]);
  assert.deepEqual(bases, [null, 1, 3]);
});
