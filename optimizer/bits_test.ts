import assert from "node:assert/strict";
import { BitReader, bitsAt, BitStreamEndError, bitsZeroFrom, BitWriter } from "./bits.ts";

Deno.test("bit fields of every width 0..32 read back at every bit offset", () => {
  let seed = 7;
  const rand = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
  const fields: [number, number][] = [];
  for (let n = 0; n < 2000; n++) {
    const width = n % 33;
    fields.push([width === 0 ? 0 : rand() % 2 ** width, width]);
  }
  const out = new BitWriter();
  for (const [value, width] of fields) out.write(value, width);
  const bytes = out.finish();
  const reader = new BitReader(bytes);
  const padded = new Uint8Array(bytes.length + 3);
  padded.set(bytes);
  let at = 0;
  for (const [n, [value, width]] of fields.entries()) {
    assert.equal(reader.read(width), value, `field ${n} (width ${width})`);
    if (width <= 24) {
      assert.equal(bitsAt(padded, at, width), value, `bitsAt: field ${n} (width ${width})`);
    }
    at += width;
  }
  assert.ok(reader.restIsZero());
});

Deno.test("BitWriter.set sets a bit already written, and only such a bit", () => {
  const out = new BitWriter();
  out.zeros(11);
  out.set(0);
  out.set(10);
  assert.deepEqual([...out.finish()], [0x01, 0x04]);
  assert.throws(() => out.set(11), RangeError);
});

Deno.test("bitsZeroFrom looks at every bit from the given one on", () => {
  const bytes = new Uint8Array([0xff, 0x10, 0x00]);
  assert.ok(!bitsZeroFrom(bytes, 0));
  assert.ok(!bitsZeroFrom(bytes, 12));
  assert.ok(bitsZeroFrom(bytes, 13));
  assert.ok(bitsZeroFrom(bytes, 24));
  assert.ok(bitsZeroFrom(bytes, 99));
  assert.ok(!bitsZeroFrom(new Uint8Array([0, 0, 0x80]), 9));
});

Deno.test("a read past the last byte throws BitStreamEndError, also near the end", () => {
  const reader = new BitReader(new Uint8Array([0xff, 0x0f]));
  assert.equal(reader.read(3), 7);
  assert.equal(reader.read(9), 0x1ff);
  assert.throws(() => reader.read(5), BitStreamEndError);
  assert.equal(reader.read(4), 0);
});
