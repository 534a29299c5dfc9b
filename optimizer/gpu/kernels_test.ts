import assert from "node:assert/strict";
import { assertClose, randomF32 } from "../../shaders/testing/kernels.ts";
import { topk } from "../compress.ts";
import { encode } from "../dct.ts";
import { fastEncodeErrorBound } from "../fast_dct.ts";
import { aggregateFixed, COEFF_BITS, decodeFixed, fixedBasis } from "../exact.ts";
import { type ChunkLayout, chunkLayout } from "../layout.ts";
import { packBasis16 } from "./chunk_wgsl.ts";
import { BasisTables, DistroKernels, type KernelParam } from "./kernels.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import { rowMaxKeys } from "./testing/row_max.ts";

const SHAPES: [number[], number, number][] = [
  [[96, 80], 16, 5], // 6×5 chunks of 16×16
  [[64, 48], 64, 8], // 64×48 single chunk
  [[30, 35], 8, 3], // chunks 6×7
  [[100], 26, 4], // 1-D, chunk 25
  [[7], 4, 2], // prime, chunk 1
  [[6, 12], 4, 2], // chunks 3×4: vec4 path with 2-row and 1-row blocking
  [[4, 64], 64, 8], // 4 coefficient rows per chunk, k = 8: the row-skipping top-k reads all
];

function setup(rt: GpuRuntime, layouts: ChunkLayout[]) {
  const basis = new BasisTables(rt, layouts.flatMap((l) => [l.n1, l.n2]), "test");
  const kernels = new DistroKernels(rt, basis);
  let entry = 0;
  const params: KernelParam[] = layouts.map((layout, index) => {
    const p = { layout, entry, index };
    entry += layout.chunks * layout.k;
    return p;
  });
  return { basis, kernels, params, entries: entry };
}

Deno.test("GPU blocked DCT matches the reference encode", async () => {
  using rt = await GpuRuntime.create();
  const layouts = SHAPES.map(([shape, chunk, topk], n) =>
    chunkLayout(`p${n}`, shape, { chunk, topk })
  );
  const { kernels, params } = setup(rt, layouts);
  for (const [n, p] of params.entries()) {
    const x = randomF32(10 + n, p.layout.size);
    const xb = rt.buffer("x", x);
    const t = rt.buffer("t", x.byteLength);
    const y = rt.buffer("y", x.byteLength);
    const step = rt.beginStep("dct");
    kernels.encodeDct(step.pass, kernels.spec(p), { x: xb, t, y });
    await step.submit();
    const want = encode(p.layout, x);
    assertClose(await rt.read(y), want, 2e-5 * Math.sqrt(p.layout.totalk), `dct ${p.layout.name}`);
  }
});

Deno.test("GPU fast DCT is within its rounding bound and top-k agrees up to near-ties", async () => {
  using rt = await GpuRuntime.create();
  const layouts = [
    chunkLayout("w", [128, 192], { chunk: 64, topk: 8 }), // 2×3 chunks of 64×64
    chunkLayout("v", [256], { chunk: 64, topk: 4 }), // 1-D: n2 = 1
    chunkLayout("u", [48, 32], { chunk: 16, topk: 3 }),
    chunkLayout("t", [128, 128], { chunk: 128, topk: 5 }), // the largest fast length
  ];
  const { kernels, params, entries } = setup(rt, layouts);
  const idx = rt.buffer("idx", entries * 4);
  for (const [n, p] of params.entries()) {
    const l = p.layout;
    const x = randomF32(40 + n, l.size, -1, 1);
    const y = rt.buffer("y", l.size * 4);
    const step = rt.beginStep("fast dct");
    const spec = kernels.spec(p);
    // Where it applies, the DCT writes row maxima and top-k skips rows by them.
    const rowMax = kernels.hasRowMax(spec) ? rt.buffer("row max", l.chunks * l.n1 * 4) : undefined;
    assert.equal(rowMax !== undefined, l.n2 % 4 === 0, l.name);
    const t = rt.buffer("t", l.size * 4);
    kernels.encodeDct(step.pass, spec, { x: rt.buffer("x", x), t, y, rowMax });
    kernels.encodeTopk(step.pass, spec, { y, idx, val: rt.buffer("val", entries * 4), rowMax });
    await step.submit();
    const got = await rt.read(y);
    if (rowMax) {
      assert.deepEqual(await rt.readU32(rowMax), rowMaxKeys(l, got), `row maxima of ${l.name}`);
    }
    const want = encode(l, x);
    const bound = fastEncodeErrorBound(l, x);
    // The reference is f64 rounded to f32: allow its half ulp on top of the GPU's bound.
    const tol = (i: number) => bound[i] + 2 ** -24 * Math.abs(want[i]);
    assertClose(got, want, tol, `fast dct ${l.name}`);
    const picked = await rt.readU32(idx);
    const ref = topk(l, want);
    for (let c = 0; c < l.chunks; c++) {
      const mine = new Set(picked.slice(p.entry + c * l.k, p.entry + (c + 1) * l.k));
      const theirs = new Set(ref.indices.slice(c * l.k, (c + 1) * l.k));
      const at = (t: number) => c * l.totalk + t;
      const onlyMine = [...mine].filter((t) => !theirs.has(t));
      const onlyTheirs = [...theirs].filter((t) => !mine.has(t));
      // A different pick is a near-tie: the magnitudes differ by less than both error bounds.
      for (const a of onlyMine) {
        for (const b of onlyTheirs) {
          const gap = Math.abs(want[at(b)]) - Math.abs(want[at(a)]);
          assert.ok(
            gap <= tol(at(a)) + tol(at(b)),
            `${l.name} chunk ${c}: picked ${a} over ${b}, magnitudes ${gap} apart`,
          );
        }
      }
    }
  }
});

Deno.test("GPU top-k is bit-identical to the reference on the same coefficients", async () => {
  using rt = await GpuRuntime.create();
  const layouts = SHAPES.map(([shape, chunk, topk], n) =>
    chunkLayout(`p${n}`, shape, { chunk, topk })
  );
  const { kernels, params, entries } = setup(rt, layouts);
  const idx = rt.buffer("idx", entries * 4);
  const val = rt.buffer("val", entries * 4);
  const inputs = params.map((p, n) => {
    const y = randomF32(20 + n, p.layout.size);
    // Ties, signed zeros, infinities and NaN: ranking reads magnitude bits exactly.
    for (let i = 0; i < y.length; i += 7) y[i] = 0.5;
    // Ties at the top, spread over the chunk: the kernel must keep the lower indices.
    for (let i = 3; i < y.length; i += 5) y[i] = i % 2 ? 2 : -2;
    y[1] = -0;
    y[2] = -Infinity;
    if (y.length > 5) y[5] = NaN;
    return y;
  });
  // Every kernel: the full scan, and the row-skipping scan where chunk rows are vec4-aligned.
  for (const skip of [false, true]) {
    const step = rt.beginStep("topk");
    const checked = params.filter((p) => !skip || p.layout.n2 % 4 === 0);
    for (const p of checked) {
      const y = inputs[p.index];
      const rowMax = skip ? rt.buffer("row max", rowMaxKeys(p.layout, y)) : undefined;
      kernels.encodeTopk(step.pass, kernels.spec(p), { y: rt.buffer("y", y), idx, val, rowMax });
    }
    await step.submit();
    const gotIdx = await rt.readU32(idx);
    const gotVal = await rt.read(val);
    for (const p of checked) {
      const want = topk(p.layout, inputs[p.index]);
      const span = [p.entry, p.entry + p.layout.chunks * p.layout.k];
      const what = `${p.layout.name}${skip ? " (row skipping)" : ""}`;
      assert.deepEqual(gotIdx.slice(span[0], span[1]), want.indices, `indices of ${what}`);
      assert.deepEqual(gotVal.slice(span[0], span[1]), want.values, `values of ${what}`);
    }
    if (skip) assert.ok(checked.length >= 3, "row-skipping shapes tested");
  }
});

/** The first parameter's top-k on the GPU (the row-skipping kernel with `rowSkipping`). */
async function gpuTopk(
  rt: GpuRuntime,
  setupOut: ReturnType<typeof setup>,
  y: Float32Array,
  rowSkipping: boolean,
): Promise<{ indices: Uint32Array; values: Float32Array }> {
  const { kernels, params, entries } = setupOut;
  const layout = params[0].layout;
  const idx = rt.buffer("idx", entries * 4);
  const val = rt.buffer("val", entries * 4);
  const step = rt.beginStep("topk");
  kernels.encodeTopk(step.pass, kernels.spec(params[0]), {
    y: rt.buffer("y", y),
    idx,
    val,
    rowMax: rowSkipping ? rt.buffer("row max", rowMaxKeys(layout, y)) : undefined,
  });
  await step.submit();
  return { indices: await rt.readU32(idx), values: await rt.read(val) };
}

Deno.test("row-skipping top-k picks winners spread over rows, ties to the lower index", async () => {
  using rt = await GpuRuntime.create();
  const layout = chunkLayout("w", [64, 128], { chunk: 64, topk: 8 }); // 2 chunks of 64×64
  const y = randomF32(77, layout.size, -1, 1);
  // Chunk 0: one huge value per row in rows 3, 9, 20, 21, 40, 50, 61, 63 (every winner is a row
  // maximum). Chunk 1: nine equal maxima in nine rows, and one row holding two of the top
  // values (its second is below every other row's maximum: a row-max only pick would miss it).
  [3, 9, 20, 21, 40, 50, 61, 63].forEach((u, r) => (y[u * 64 + (r * 7) % 64] = 10 + r));
  const c1 = 4096;
  [5, 6, 7, 8, 30, 31, 32, 33, 60].forEach((u) => (y[c1 + u * 64 + 1] = -4));
  y[c1 + 2 * 64 + 10] = 9;
  y[c1 + 2 * 64 + 11] = 5;
  const got = await gpuTopk(rt, setup(rt, [layout]), y, true);
  const want = topk(layout, y);
  assert.deepEqual(got.indices, want.indices);
  assert.deepEqual(got.values, want.values);
  assert.ok(want.indices.slice(8).includes(2 * 64 + 11), "the second value of row 2 is picked");
});

function randomAggregate(layout: ChunkLayout, seed: number, peers: number) {
  const results = Array.from({ length: peers }, (_, p) => {
    const r = randomF32(seed + p, 2 * layout.chunks * layout.k, 0, 1);
    const indices = new Uint32Array(layout.chunks * layout.k);
    const values = new Float32Array(layout.chunks * layout.k);
    for (let c = 0; c < layout.chunks; c++) {
      const pool = Array.from({ length: layout.totalk }, (_, i) => i);
      for (let e = 0; e < layout.k; e++) {
        const pick = e + Math.floor(r[2 * (c * layout.k + e)] * (pool.length - e));
        [pool[e], pool[pick]] = [pool[pick], pool[e]];
        indices[c * layout.k + e] = pool[e];
        values[c * layout.k + e] = r[2 * (c * layout.k + e) + 1] < 0.5 ? -1 : 1;
      }
    }
    return { indices, values };
  });
  return aggregateFixed(layout, results);
}

Deno.test("GPU exact apply is bit-identical to the TypeScript reference", async () => {
  using rt = await GpuRuntime.create();
  const layouts = SHAPES.map(([shape, chunk, topk], n) =>
    chunkLayout(`p${n}`, shape, { chunk, topk })
  );
  // Worst case for the 64-bit accumulator: every coefficient of a 64×64 chunk at ±2^15.
  layouts.push(chunkLayout("full", [64, 64], { chunk: 64, topk: 1 }));
  const { kernels, params } = setup(rt, layouts);
  const aggs = params.map((p, n) => {
    if (p.layout.name !== "full") return randomAggregate(p.layout, 100 * n, 3);
    const q = fixedBasis(64);
    const coeffs = new Int32Array(4096).map((_, t) =>
      (Math.sign(q[Math.floor(t / 64) * 64 + 5] * q[(t % 64) * 64 + 9]) || 1) * 2 ** COEFF_BITS
    );
    return {
      offsets: Uint32Array.from([0, 4096]),
      indices: new Uint32Array(4096).map((_, i) => i),
      coeffs,
      scaleExp: new Int32Array(1),
    };
  });
  const lr = 0.0123;
  for (const [n, p] of params.entries()) {
    const agg = aggs[n];
    const theta0 = randomF32(300 + n, p.layout.size, -0.1, 0.1);
    const theta = rt.buffer("theta", theta0);
    const meta = rt.buffer("meta", new Uint32Array([0, 0, 0, 0]));
    const step = rt.beginStep("apply");
    kernels.encodeApply(step.pass, kernels.spec({ ...p, index: 0 }), {
      hyper: rt.buffer("hyper", new Float32Array([lr])),
      meta,
      params: theta,
      idx: rt.buffer("idx", agg.indices.length ? agg.indices : new Uint32Array(1)),
      q: rt.buffer("q", agg.coeffs.length ? agg.coeffs : new Int32Array(1)),
      offsets: rt.buffer("offsets", agg.offsets),
    });
    await step.submit();
    const x = decodeFixed(p.layout, agg);
    const want = theta0.map((t, i) => Math.fround(t - Math.fround(lr) * Math.sign(x[i])));
    const got = (await rt.read(theta)).slice(0, p.layout.size);
    const bad = [...got].flatMap((g, i) => g === want[i] ? [] : [[i, g, want[i], x[i]]]);
    assert.deepEqual(bad.slice(0, 5), [], `apply ${p.layout.name}: ${bad.length} differ`);
    if (p.layout.name === "full") {
      assert.ok(Math.abs(x[5 * 64 + 9]) > 2 ** 48, "hi words exercised");
    }
  }
});

Deno.test("GPU own-result fixed point equals aggregateFixed of that one result", async () => {
  using rt = await GpuRuntime.create();
  const layout = chunkLayout("w", [32, 48], { chunk: 16, topk: 5 });
  const { kernels, params, entries } = setup(rt, [layout]);
  const spec = kernels.spec(params[0]);
  const r = randomF32(77, entries, 0, 1);
  const indices = new Uint32Array(entries).map((_, e) => (e % 5) * 50 + Math.floor(r[e] * 50));
  // Values over many magnitudes, exact powers of two, a zero chunk, and a chunk near 2^-120
  // (scaled by 2^135: beyond WGSL's single-ldexp range).
  const values = randomF32(78, entries, -1, 1).map((v, e) =>
    e < 5
      ? 0
      : e < 10
      ? (0.5 + Math.abs(v) / 2) * Math.sign(v) * 2 ** -120
      : e % 7 === 0
      ? 2 ** -(e % 20)
      : v * 2 ** -(e % 13)
  );
  for (const oneBit of [0, 1]) {
    const q = rt.buffer("q", entries * 4);
    const step = rt.beginStep("own-fixed");
    kernels.encodeOwnFixed(step.pass, spec, {
      hyper: rt.buffer("hyper", new Uint32Array([0, oneBit, 0, 0])),
      val: rt.buffer("val", values),
      q,
    });
    await step.submit();
    const got = new Int32Array((await rt.readBytes(q)).slice(0, entries * 4));
    const sent = oneBit ? values.map((v) => (Object.is(v, -0) || v < 0 ? -1 : 1)) : values;
    const agg = aggregateFixed(layout, [{ indices, values: sent }]);
    for (let c = 0; c < layout.chunks; c++) {
      const want = new Map<number, number>();
      for (let e = agg.offsets[c]; e < agg.offsets[c + 1]; e++) {
        want.set(agg.indices[e], agg.coeffs[e]);
      }
      for (let e = c * layout.k; e < (c + 1) * layout.k; e++) {
        assert.equal(got[e], want.get(indices[e]) ?? 0, `oneBit=${oneBit} chunk ${c} entry ${e}`);
      }
    }
  }
});

Deno.test("filtered apply takes the exact path where f32 gets the sign wrong", async () => {
  using rt = await GpuRuntime.create();
  const layout = chunkLayout("adversarial", [128, 64], { chunk: 64, topk: 8 });
  const { kernels, params } = setup(rt, [layout]);
  const q64 = fixedBasis(64);
  // Q[0][i] = 2048 and Q[32][i] = ±2048 exactly, so entries (0, v, q) and (32, v, −q) cancel
  // exactly on the rows where Q[32][i] = +2048: X = 0 there, while the f32 sum of the large
  // terms (~2^37) in entry order leaves rounding residue. Chunk 1 adds a ±1 entry, so X is
  // tiny but nonzero on those rows.
  assert.ok(q64.subarray(0, 64).every((v) => v === 2048));
  assert.ok(q64.subarray(32 * 64, 33 * 64).every((v) => Math.abs(v) === 2048));
  const r = randomF32(5, 64, -1, 1);
  const byIndex = new Map<number, number>();
  for (let v = 0; v < 24; v++) {
    const q = Math.round(r[v] * 2 ** 15) || 1;
    byIndex.set(v, q);
    byIndex.set(32 * 64 + v, -q);
  }
  const chunk = (extra: [number, number][]) => {
    const m = new Map(byIndex);
    for (const [i, q] of extra) m.set(i, q);
    return [...m.entries()].sort((a, b) => a[0] - b[0]);
  };
  const chunks = [chunk([]), chunk([[5 * 64 + 7, 1], [9 * 64 + 3, -1]])];
  const agg = {
    offsets: Uint32Array.from([0, chunks[0].length, chunks[0].length + chunks[1].length]),
    indices: Uint32Array.from(chunks.flat().map(([i]) => i)),
    coeffs: Int32Array.from(chunks.flat().map(([, q]) => q)),
    scaleExp: new Int32Array(2),
  };
  const x = decodeFixed(layout, agg);
  // Naive f32 accumulation in entry order (what the kernel's float sum does without FMA).
  let wrong = 0, zeros = 0;
  for (let c = 0; c < 2; c++) {
    for (let i = 0; i < 64; i++) {
      for (let j = 0; j < 64; j++) {
        let acc = 0;
        for (let e = agg.offsets[c]; e < agg.offsets[c + 1]; e++) {
          const t = agg.indices[e];
          const a = Math.fround(agg.coeffs[e] * q64[Math.floor(t / 64) * 64 + i]);
          acc = Math.fround(acc + Math.fround(a * q64[(t % 64) * 64 + j]));
        }
        const at = (c * 64 + i) * 64 + j;
        if (x[at] === 0) zeros++;
        if (Math.sign(acc) !== Math.sign(x[at])) wrong++;
      }
    }
  }
  assert.ok(zeros >= 64 * 32, `${zeros} exact zeros`);
  assert.ok(wrong > 100, `naive f32 gets ${wrong} signs wrong: the case must need the exact path`);
  const lr = 0.25;
  const theta0 = randomF32(9, layout.size, -1, 1);
  const theta = rt.buffer("theta", theta0);
  const step = rt.beginStep("apply");
  kernels.encodeApply(step.pass, kernels.spec(params[0]), {
    hyper: rt.buffer("hyper", new Float32Array([lr])),
    meta: rt.buffer("meta", new Uint32Array([0, 0, 0, 0])),
    params: theta,
    idx: rt.buffer("idx", agg.indices),
    q: rt.buffer("q", agg.coeffs),
    offsets: rt.buffer("offsets", agg.offsets),
  });
  await step.submit();
  const got = await rt.read(theta);
  const want = theta0.map((t, i) => Math.fround(t - lr * Math.sign(x[i])));
  const bad = [...want].flatMap((w, i) => got[i] === w ? [] : [[i, got[i], w, x[i]]]);
  assert.deepEqual(bad.slice(0, 5), [], `${bad.length} elements differ from the exact sign`);
});

Deno.test("packBasis16 puts values k and k + 4 of each group of 8 in one word, sign-extended back", () => {
  const table = new Int32Array([1, -2, 3, -4, 16384, -16384, 0, 7, -1, 2, -3, 4, 5, 6, 7, -8]);
  const words = packBasis16(table);
  assert.equal(words.length, 8);
  const unpacked = Array.from({ length: 16 }, (_, i) => {
    const g = i >> 3, k = i & 3, high = (i & 4) !== 0;
    const w = words[g * 4 + k];
    return high ? (w | 0) >> 16 : ((w << 16) | 0) >> 16;
  });
  assert.deepEqual(unpacked, Array.from(table));
  assert.throws(() => packBasis16(new Int32Array(12)), /12 values/);
  assert.throws(() => packBasis16(new Int32Array(8).fill(40000)), /beyond 16 bits/);
});

Deno.test("GPU top-k stays exact where every coefficient enters the list (ascending magnitudes)", async () => {
  using rt = await GpuRuntime.create();
  // Each new key is the largest so far: with an insertion list every key would shift all k
  // entries, 4096·k loop iterations per chunk (past llvmpipe's 65,535 per invocation at k = 16).
  for (const k of [16, 32, 64]) {
    const layout = chunkLayout("w", [64, 128], { chunk: 64, topk: k });
    const kernelSetup = setup(rt, [layout]);
    const ascending = Float32Array.from(
      { length: layout.size },
      (_, i) => (i % 3 ? 1 : -1) * (1 + i),
    );
    // Ascending until the list has turned into a heap, then ties, specials and a new maximum:
    // the heap must rank them as the sorted list does.
    const mixed = ascending.map((x, i) => {
      const t = i % 4096;
      if (t < 2048) return x;
      if (t % 5 === 0) return t % 2 ? 5000 : -5000; // ties among the kept
      return [-0, Infinity, NaN, 1e9, -1e9][t % 7] ?? x / 2;
    });
    const cases = [[ascending, false], [ascending, true], [mixed, false], [mixed, true]] as const;
    for (const [y, rows] of cases) {
      const got = await gpuTopk(rt, kernelSetup, y, rows);
      const want = topk(layout, y);
      const what = `k = ${k}${rows ? ", row skipping" : ""}${y === mixed ? ", mixed" : ""}`;
      assert.deepEqual(got.indices, want.indices, `indices, ${what}`);
      assert.deepEqual(got.values, want.values, `values, ${what}`);
    }
  }
});
