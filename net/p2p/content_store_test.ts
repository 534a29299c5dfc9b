import assert from "node:assert/strict";
import {
  contentHash,
  contentHashSteps,
  ContentStore,
  hashFromBytes,
  hashToBytes,
} from "./content_store.ts";

const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);

Deno.test("content hash is sha256 hex", () => {
  // sha256("abc") from FIPS 180-2.
  assert.equal(
    contentHash(new TextEncoder().encode("abc")),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  const h = contentHash(bytes(3, 1));
  assert.equal(hashFromBytes(hashToBytes(h)), h);
  assert.throws(() => hashToBytes("abc"), /64 lowercase hex characters, found "abc"/);
  assert.throws(() => hashFromBytes(new Uint8Array(31)), /found 31/);
});

/** Runs steps to the end; returns their value and how many pauses they made. */
function drain<T>(steps: Generator<void, T>): { value: T; pauses: number } {
  let pauses = 0;
  let step = steps.next();
  while (!step.done) {
    pauses++;
    step = steps.next();
  }
  return { value: step.value, pauses };
}

Deno.test("contentHashSteps is contentHash a chunk at a time, pausing between chunks", () => {
  const data = Uint8Array.from({ length: 1000 }, (_, i) => (i * 37) & 0xff);
  for (const chunkBytes of [1, 7, 999, 1000, 4096]) {
    const done: number[] = [];
    const { value, pauses } = drain(
      contentHashSteps(data, { chunkBytes, onProgress: (n) => done.push(n) }),
    );
    assert.equal(value, contentHash(data), `chunks of ${chunkBytes}`);
    const chunks = Math.ceil(data.length / chunkBytes);
    assert.equal(pauses, chunks - 1);
    assert.equal(done.length, chunks);
    assert.equal(done.at(-1), data.length);
  }
  assert.equal(drain(contentHashSteps(new Uint8Array(0))).value, contentHash(new Uint8Array(0)));
});

Deno.test("putSteps stores the bytes under their hash only once all are hashed", () => {
  const store = new ContentStore();
  const data = bytes(10, 9);
  const steps = store.putSteps(data, { name: "blob", step: 2, chunkBytes: 4 });
  assert.equal(steps.next().done, false);
  assert.equal(store.size, 0, "nothing served half hashed");
  const { value } = drain(steps);
  assert.equal(value, contentHash(data));
  assert.equal(store.get(value), data);
  assert.equal(store.hashOfName("blob"), value);
  assert.throws(() => store.putSteps(data, { step: -1 }).next(), /non-negative integer/);
});

Deno.test("put, get by hash and by name, and totals", () => {
  const store = new ContentStore();
  const a = store.put(bytes(10, 1), { step: 3 });
  const b = store.put(bytes(20, 2), { name: "config" });
  assert.equal(store.get(a)?.length, 10);
  assert.equal(store.hashOfName("config"), b);
  assert.equal(store.put(bytes(10, 1)), a, "same bytes, same hash, one copy");
  assert.equal(store.size, 2);
  assert.equal(store.totalBytes, 30);
});

Deno.test("forgetBefore drops old steps only, and forget removes names too", () => {
  const store = new ContentStore();
  const s3 = store.put(bytes(1, 3), { step: 3 });
  const s4 = store.put(bytes(1, 4), { step: 4 });
  const kept = store.put(bytes(1, 9), { name: "model.embed" });
  assert.equal(store.forgetBefore(4), 1);
  assert.equal(store.has(s3), false);
  assert.equal(store.has(s4), true);
  assert.equal(store.has(kept), true);
  assert.equal(store.forget([kept, "00".repeat(32)]), 1);
  assert.equal(store.hashOfName("model.embed"), undefined);
  assert.equal(store.totalBytes, 1);
});

Deno.test("a name moves to the newest content", () => {
  const store = new ContentStore();
  const v1 = store.put(bytes(1, 1), { name: "w" });
  const v2 = store.put(bytes(1, 2), { name: "w" });
  assert.equal(store.hashOfName("w"), v2);
  store.forget([v1]);
  assert.equal(store.hashOfName("w"), v2);
  assert.throws(() => store.put(bytes(1, 1), { step: -1 }), /step must be a non-negative integer/);
});
