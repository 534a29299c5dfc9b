import assert from "node:assert/strict";
import { Attention } from "./attention.ts";
import { CrossEntropy } from "./cross_entropy.ts";
import { Embedding } from "./embedding.ts";
import { GpuRuntime } from "./gpu.ts";
import { Matmul } from "./matmul.ts";
import { RmsNorm } from "./rmsnorm.ts";
import { SumOfSquares } from "./sumsq.ts";
import { CPU_PROFILE, GPU_PROFILE, type TuningProfile } from "./profile.ts";
import { splitKPlan } from "./split_k.ts";
import { assertClose, randomF32, randomInts } from "./testing/kernels.ts";

/**
 * A small forward and backward chain through every reducing kernel, run twice from the same
 * inputs on one runtime. Returns both runs' outputs (dTable, dNorm, dk, loss and count, Σg²).
 */
async function chainTwice(profile: TuningProfile): Promise<Float32Array[][]> {
  using rt = await GpuRuntime.create({ profile });
  using mm = new Matmul(rt);
  const [b, t, h, kvh, d, v] = [2, 9, 4, 2, 8, 37];
  const n = b * t, c = h * d;
  const tokens = rt.buffer("tokens", randomInts(1, n, v));
  const targets = rt.buffer("targets", Int32Array.from(randomInts(2, n, v)));
  const table = rt.buffer("table", randomF32(3, v * c));
  const w = rt.buffer("w", randomF32(4, c * c));
  const norm = rt.buffer("norm", randomF32(5, c, 0.5, 1.5));
  const kv = rt.buffer("kv", randomF32(6, n * kvh * d));
  const names = ["x", "hn", "q", "att", "logits", "dLogits", "dAtt", "dq", "dk", "dv", "dx"];
  const bufs = Object.fromEntries(names.map((s) => [s, rt.buffer(s, n * Math.max(c, v) * 4)]));
  const small = Object.fromEntries(
    [
      "rstd",
      "lse",
      "ceLse",
      "losses",
      "ceOut",
      "delta",
      "partials",
      "norm2",
      "links",
      "dNorm",
      "dTable",
    ]
      .map((s) => [s, rt.buffer(s, Math.max(n * h, v * c) * 4)]),
  );
  const run = async () => {
    rt.write(small.dTable, new Float32Array(v * c));
    rt.write(small.dNorm, new Float32Array(c));
    const step = rt.beginStep("chain");
    const p = step.pass;
    new Embedding(rt).forward(p, { tokens, table, out: bufs.x, n, c, vocab: v });
    new RmsNorm(rt).forward(p, { x: bufs.x, weight: norm, out: bufs.hn, rstd: small.rstd, n, c });
    mm.encode(p, { a: bufs.hn, b: w, c: bufs.q, m: n, n: c, k: c, layout: "nt" });
    const dims = { b, t, h, kvh, d };
    const attn = new Attention(rt);
    attn.forward(p, { ...dims, q: bufs.q, k: kv, v: kv, out: bufs.att, lse: small.lse });
    mm.encode(p, { a: bufs.att, b: table, c: bufs.logits, m: n, n: v, k: c, layout: "nt" });
    const ce = new CrossEntropy(rt);
    ce.forward(p, {
      logits: bufs.logits,
      targets,
      lse: small.ceLse,
      losses: small.losses,
      out: small.ceOut,
      n,
      v,
    });
    ce.backward(p, {
      logits: bufs.logits,
      targets,
      lse: small.ceLse,
      out: small.ceOut,
      dLogits: bufs.dLogits,
      n,
      v,
    });
    mm.encode(p, { a: bufs.dLogits, b: table, c: bufs.dAtt, m: n, n: c, k: v, layout: "nn" });
    attn.backward(p, {
      ...dims,
      q: bufs.q,
      k: kv,
      v: kv,
      out: bufs.att,
      lse: small.lse,
      dOut: bufs.dAtt,
      dq: bufs.dq,
      dk: bufs.dk,
      dv: bufs.dv,
      delta: small.delta,
    });
    new RmsNorm(rt).backward(p, {
      x: bufs.x,
      weight: norm,
      dOut: bufs.dq,
      rstd: small.rstd,
      dx: bufs.dx,
      dWeight: small.dNorm,
      n,
      c,
    });
    new Embedding(rt).backward(p, {
      tokens,
      dTable: small.dTable,
      dOut: bufs.dx,
      links: small.links,
      n,
      c,
      vocab: v,
    });
    new SumOfSquares(rt).encode(p, {
      inputs: [{ x: small.dTable, length: v * c }, { x: small.dNorm, length: c }],
      partials: small.partials,
      out: small.norm2,
    });
    await step.submit();
    return Promise.all([
      rt.read(small.dTable),
      rt.read(small.dNorm),
      rt.read(bufs.dk),
      rt.read(small.ceOut),
      rt.read(small.norm2),
    ]);
  };
  return [await run(), await run()];
}

/**
 * The GPU profile with a split-K policy small enough for the chain's matmuls: the projection and
 * logits (`nt`, K = 32) split into 2 slices of 16, the logits' gradient (`nn`, K = 37) into 2 of 32
 * (the last 5).
 */
const SPLIT_PROFILE: TuningProfile = {
  ...GPU_PROFILE,
  name: "gpu, split-K",
  splitK: { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 1 << 20 },
};

/** The protocol needs bit-identical results run to run: every output must match bitwise. */
Deno.test("every reducing kernel gives bit-identical results when run twice", async () => {
  const limits = { maxStorageBufferBindingSize: 128 << 20, maxBufferSize: 256 << 20 };
  const plan = (k: number) =>
    splitKPlan(SPLIT_PROFILE.splitK, SPLIT_PROFILE.matmul, { m: 18, n: 32, k, batch: 1 }, limits);
  assert.deepEqual([plan(32), plan(37)], [{ slices: 2, sliceK: 16 }, { slices: 2, sliceK: 32 }]);
  const results: Float32Array[][] = [];
  for (const profile of [CPU_PROFILE, GPU_PROFILE, SPLIT_PROFILE]) {
    const [first, second] = await chainTwice(profile);
    assert.ok(first[4][0] > 0 && Number.isFinite(first[4][0]), "the chain produced a gradient");
    first.forEach((a, i) => {
      assert.deepEqual(
        new Uint32Array(second[i].buffer),
        new Uint32Array(a.buffer),
        `${profile.name} profile, output ${i}`,
      );
    });
    results.push(first);
  }
  // The GPU profile (tiled-vec4 matmul, 256-wide workgroups, one element per invocation), with or
  // without split-K, computes the same chain in another order: equal up to f32 rounding,
  // relative to each output's scale.
  for (const [p, name] of [[1, "gpu"], [2, "gpu split-K"]] as const) {
    results[0].forEach((cpu, i) => {
      const scale = Math.max(...Array.from(cpu, Math.abs));
      assertClose(results[p][i], cpu, 1e-4 * scale, `cpu vs ${name} profile, output ${i}`);
    });
  }
});
