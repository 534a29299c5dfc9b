import assert from "node:assert/strict";
import { sha256, u32be, u32le, u64be, u64le } from "./hash.ts";
import { toHex } from "../../common/mod.ts";

const text = (s: string) => new TextEncoder().encode(s);

Deno.test("sha256 of 'Hello, world!' matches the published vector", () => {
  assert.equal(
    toHex(sha256(text("Hello, world!"))),
    "315f5bdb76d078c43b8ac0064e4a0164612b1fce77c869345bfc94c75894edd3",
  );
});

Deno.test("sha256 of nothing is the FIPS 180-2 empty-message digest", () => {
  assert.equal(
    toHex(sha256()),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
});

Deno.test("sha256 hashes the concatenation of its parts", () => {
  assert.deepEqual(sha256(text("Hello, "), text("world!")), sha256(text("Hello, world!")));
  assert.deepEqual(sha256(text("abc"), new Uint8Array(0)), sha256(text("abc")));
});

Deno.test("sha256 returns an unshared 32-byte array", () => {
  const d = sha256(text("x"));
  assert.equal(d.length, 32);
  assert.equal(d.byteOffset, 0);
  assert.equal(d.buffer.byteLength, 32);
});

Deno.test("integer encoders put bytes in the stated order", () => {
  assert.deepEqual(u64le(0x0102030405060708n), Uint8Array.of(8, 7, 6, 5, 4, 3, 2, 1));
  assert.deepEqual(u64be(0x0102030405060708n), Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8));
  assert.deepEqual(u32le(0x01020304), Uint8Array.of(4, 3, 2, 1));
  assert.deepEqual(u32be(0x01020304), Uint8Array.of(1, 2, 3, 4));
  assert.deepEqual(u64le((1n << 64n) - 1n), new Uint8Array(8).fill(255));
});

Deno.test("integer encoders reject values outside their width", () => {
  assert.throws(() => u64le(-1n), RangeError);
  assert.throws(() => u64be(1n << 64n), RangeError);
  assert.throws(() => u32le(2 ** 32), RangeError);
  assert.throws(() => u32be(-1), RangeError);
  assert.throws(() => u32le(1.5), RangeError);
});
