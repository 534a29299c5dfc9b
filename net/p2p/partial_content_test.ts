import assert from "node:assert/strict";
import { seededBytes } from "../testing/seeded_bytes.ts";
import { contentHash, hashToBytes } from "./content_store.ts";
import { PayloadAttemptError } from "./fallback.ts";
import { PartialContent, PrefixConflict } from "./partial_content.ts";

// Larger than the hash batch, so the hash state runs across the two providers' bytes.
const content = seededBytes(3 * 1024 * 1024 + 5, 7);
const hash = hashToBytes(contentHash(content));
const length = content.length;

Deno.test("a rest from a second provider completes the prefix of the first", () => {
  const partial = new PartialContent();
  assert.equal(partial.offset, 0);
  partial.begin("A", { hash, length, offset: 0 });
  partial.append("A", content.subarray(0, 1_500_000));
  partial.append("A", content.subarray(1_500_000, 2_000_000));
  assert.equal(partial.offset, 2_000_000);
  assert.equal(partial.complete, false);
  assert.throws(() => partial.finish(), /content incomplete: 2000000 of 3145733 bytes/);
  partial.begin("B", { hash, length, offset: 2_000_000 });
  partial.append("B", content.subarray(2_000_000));
  assert.equal(partial.complete, true);
  assert.equal(partial.resumes, 1);
  assert.deepEqual([...partial.sources], ["A", "B"]);
  const done = partial.finish();
  assert.deepEqual(done.bytes, content);
  assert.equal(done.hash, contentHash(content));
  assert.equal(done.declared, contentHash(content));
});

Deno.test("a rest for other content or from another offset is refused, the prefix kept", () => {
  const partial = new PartialContent();
  partial.begin("A", { hash, length, offset: 0 });
  partial.append("A", content.subarray(0, 1000));
  assert.throws(
    () => partial.begin("B", { hash, length: length + 1, offset: 1000 }),
    (e) =>
      e instanceof PrefixConflict && /declares 3145734 bytes, the 1000 bytes held/.test(e.message),
  );
  assert.throws(
    () => partial.begin("B", { hash: new Uint8Array(32), length, offset: 1000 }),
    (e) => e instanceof PrefixConflict && /declares hash 0000/.test(e.message),
  );
  assert.throws(
    () => partial.begin("B", { hash, length, offset: 999 }),
    (e) =>
      e instanceof PayloadAttemptError && e.code === "protocol" &&
      /serves from byte 999, we asked from 1000/.test(e.message),
  );
  assert.equal(partial.offset, 1000);
  assert.deepEqual([...partial.sources], ["A"]);
  // After a conflict the caller discards the prefix and asks the new provider for all of it.
  partial.discard({ resume: true });
  partial.begin("B", { hash, length, offset: 0 });
  assert.equal(partial.offset, 0);
  assert.deepEqual([...partial.sources], []);
});

Deno.test("bytes past the declared length are refused and not kept", () => {
  const partial = new PartialContent();
  partial.begin("A", { hash, length: 10, offset: 0 });
  partial.append("A", content.subarray(0, 6));
  assert.throws(
    () => partial.append("A", content.subarray(6, 11)),
    (e) => e instanceof PayloadAttemptError && /more than the 10 bytes it declared/.test(e.message),
  );
  assert.equal(partial.offset, 6);
});

Deno.test("mixed content that fails its hash is discarded and never resumed again", () => {
  const partial = new PartialContent();
  const wrong = content.slice();
  wrong[17] ^= 1;
  partial.begin("A", { hash, length, offset: 0 });
  partial.append("A", wrong.subarray(0, 100));
  partial.begin("B", { hash, length, offset: 100 });
  partial.append("B", content.subarray(100));
  const verified = partial.verify();
  assert.deepEqual(verified, {
    ok: false,
    hash: contentHash(wrong),
    declared: contentHash(content),
    sources: 2,
  });
  assert.equal(partial.offset, 0);
  assert.equal(partial.sources.size, 0, "verify discarded it");
  partial.begin("B", { hash, length, offset: 0 });
  partial.append("B", content.subarray(0, 5000)); // then B stalls
  assert.equal(partial.offset, 0, "the next attempt starts from 0 again");
  partial.begin("C", { hash, length, offset: 0 });
  partial.append("C", content);
  assert.equal(partial.finish().hash, contentHash(content));
  assert.deepEqual([...partial.sources], ["C"]);
  assert.equal(partial.resumes, 0);
});

Deno.test("content from one source that fails its hash is discarded; resuming stays on", () => {
  const partial = new PartialContent();
  const wrong = content.slice();
  wrong[3] ^= 1;
  partial.begin("A", { hash, length, offset: 0 });
  partial.append("A", wrong);
  assert.equal(partial.verify().ok, false);
  partial.begin("B", { hash, length, offset: 0 });
  partial.append("B", content.subarray(0, 10));
  assert.equal(partial.offset, 10, "the next attempt may go on from B's bytes");
  partial.begin("C", { hash, length, offset: 10 });
  partial.append("C", content.subarray(10));
  const verified = partial.verify();
  assert.ok(verified.ok);
  assert.deepEqual(verified.bytes, content);
  assert.equal(verified.hash, contentHash(content));
});

Deno.test("a reader writes into unfilled() in place and commits what it wrote", () => {
  const partial = new PartialContent();
  assert.throws(() => partial.unfilled(), /unfilled before begin/);
  partial.begin("A", { hash, length, offset: 0 });
  partial.append("A", content.subarray(0, 1000)); // in-band from A
  partial.begin("A/bulk", { hash, length, offset: 1000 }); // the rest over A's bulk connection
  for (let at = 1000; at < length;) {
    const room = partial.unfilled();
    assert.equal(room.length, length - at);
    const n = Math.min(room.length, 700_000); // a socket read of up to 700 kB
    room.set(content.subarray(at, at + n));
    partial.commit("A/bulk", n);
    at += n;
  }
  assert.equal(partial.unfilled().length, 0);
  assert.throws(() => partial.commit("A/bulk", 1), /cannot commit 1 bytes: 0 of 3145733/);
  assert.deepEqual([...partial.sources], ["A", "A/bulk"]);
  const verified = partial.verify();
  assert.ok(verified.ok);
  assert.deepEqual(verified.bytes, content);
});

Deno.test("check says whether an offer goes with the prefix, changing nothing", () => {
  const partial = new PartialContent();
  partial.check("A", { hash, length: 99, offset: 0 }); // nothing held: any content goes
  partial.begin("A", { hash, length, offset: 0 });
  partial.append("A", content.subarray(0, 500));
  partial.check("B", { hash, length, offset: 500 });
  assert.throws(() => partial.check("B", { hash, length: 7, offset: 500 }), PrefixConflict);
  assert.throws(
    () => partial.check("B", { hash, length, offset: 0 }),
    /serves from byte 0, we asked from 500/,
  );
  assert.equal(partial.offset, 500);
  assert.equal(partial.resumes, 0, "a check is not a resume");
  assert.deepEqual([...partial.sources], ["A"]);
});
