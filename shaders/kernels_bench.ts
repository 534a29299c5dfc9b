/**
 * Time per call of every non-matmul kernel at the shapes of config/models/llama-20m
 * (B = 4, T = 256, N = 1024, C = 256, F = 768, H = KVH = 8, D = 32, V = 32000), forward and
 * backward, each submitted and awaited alone. Run: `deno bench -A shaders/kernels_bench.ts`.
 *
 * @module
 */

import { Attention } from "./attention.ts";
import { CrossEntropy } from "./cross_entropy.ts";
import { Embedding } from "./embedding.ts";
import { GpuRuntime } from "./gpu.ts";
import { RmsNorm } from "./rmsnorm.ts";
import { Rope, ropeTable } from "./rope.ts";
import { SumOfSquares } from "./sumsq.ts";
import { SwiGlu } from "./swiglu.ts";
import { randomF32, randomInts } from "./testing/kernels.ts";

const rt = await GpuRuntime.create();
console.log(`adapter: ${rt.adapterName}`);
const [B, T, C, F, H, KVH, D, V] = [4, 256, 256, 768, 8, 8, 32, 32000];
const N = B * T;
const f32 = (label: string, n: number, seed = n) => rt.buffer(label, randomF32(seed, n));

async function timed(encode: (pass: GPUComputePassEncoder) => void): Promise<void> {
  const step = rt.beginStep("bench");
  encode(step.pass);
  await step.submit();
}

const bench = (name: string, encode: (pass: GPUComputePassEncoder) => void, n = 10) =>
  Deno.bench({ name, n, warmup: 1, fn: () => timed(encode) });

{
  const attn = new Attention(rt);
  const q = f32("q", N * C, 1), k = f32("k", N * C, 2), v = f32("v", N * C, 3);
  const out = f32("out", N * C), dOut = f32("dOut", N * C, 4);
  const lse = f32("lse", B * H * T), delta = f32("delta", B * H * T);
  const dq = f32("dq", N * C), dk = f32("dk", N * C), dv = f32("dv", N * C);
  const dims = { b: B, t: T, h: H, kvh: KVH, d: D };
  bench("attention forward", (p) => attn.forward(p, { ...dims, q, k, v, out, lse }));
  bench(
    "attention backward",
    (p) => attn.backward(p, { ...dims, q, k, v, out, lse, dOut, dq, dk, dv, delta }),
  );
}
{
  const ce = new CrossEntropy(rt);
  const logits = f32("logits", N * V), dLogits = f32("dLogits", N * V);
  const targets = rt.buffer("targets", Int32Array.from(randomInts(1, N, V)));
  const lse = f32("lse", N), losses = f32("losses", N), out = f32("out", 2);
  const dims = { n: N, v: V };
  bench(
    "cross-entropy forward",
    (p) => ce.forward(p, { ...dims, logits, targets, lse, losses, out }),
  );
  bench(
    "cross-entropy backward",
    (p) => ce.backward(p, { ...dims, logits, targets, lse, out, dLogits }),
  );
  bench(
    "cross-entropy fused forward + in-place backward",
    (p) => ce.fused(p, { ...dims, logits, targets, lse, losses, out, gradScale: 1 / N }),
  );
}
{
  const norm = new RmsNorm(rt);
  const x = f32("x", N * C), weight = f32("w", C), out = f32("out", N * C);
  const rstd = f32("rstd", N), dOut = f32("dOut", N * C), dx = f32("dx", N * C);
  const dWeight = f32("dWeight", C);
  bench("rmsnorm forward", (p) => norm.forward(p, { x, weight, out, rstd, n: N, c: C }));
  bench(
    "rmsnorm backward",
    (p) => norm.backward(p, { x, weight, dOut, rstd, dx, dWeight, n: N, c: C }),
  );
}
{
  const emb = new Embedding(rt);
  const tokens = rt.buffer("tokens", randomInts(1, N, V));
  const table = f32("table", V * C), out = f32("out", N * C), dOut = f32("dOut", N * C);
  const links = f32("links", 2 * N);
  const dims = { n: N, c: C, vocab: V };
  bench("embedding forward", (p) => emb.forward(p, { ...dims, tokens, table, out }));
  bench(
    "embedding backward",
    (p) => emb.backward(p, { ...dims, tokens, dTable: table, dOut, links }),
  );
}
{
  const act = new SwiGlu(rt);
  const gate = f32("gate", N * F), up = f32("up", N * F), out = f32("out", N * F);
  const dOut = f32("dOut", N * F), dGate = f32("dGate", N * F), dUp = f32("dUp", N * F);
  bench("swiglu forward", (p) => act.forward(p, { gate, up, out, n: N * F }));
  bench("swiglu backward", (p) => act.backward(p, { gate, up, dOut, dGate, dUp, n: N * F }));
}
{
  const rope = new Rope(rt);
  const x = f32("x", N * C),
    table = rt.buffer("table", ropeTable(T, D, { theta: 10000, scaling: null }));
  bench("rope forward (q)", (p) => rope.forward(p, { x, table, n: N, t: T, heads: H, d: D }));
}
{
  const ss = new SumOfSquares(rt);
  const params = 20_000_000;
  const g = f32("grads", params), out = f32("out", 1);
  const partials = f32("partials", ss.partialsLength([params]));
  bench(
    "sum of squares, 20M elements",
    (p) => ss.encode(p, { inputs: [{ x: g, length: params }], partials, out }),
    5,
  );
}
