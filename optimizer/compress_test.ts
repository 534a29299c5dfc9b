import assert from "node:assert/strict";
import fc from "fast-check";
import { magnitudeKey, quantizeSigns, scatterMean, signBit, topk } from "./compress.ts";
import { chunkLayout } from "./layout.ts";

Deno.test("topk over 4 chunks of 4 matches Psyche's test_compress_2d", () => {
  // Psyche compresses a (4, 4) tensor as 4 chunks of totalk 4 (rows), k = 2.
  const layout = chunkLayout("r", [16], { chunk: 4, topk: 2 });
  const r = Float32Array.from([
    0.1911,
    0.4076,
    0.1649,
    0.8059,
    0.2803,
    0.9381,
    0.9071,
    0.2573,
    0.4070,
    0.5765,
    0.7226,
    0.9486,
    0.0737,
    0.7378,
    0.1898,
    0.2990,
  ]); // prettier-ignore
  const { indices, values } = topk(layout, r);
  assert.deepEqual([...indices], [3, 1, 1, 2, 3, 2, 1, 3]);
  assert.deepEqual([...values], [...Float32Array.from([
    0.8059,
    0.4076,
    0.9381,
    0.9071,
    0.9486,
    0.7226,
    0.7378,
    0.2990,
  ])]); // prettier-ignore
});

Deno.test("topk of one 1-D chunk matches Psyche's test_compress_1d", () => {
  const layout = chunkLayout("r", [8], { chunk: 8, topk: 2 });
  const r = Float32Array.from([0.5223, 0.9625, 0.5487, 0.2152, 0.2161, 0.0363, 0.4944, 0.0974]);
  assert.deepEqual([...topk(layout, r).indices], [1, 2]);
});

Deno.test("topk ranks by magnitude, ties to the lower index, NaN highest", () => {
  const layout = chunkLayout("t", [6], { chunk: 6, topk: 3 });
  assert.deepEqual([...topk(layout, Float32Array.from([1, -2, 2, -0, 2, 0.5])).indices], [1, 2, 4]);
  assert.deepEqual([...topk(layout, Float32Array.from([0, 0, 0, 0, 0, 0])).indices], [0, 1, 2]);
  const withNan = Float32Array.from([1, -Infinity, NaN, 3, 2, 0]);
  assert.deepEqual([...topk(layout, withNan).indices], [2, 1, 3]);
  // k is clamped to the chunk size.
  const small = chunkLayout("s", [2], { chunk: 2, topk: 5 });
  assert.equal(small.k, 2);
  assert.deepEqual([...topk(small, Float32Array.from([1, 5])).indices], [1, 0]);
});

Deno.test("topk agrees with a sort-based reference (property)", () => {
  fc.assert(
    fc.property(
      fc.array(fc.float({ noDefaultInfinity: false }), { minLength: 12, maxLength: 12 }),
      fc.integer({ min: 1, max: 6 }),
      (xs, k) => {
        const layout = chunkLayout("p", [12], { chunk: 6, topk: k });
        const x = Float32Array.from(xs);
        const got = topk(layout, x);
        for (let c = 0; c < 2; c++) {
          const order = [0, 1, 2, 3, 4, 5].sort((a, b) =>
            magnitudeKey(x[c * 6 + b]) - magnitudeKey(x[c * 6 + a]) || a - b
          );
          assert.deepEqual([...got.indices.subarray(c * k, c * k + k)], order.slice(0, k));
        }
      },
    ),
  );
});

Deno.test("sign quantization: +0 and +inf positive; -0, -inf negative; NaN by its sign bit", () => {
  const negNan = new Float32Array(new Uint32Array([0xffc00000]).buffer)[0];
  const posNan = new Float32Array(new Uint32Array([0x7fc00000]).buffer)[0];
  const input = Float32Array.from([0, -0, Infinity, -Infinity, posNan, negNan, 3, -1e-30]);
  assert.deepEqual([...quantizeSigns(input)], [1, -1, 1, -1, 1, -1, 1, -1]);
  assert.deepEqual([...input].map(signBit), [false, true, false, true, false, true, false, true]);
});

Deno.test("scatterMean averages coefficients chosen by several results", () => {
  const layout = chunkLayout("p", [8], { chunk: 4, topk: 2 });
  const a = { indices: Uint32Array.from([0, 3, 1, 2]), values: Float32Array.from([1, -1, 2, 4]) };
  const b = { indices: Uint32Array.from([3, 0, 2, 0]), values: Float32Array.from([1, 1, 8, -6]) };
  assert.deepEqual([...scatterMean(layout, [a, b])], [1, 0, 0, 0, -6, 2, 6, 0]);
  const bad = { indices: Uint32Array.from([0, 4, 1, 2]), values: new Float32Array(4) };
  assert.throws(() => scatterMean(layout, [bad]), /chunk 0 index 4 >= totalk 4/);
});
