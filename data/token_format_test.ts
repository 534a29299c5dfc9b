import assert from "node:assert/strict";
import fc from "fast-check";
import { DataError } from "./errors.ts";
import { tokenBytes } from "./testing/fixtures.ts";
import { decodeTokens, type TokenDtype } from "./token_format.ts";

const src = { file: "f.ds", byteOffset: 100 };

Deno.test("decodeTokens reads little-endian u16, u32 and i32", () => {
  const out = new Uint32Array(3);
  decodeTokens(new Uint8Array([1, 2, 0xff, 0xff, 0, 0]), "u16", out, 0, src);
  assert.deepEqual(Array.from(out), [0x0201, 0xffff, 0]);
  decodeTokens(new Uint8Array([1, 0, 0, 0x80]), "u32", out, 2, src);
  assert.equal(out[2], 0x8000_0001);
  decodeTokens(new Uint8Array([5, 0, 0, 0]), "i32", out, 1, src);
  assert.equal(out[1], 5);
});

Deno.test("decodeTokens names the file and byte offset of a bad token", () => {
  const out = new Uint32Array(3);
  assert.throws(
    () => decodeTokens(tokenBytes([1, 31999, 32000], 2), "u16", out, 0, src, 32000),
    (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.equal(e.offset, 104);
      assert.match(e.message, /f\.ds: token id >= vocab size 32000 \(32000\) at byte offset 104/);
      return true;
    },
  );
  assert.throws(
    () => decodeTokens(new Uint8Array([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]), "i32", out, 0, src),
    /negative token id \(-1\) at byte offset 104/,
  );
});

Deno.test("decodeTokens gives the same result aligned and unaligned", () => {
  fc.assert(
    fc.property(
      fc.constantFrom<TokenDtype>("u16", "u32", "i32"),
      fc.array(fc.integer({ min: 0, max: 60000 }), { maxLength: 50 }),
      (dtype, tokens) => {
        const width = dtype === "u16" ? 2 : 4;
        const bytes = tokenBytes(tokens, width);
        const shifted = new Uint8Array(bytes.length + 1);
        shifted.set(bytes, 1);
        const a = new Uint32Array(tokens.length);
        const b = new Uint32Array(tokens.length);
        decodeTokens(bytes, dtype, a, 0, src);
        decodeTokens(shifted.subarray(1), dtype, b, 0, src);
        assert.deepEqual(Array.from(a), tokens);
        assert.deepEqual(b, a);
      },
    ),
  );
});
