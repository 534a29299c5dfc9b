import assert from "node:assert/strict";
import { BitReader, BitStreamEndError, BitWriter } from "./bits.ts";

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
  const reader = new BitReader(out.finish());
  for (const [n, [value, width]] of fields.entries()) {
    assert.equal(reader.read(width), value, `field ${n} (width ${width})`);
  }
  assert.ok(reader.restIsZero());
});

Deno.test("a read past the last byte throws BitStreamEndError, also near the end", () => {
  const reader = new BitReader(new Uint8Array([0xff, 0x0f]));
  assert.equal(reader.read(3), 7);
  assert.equal(reader.read(9), 0x1ff);
  assert.throws(() => reader.read(5), BitStreamEndError);
  assert.equal(reader.read(4), 0);
});
