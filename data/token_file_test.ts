import assert from "node:assert/strict";
import { DataError } from "./errors.ts";
import { isTokenFileName, npyLayout, rawLayout, sortByteWise } from "./token_file.ts";

Deno.test("rawLayout rejects a truncated file, naming the trailing offset", () => {
  assert.deepEqual(rawLayout("a.ds", 10, "TwoBytes"), {
    name: "a.ds",
    dataOffset: 0,
    dataBytes: 10,
    dtype: "u16",
  });
  assert.throws(() => rawLayout("b.bin", 11, "TwoBytes"), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.equal(e.offset, 10);
    assert.match(e.message, /b\.bin: 11 bytes is not a multiple of the 2-byte token size/);
    return true;
  });
  assert.throws(() => rawLayout("c.ds", 10, "FourBytes"), /2 trailing bytes at offset 8/);
});

Deno.test("npyLayout checks the dtype width and that the data fills the file", () => {
  const header = { dataOffset: 128, dtype: "u16" as const, length: 10 };
  assert.equal(npyLayout("a.npy", 148, header, "TwoBytes").dataBytes, 20);
  assert.throws(() => npyLayout("a.npy", 148, header, "FourBytes"), /token_size is FourBytes/);
  assert.throws(() => npyLayout("a.npy", 147, header, "TwoBytes"), /found 19; the file truncated/);
  assert.throws(() => npyLayout("a.npy", 150, header, "TwoBytes"), /has trailing bytes/);
});

Deno.test("token files are recognised by extension and sorted by UTF-8 bytes", () => {
  assert.ok(isTokenFileName("x.ds") && isTokenFileName("x.bin") && isTokenFileName("x.npy"));
  assert.ok(!isTokenFileName("x.txt") && !isTokenFileName("ds"));
  // JavaScript's default sort compares UTF-16 code units, which puts U+1F600 (surrogates
  // D83D DE00) before U+E000; by UTF-8 bytes (F0... vs EE...) it comes after.
  assert.deepEqual(sortByteWise(["b", "B", "a", "\u{1F600}", "\uE000", "a0"]), [
    "B",
    "a",
    "a0",
    "b",
    "\uE000",
    "\u{1F600}",
  ]);
});
