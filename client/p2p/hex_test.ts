import assert from "node:assert/strict";
import fc from "fast-check";
import { bytesToHex, hexToBytes } from "./hex.ts";

Deno.test("hex round-trips", () => {
  assert.equal(bytesToHex(Uint8Array.of(0, 15, 16, 255)), "000f10ff");
  fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
    assert.deepEqual(hexToBytes(bytesToHex(bytes), bytes.length, "x"), bytes);
  }));
});

Deno.test("bad hex is refused with what was expected and found", () => {
  assert.throws(
    () => hexToBytes("abc", 2, "topic"),
    /topic must be 4 lowercase hex characters, found "abc"/,
  );
  assert.throws(() => hexToBytes("ABCD", 2, "topic"), /found "ABCD"/);
  assert.throws(() => hexToBytes("zz00", 2, "topic"), RangeError);
});
