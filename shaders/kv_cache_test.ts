import assert from "node:assert/strict";
import { GpuRuntime } from "./gpu.ts";
import { KvCacheAppend } from "./kv_cache.ts";
import { Rope, ropeTable } from "./rope.ts";
import { kvCacheAppendRef } from "./reference/kv_cache.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

const plain = (theta: number) => ({ theta, scaling: null });
/** Llama 3.2's scaling: at D = 64 some frequencies are kept, some blended, some divided. */
const LLAMA3 = {
  theta: 500000,
  scaling: {
    ropeType: "llama3",
    factor: 32,
    lowFreqFactor: 1,
    highFreqFactor: 4,
    originalMaxPositionEmbeddings: 8192,
  },
} as const;

const SHAPES = [
  { n: 1, start: 0, positions: 1, h: 1, kvh: 1, d: 2, rope: plain(10000) },
  { n: 3, start: 5, positions: 10, h: 4, kvh: 2, d: 8, rope: plain(10000) },
  { n: 7, start: 0, positions: 9, h: 4, kvh: 4, d: 16, rope: plain(1000) },
  { n: 1, start: 37, positions: 40, h: 6, kvh: 2, d: 64, rope: plain(500000) },
  { n: 2, start: 20, positions: 24, h: 2, kvh: 1, d: 64, rope: LLAMA3 },
];

Deno.test("kv cache append matches the f64 reference and leaves other cache rows alone", async () => {
  using rt = await GpuRuntime.create();
  const append = new KvCacheAppend(rt);
  for (const [s, dims] of SHAPES.entries()) {
    const { n, start, positions, h, kvh, d, rope } = dims;
    const q = randomF32(10 * s + 1, n * h * d), k = randomF32(10 * s + 2, n * kvh * d);
    const v = randomF32(10 * s + 3, n * kvh * d);
    // Rows outside start..start+n−1 hold values the append must not touch.
    const kCache = randomF32(10 * s + 4, positions * kvh * d, -9, 9);
    const vCache = randomF32(10 * s + 5, positions * kvh * d, -9, 9);
    const gq = rt.buffer("q", q), gkc = rt.buffer("kCache", kCache);
    const gvc = rt.buffer("vCache", vCache);
    const step = rt.beginStep("kv cache append");
    append.encode(step.pass, {
      ...dims,
      q: gq,
      k: rt.buffer("k", k),
      v: rt.buffer("v", v),
      table: rt.buffer("table", ropeTable(positions, d, rope)),
      kCache: gkc,
      vCache: gvc,
    });
    await step.submit();
    const want = kvCacheAppendRef({ q, k, v, kCache, vCache }, dims);
    // As in rope_test.ts: the table's f32 angles are within 3·t·u of exact at position t, so
    // each rotated element is within (3t + 4)·u·(|x_i| + |x_partner|), t ≤ start + n.
    const half = d / 2;
    const tolFor = (x: Float32Array, offset = 0) => (i: number) => {
      const j = i - offset;
      if (j < 0 || j >= x.length) return 0;
      const partner = j % d < half ? j + half : j - half;
      return (3 * (start + n) + 4) * F32_EPS * (Math.abs(x[j]) + Math.abs(x[partner]));
    };
    const name = JSON.stringify(dims);
    assertClose(await rt.read(gq), want.q, tolFor(q), `q ${name}`);
    assertClose(await rt.read(gkc), want.kCache, tolFor(k, start * kvh * d), `kCache ${name}`);
    assertClose(await rt.read(gvc), want.vCache, 0, `vCache ${name}`);
  }
});

Deno.test("kv cache append rotates by position with the training rope's bits", async () => {
  // The training kernel rotates token j of a sequence of T by position j; the append rotates
  // the tokens at start.. by their positions: the same rows must come out bit for bit.
  using rt = await GpuRuntime.create();
  const [T, h, kvh, d, start, n] = [12, 4, 2, 16, 9, 3];
  const table = rt.buffer("table", ropeTable(T, d, plain(10000)));
  const qAll = randomF32(1, T * h * d), kAll = randomF32(2, T * kvh * d);
  const refQ = rt.buffer("q all", qAll), refK = rt.buffer("k all", kAll);
  const q = rt.buffer("q new", qAll.slice(start * h * d, (start + n) * h * d));
  const kCache = rt.buffer("kCache", T * kvh * d * 4),
    vCache = rt.buffer("vCache", T * kvh * d * 4);
  const step = rt.beginStep("rope against append");
  const rope = new Rope(rt);
  rope.forward(step.pass, { x: refQ, table, n: T, t: T, heads: h, d });
  rope.forward(step.pass, { x: refK, table, n: T, t: T, heads: kvh, d });
  new KvCacheAppend(rt).encode(step.pass, {
    n,
    start,
    positions: T,
    h,
    kvh,
    d,
    q,
    k: rt.buffer("k new", kAll.slice(start * kvh * d, (start + n) * kvh * d)),
    v: rt.buffer("v new", new Float32Array(n * kvh * d)),
    table,
    kCache,
    vCache,
  });
  await step.submit();
  const bits = async (x: GPUBuffer, from: number, to: number) =>
    new Uint32Array((await rt.read(x)).buffer).slice(from, to);
  assert.deepEqual(
    await bits(q, 0, n * h * d),
    await bits(refQ, start * h * d, (start + n) * h * d),
  );
  assert.deepEqual(
    await bits(kCache, start * kvh * d, (start + n) * kvh * d),
    await bits(refK, start * kvh * d, (start + n) * kvh * d),
  );
});

Deno.test("kv cache append refuses tokens past the cache and short bindings", async () => {
  using rt = await GpuRuntime.create();
  const append = new KvCacheAppend(rt);
  const big = rt.buffer("big", 4096);
  const base = { q: big, k: big, v: big, table: big, kCache: big, vCache: big };
  const step = rt.beginStep("bad");
  const dims = { n: 2, start: 3, positions: 4, h: 2, kvh: 1, d: 8 };
  assert.throws(
    () => append.encode(step.pass, { ...base, ...dims }),
    /positions 3\.\.4 do not fit a cache of 4 positions/,
  );
  assert.throws(
    () =>
      append.encode(step.pass, {
        ...base,
        ...dims,
        positions: 5,
        kCache: rt.buffer("small", 64),
      }),
    /binding "kCache" holds 16 elements, needs \[S, KVH, D\] = 40/,
  );
  await step.submit();
});
