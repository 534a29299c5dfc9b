import assert from "node:assert/strict";
import fc from "fast-check";
import { concatBytes, equalBytes, fromHex, hexToBytes, toHex } from "./bytes.ts";

Deno.test("hex round trip and errors", () => {
  assert.equal(toHex(Uint8Array.of(0, 15, 255)), "000fff");
  assert.deepEqual(fromHex("000fFF"), Uint8Array.of(0, 15, 255));
  assert.throws(() => fromHex("abc"), /odd length 3/);
  assert.throws(() => fromHex("zz00"), /non-hex character at offset 0: "zz"/);
  assert.throws(() => fromHex("00zz"), /offset 2/);
});

Deno.test("toHex and fromHex round-trip any bytes", () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
    assert.deepEqual(fromHex(toHex(bytes)), bytes);
    assert.deepEqual(hexToBytes(toHex(bytes), bytes.length, "x"), bytes);
  }));
});

Deno.test("hexToBytes takes the canonical spelling of one length only", () => {
  assert.deepEqual(hexToBytes("000f10ff", 4, "x"), Uint8Array.of(0, 15, 16, 255));
  assert.throws(
    () => hexToBytes("abc", 2, "topic"),
    /topic must be 4 lowercase hex characters, found "abc"/,
  );
  assert.throws(() => hexToBytes("ABCD", 2, "topic"), /found "ABCD"/);
  assert.throws(() => hexToBytes("zz00", 2, "topic"), RangeError);
});

Deno.test("equalBytes compares length and every byte", () => {
  assert.ok(equalBytes(Uint8Array.of(1, 2), Uint8Array.of(1, 2)));
  assert.ok(equalBytes(new Uint8Array(0), new Uint8Array(0)));
  assert.ok(!equalBytes(Uint8Array.of(1, 2), Uint8Array.of(1, 3)));
  assert.ok(!equalBytes(Uint8Array.of(1, 2), Uint8Array.of(1, 2, 0)));
  fc.assert(fc.property(fc.uint8Array(), fc.uint8Array(), (a, b) => {
    assert.equal(equalBytes(a, b), toHex(a) === toHex(b) && a.length === b.length);
  }));
});

Deno.test("concatBytes puts parts end to end, empty ones included", () => {
  const joined = concatBytes([new Uint8Array([1, 2]), new Uint8Array(0), new Uint8Array([3])]);
  assert.deepEqual([...joined], [1, 2, 3]);
  assert.equal(concatBytes([]).length, 0);
});
