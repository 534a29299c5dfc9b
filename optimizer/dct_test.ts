import assert from "node:assert/strict";
import fc from "fast-check";
import { dctMatrix, decode, encode } from "./dct.ts";
import { chunkLayout } from "./layout.ts";

function close(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number) {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(
      Math.abs(actual[i] - expected[i]) <= tol,
      `element ${i}: expected ${expected[i]}, found ${actual[i]}`,
    );
  }
}

Deno.test("DCT basis of size 4 matches Psyche's test_dct / test_idct", () => {
  const c = dctMatrix(4);
  // F = Cᵀ: first row of F is the first column of C.
  close([c[0], c[4], c[8], c[12]], [0.5, 0.6533, 0.5, 0.2706], 1e-4);
  // B = C (test_idct rows).
  close(c.subarray(4, 8), [0.6533, 0.2706, -0.2706, -0.6533], 1e-4);
  close(c.subarray(12, 16), [0.2706, -0.6533, 0.6533, -0.2706], 1e-4);
});

Deno.test("DCT basis is orthonormal for every size up to 70", () => {
  for (let n = 1; n <= 70; n++) {
    const c = dctMatrix(n);
    for (let a = 0; a < n; a++) {
      for (let b = 0; b < n; b++) {
        let s = 0;
        for (let i = 0; i < n; i++) s += c[a * n + i] * c[b * n + i];
        assert.ok(Math.abs(s - (a === b ? 1 : 0)) < 1e-12, `n=${n} rows ${a},${b}: ${s}`);
      }
    }
  }
});

Deno.test("encode of arange(8) matches Psyche's test_encode_1d", () => {
  const layout = chunkLayout("x", [8], { chunk: 8, topk: 8 });
  const x = Float32Array.from({ length: 8 }, (_, i) => i);
  close(encode(layout, x), [9.8995, -6.4423, 0, -0.67345, 0, -0.2009, 0, -0.0507], 1e-4);
});

Deno.test("2-D encode is C X Cᵀ per block, chunk-major", () => {
  // 4×6 with chunk 2 and 3: 2×2 blocks of 2×3.
  const layout = chunkLayout("w", [4, 6], { chunk: 3, topk: 1 });
  assert.deepEqual(layout.encodedShape, [2, 2, 2, 3]);
  const x = Float32Array.from({ length: 24 }, (_, i) => Math.sin(i * 1.7));
  const y = encode(layout, x);
  const c2 = dctMatrix(2), c3 = dctMatrix(3);
  for (let bi = 0; bi < 2; bi++) {
    for (let bj = 0; bj < 2; bj++) {
      for (let u = 0; u < 2; u++) {
        for (let v = 0; v < 3; v++) {
          let s = 0;
          for (let i = 0; i < 2; i++) {
            for (let j = 0; j < 3; j++) {
              s += c2[u * 2 + i] * x[(bi * 2 + i) * 6 + bj * 3 + j] * c3[v * 3 + j];
            }
          }
          const got = y[(bi * 2 + bj) * 6 + u * 3 + v];
          assert.ok(Math.abs(got - s) < 1e-6, `block ${bi},${bj} (${u},${v})`);
        }
      }
    }
  }
});

Deno.test("decode inverts encode for 1-D and 2-D shapes", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: 1, max: 16 }),
      fc.boolean(),
      (a, b, chunk, twoD) => {
        const layout = chunkLayout("p", twoD ? [a, b] : [a], { chunk, topk: 1 });
        const x = Float32Array.from({ length: layout.size }, (_, i) => Math.cos(i * 0.37) * 3);
        const back = decode(layout, encode(layout, x));
        close(back, x, 1e-5);
      },
    ),
    { numRuns: 60 },
  );
});

Deno.test("encode rejects a tensor of the wrong length, naming the parameter", () => {
  const layout = chunkLayout("model.norm.weight", [8], { chunk: 4, topk: 1 });
  assert.throws(() => encode(layout, new Float32Array(7)), /model\.norm\.weight.*expected 8.*7/);
});
