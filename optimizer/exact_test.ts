import assert from "node:assert/strict";
import fc from "fast-check";
import { scatterMean, type SparseParam } from "./compress.ts";
import { dctMatrix, decode } from "./dct.ts";
import {
  aggregateFixed,
  BASIS_BITS,
  ceilLog2,
  COEFF_BITS,
  decodeFixed,
  dequantize,
  fixedBasis,
  fixedErrorBound,
  updateSigns,
} from "./exact.ts";
import { type ChunkLayout, chunkLayout, MAX_COMPRESSION_CHUNK } from "./layout.ts";
import { aggregateReference } from "./testing/aggregate_reference.ts";

Deno.test("fixed basis tables exist (no near-ties) for every chunk length up to the maximum", () => {
  for (let n = 1; n <= MAX_COMPRESSION_CHUNK; n++) {
    const q = fixedBasis(n);
    const c = dctMatrix(n);
    for (let i = 0; i < q.length; i++) {
      assert.ok(Math.abs(q[i] - c[i] * 2 ** BASIS_BITS) <= 0.5, `n=${n} entry ${i}`);
    }
  }
});

Deno.test("ceilLog2 reads the exponent exactly", () => {
  assert.equal(ceilLog2(1), 0);
  assert.equal(ceilLog2(0.75), 0);
  assert.equal(ceilLog2(0.5), -1);
  assert.equal(ceilLog2(3), 2);
  assert.equal(ceilLog2(2 ** -1070), -1070);
  assert.equal(ceilLog2(3 * 2 ** -1074), -1072);
  assert.throws(() => ceilLog2(0), RangeError);
});

function randomResult(layout: ChunkLayout, seed: number, oneBit: boolean): SparseParam {
  let s = seed >>> 0;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const indices = new Uint32Array(layout.chunks * layout.k);
  const values = new Float32Array(layout.chunks * layout.k);
  for (let c = 0; c < layout.chunks; c++) {
    const pool = Array.from({ length: layout.totalk }, (_, i) => i);
    for (let r = 0; r < layout.k; r++) {
      const pick = r + Math.floor(next() * (pool.length - r));
      [pool[r], pool[pick]] = [pool[pick], pool[r]];
      indices[c * layout.k + r] = pool[r];
      values[c * layout.k + r] = oneBit ? (next() < 0.5 ? -1 : 1) : (next() - 0.5) * 0.01;
    }
  }
  return { indices, values };
}

/** The real-valued decode of the f64 means (what the fixed point approximates). */
function realDecode(layout: ChunkLayout, results: SparseParam[]): Float64Array {
  const sum = new Float64Array(layout.size), cnt = new Float64Array(layout.size);
  for (const r of results) {
    for (let e = 0; e < r.indices.length; e++) {
      const c = Math.floor(e / layout.k);
      sum[c * layout.totalk + r.indices[e]] += r.values[e];
      cnt[c * layout.totalk + r.indices[e]]++;
    }
  }
  const c1 = dctMatrix(layout.n1), c2 = dctMatrix(layout.n2);
  const b = layout.shape.length === 2 ? layout.shape[1] : 1;
  const out = new Float64Array(layout.size);
  for (let c = 0; c < layout.chunks; c++) {
    const r0 = Math.floor(c / layout.colChunks) * layout.n1;
    const q0 = (c % layout.colChunks) * layout.n2;
    for (let t = 0; t < layout.totalk; t++) {
      if (!cnt[c * layout.totalk + t]) continue;
      const m = sum[c * layout.totalk + t] / cnt[c * layout.totalk + t];
      const u = Math.floor(t / layout.n2), v = t % layout.n2;
      for (let i = 0; i < layout.n1; i++) {
        for (let j = 0; j < layout.n2; j++) {
          out[(r0 + i) * b + q0 + j] += m * c1[u * layout.n1 + i] * c2[v * layout.n2 + j];
        }
      }
    }
  }
  return out;
}

Deno.test("aggregateFixed: means, scaling to 2^15 and canonical index order", () => {
  const layout = chunkLayout("p", [8], { chunk: 4, topk: 2 });
  const a = { indices: Uint32Array.from([3, 0, 1, 2]), values: Float32Array.from([1, -1, 1, 1]) };
  const b = { indices: Uint32Array.from([0, 3, 1, 0]), values: Float32Array.from([1, 1, -1, -1]) };
  const c = { indices: Uint32Array.from([0, 1, 0, 1]), values: Float32Array.from([1, 1, -1, 1]) };
  const agg = aggregateFixed(layout, [a, b, c]);
  // Chunk 0: idx0 (−1+1+1)/3, idx1 +1, idx3 +1. Chunk 1: idx0 −1, idx1 (1−1+1)/3, idx2 +1.
  const third = Math.round(32768 / 3);
  assert.deepEqual([...agg.offsets], [0, 3, 6]);
  assert.deepEqual([...agg.indices], [0, 1, 3, 0, 1, 2]);
  assert.deepEqual([...agg.coeffs], [third, 32768, 32768, -32768, third, 32768]);
  assert.deepEqual([...agg.scaleExp], [0, 0]);
  // Opposite signs cancel: the coefficient is dropped; a lone small value sets the scale.
  const d = { indices: Uint32Array.from([2, 1]), values: Float32Array.from([-1, 0.1]) };
  const e = { indices: Uint32Array.from([2, 3]), values: Float32Array.from([1, 0.3]) };
  const agg2 = aggregateFixed(chunkLayout("q", [8], { chunk: 4, topk: 1 }), [d, e]);
  assert.deepEqual([...agg2.offsets], [0, 0, 2]);
  assert.deepEqual([...agg2.scaleExp], [0, -1]);
  assert.deepEqual([...agg2.coeffs], [
    Math.round((Math.fround(0.1) / 0.5) * 32768),
    Math.round((Math.fround(0.3) / 0.5) * 32768),
  ]);
});

Deno.test("exact sign agrees with the real decode wherever the error bound allows", () => {
  for (
    const [shape, oneBit, peers] of [[[64, 96], true, 3], [[48, 40], false, 4], [
      [200],
      true,
      2,
    ]] as const
  ) {
    const layout = chunkLayout("p", shape, { chunk: 16, topk: 4 });
    const results = Array.from(
      { length: peers },
      (_, p) => randomResult(layout, p * 77 + 5, oneBit),
    );
    const agg = aggregateFixed(layout, results);
    const exact = decodeFixed(layout, agg);
    const approx = dequantize(layout, agg);
    const real = realDecode(layout, results);
    const signs = updateSigns(layout, agg);
    const b = shape.length === 2 ? shape[1] : 1;
    let checked = 0;
    for (let idx = 0; idx < real.length; idx++) {
      assert.ok(Number.isInteger(exact[idx]) && Math.abs(exact[idx]) < 2 ** 52);
      const r = Math.floor(idx / b), col = idx % b;
      const c = Math.floor(r / layout.n1) * layout.colChunks + Math.floor(col / layout.n2);
      const bound = fixedErrorBound(agg.offsets[c + 1] - agg.offsets[c], agg.scaleExp[c]);
      assert.ok(Math.abs(approx[idx] - real[idx]) <= bound, `element ${idx}`);
      if (Math.abs(real[idx]) > bound) {
        assert.equal(signs[idx], Math.sign(real[idx]), `sign at ${idx}`);
        checked++;
      }
    }
    assert.ok(
      checked > real.length * 0.9,
      `only ${checked} of ${real.length} signs were decidable`,
    );
  }
});

Deno.test("1-bit aggregation is identical under every permutation of 4 results", () => {
  const layout = chunkLayout("w", [32, 48], { chunk: 16, topk: 8 });
  {
    const results = [0, 1, 2, 3].map((p) => randomResult(layout, 1000 + p, true));
    const ref = aggregateFixed(layout, results);
    const refSigns = updateSigns(layout, ref);
    const perms: number[][] = [];
    const permute = (xs: number[], acc: number[]) => {
      if (!xs.length) perms.push(acc);
      xs.forEach((x, i) => permute([...xs.slice(0, i), ...xs.slice(i + 1)], [...acc, x]));
    };
    permute([0, 1, 2, 3], []);
    for (const perm of perms) {
      const agg = aggregateFixed(layout, perm.map((i) => results[i]));
      // ±1 sums are exact integers: any arrival order gives the same fixed-point coefficients.
      assert.deepEqual(agg, ref, `permutation ${perm}`);
      assert.deepEqual(updateSigns(layout, agg), refSigns);
    }
  }
});

Deno.test("decodeFixed stays exact at the worst-case magnitude bound", () => {
  // Worst case: every coefficient of a chunk chosen with q = ±2^15, signs matching the basis
  // at element (0,0). For n = 256 the sum must stay below 2^53 (f64-exact, fits the WGSL i64).
  const worstAt = (n: number) => {
    const q = fixedBasis(n);
    let worst = 0;
    for (let t = 0; t < n * n; t++) {
      worst += 2 ** COEFF_BITS * Math.abs(q[Math.floor(t / n) * n] * q[(t % n) * n]);
    }
    return worst;
  };
  assert.ok(worstAt(256) < 2 ** 51.01, `worst ${Math.log2(worstAt(256))}`);
  // And decodeFixed reproduces that extreme exactly on a 64×64 chunk.
  const n = 64;
  const q = fixedBasis(n);
  const layout = chunkLayout("big", [n, n], { chunk: n, topk: 1 });
  const indices = new Uint32Array(n * n).map((_, i) => i);
  const coeffs = new Int32Array(n * n).map((_, t) =>
    Math.sign(q[Math.floor(t / n) * n] * q[(t % n) * n]) * 2 ** COEFF_BITS
  );
  const agg = {
    offsets: Uint32Array.from([0, n * n]),
    indices,
    coeffs,
    scaleExp: new Int32Array(1),
  };
  assert.equal(decodeFixed(layout, agg)[0], worstAt(n));
});

Deno.test("aggregateFixed agrees with the plain reference bit for bit", () => {
  // Results as decoded (ascending, distinct) or as given (any order, repeats), with ±1 or any
  // finite f32 values (±0, subnormals, the largest), sometimes a bad entry.
  const f32 = fc.oneof(
    fc.constantFrom(1, -1, 0, -0, 2 ** -149, -(2 ** -140), 3.4e38, -3.4e38),
    // Beside a largest |mean| of 1, these scale to ±0.5 and ±1.5: ties, rounded away from 0.
    fc.constantFrom(2 ** -16, -(2 ** -16), 3 * 2 ** -16, -3 * 2 ** -16),
    fc.float({ noNaN: true, noDefaultInfinity: true }),
    fc.float({ min: Math.fround(-1e-3), max: Math.fround(1e-3), noNaN: true }),
  );
  const scenario = fc.record({
    shape: fc.oneof(
      fc.tuple(fc.integer({ min: 1, max: 40 })),
      fc.tuple(fc.integer({ min: 1, max: 24 }), fc.integer({ min: 1, max: 24 })),
    ),
    chunk: fc.integer({ min: 1, max: 16 }),
    topk: fc.integer({ min: 1, max: 20 }),
    peers: fc.integer({ min: 1, max: 9 }),
    sorted: fc.boolean(),
    oneBit: fc.boolean(),
    seed: fc.nat(),
    values: fc.array(f32, { minLength: 1, maxLength: 50 }),
    bad: fc.option(fc.tuple(fc.nat(), fc.constantFrom("index", "value", "length"))),
  });
  fc.assert(
    fc.property(scenario, (s) => {
      const layout = chunkLayout("w", s.shape, { chunk: s.chunk, topk: s.topk });
      const { chunks, k, totalk } = layout;
      let r = s.seed;
      const next = (n: number) => (r = (Math.imul(r, 1664525) + 1013904223) >>> 0) % n;
      const results: SparseParam[] = Array.from({ length: s.peers }, () => {
        const indices = new Uint32Array(chunks * k);
        const values = new Float32Array(chunks * k);
        for (let c = 0; c < chunks; c++) {
          if (s.sorted) {
            const picked = new Set<number>();
            while (picked.size < k) picked.add(next(totalk));
            indices.set([...picked].sort((a, b) => a - b), c * k);
          } else {
            for (let e = 0; e < k; e++) indices[c * k + e] = next(totalk);
          }
          for (let e = 0; e < k; e++) {
            values[c * k + e] = s.oneBit ? (next(2) ? 1 : -1) : s.values[next(s.values.length)];
          }
        }
        return { indices, values };
      });
      if (s.bad) {
        const [at, what] = s.bad;
        const victim = results[at % results.length];
        const e = at % (chunks * k);
        if (what === "index") victim.indices[e] = totalk + (at % 3);
        if (what === "value") victim.values[e] = at % 2 ? NaN : -Infinity;
        if (what === "length") results.push({ indices: new Uint32Array(1), values: victim.values });
      }
      let expected;
      try {
        expected = aggregateReference(layout, results);
      } catch (e) {
        assert.ok(e instanceof RangeError);
        assert.throws(() => aggregateFixed(layout, results), RangeError);
        return;
      }
      assert.deepEqual(aggregateFixed(layout, results), expected);
    }),
    { numRuns: 1000 },
  );
});

Deno.test("aggregateFixed rounds halves away from zero", () => {
  // Beside a largest mean of 1 (scale 2^0), v = m · 2^15: ±2^-16 → ±0.5, ±3·2^-16 → ±1.5.
  const layout = chunkLayout("p", [4], { chunk: 4, topk: 2 });
  const coeff = (m: number) =>
    aggregateFixed(layout, [{
      indices: Uint32Array.from([0, 1]),
      values: Float32Array.from([1, m]),
    }]).coeffs[1];
  assert.deepEqual([2 ** -16, -(2 ** -16), 3 * 2 ** -16, -3 * 2 ** -16].map(coeff), [1, -1, 2, -2]);
});

Deno.test("aggregateFixed rejects non-finite values and bad indices", () => {
  const layout = chunkLayout("p", [4], { chunk: 4, topk: 1 });
  const nan = { indices: Uint32Array.from([0]), values: Float32Array.from([NaN]) };
  assert.throws(() => aggregateFixed(layout, [nan]), /value NaN/);
  const big = { indices: Uint32Array.from([4]), values: Float32Array.from([1]) };
  assert.throws(() => aggregateFixed(layout, [big]), /index 4 >= totalk 4/);
  fc.assert(fc.property(fc.integer({ min: 1, max: 3 }), (n) => {
    const r = { indices: new Uint32Array(n + 1), values: new Float32Array(n + 1) };
    assert.throws(() => aggregateFixed(layout, [r]), /expected 1 each/);
  }));
});

Deno.test("the exact update differs from Psyche's float update on under 0.1% of elements", () => {
  const layout = chunkLayout("w", [128, 384], { chunk: 64, topk: 8 });
  for (const oneBit of [true, false]) {
    const results = [0, 1, 2, 3].map((p) => randomResult(layout, 500 + p, oneBit));
    const exact = updateSigns(layout, aggregateFixed(layout, results));
    const float = decode(layout, scatterMean(layout, results));
    let differ = 0;
    for (let i = 0; i < exact.length; i++) if (exact[i] !== Math.sign(float[i])) differ++;
    assert.ok(differ < exact.length * 1e-3, `${differ} of ${exact.length} differ`);
  }
});
