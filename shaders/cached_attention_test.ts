import assert from "node:assert/strict";
import { Attention } from "./attention.ts";
import { CachedAttention, type CachedAttentionDims } from "./cached_attention.ts";
import { GpuRuntime } from "./gpu.ts";
import { attentionForwardRef } from "./reference/attention.ts";
import { cachedAttentionRef } from "./reference/cached_attention.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

const SHAPES: CachedAttentionDims[] = [
  { n: 1, start: 0, positions: 1, h: 1, kvh: 1, d: 4 },
  { n: 1, start: 6, positions: 9, h: 6, kvh: 2, d: 8 },
  { n: 5, start: 0, positions: 8, h: 4, kvh: 4, d: 16 },
  { n: 3, start: 30, positions: 40, h: 3, kvh: 1, d: 12, scale: 0.7 },
  { n: 1, start: 32, positions: 33, h: 4, kvh: 2, d: 64 },
];

Deno.test("cached attention matches the f64 reference (decode and prefill)", async () => {
  using rt = await GpuRuntime.create();
  const attn = new CachedAttention(rt);
  for (const dims of SHAPES) {
    const { n, start, positions, h, kvh, d } = dims;
    const t = start + n;
    const q = randomF32(t + d, n * h * d, -2, 2);
    // Rows past start + n hold huge values: a read of them would show.
    const k = randomF32(t + d + 1, positions * kvh * d, -2, 2);
    const v = randomF32(t + d + 2, positions * kvh * d);
    k.fill(1e30, t * kvh * d);
    v.fill(1e30, t * kvh * d);
    const out = rt.buffer("out", n * h * d * 4);
    const step = rt.beginStep("cached attention");
    attn.forward(step.pass, {
      ...dims,
      q: rt.buffer("q", q),
      kCache: rt.buffer("k", k),
      vCache: rt.buffer("v", v),
      out,
    });
    await step.submit();
    // As in attention_test.ts: each probability carries relative error
    // ε ≤ (D + T + 16 + 4·max|score|)·u, and an output is within ε·Σ P|v| of exact.
    const scale = dims.scale ?? 1 / Math.sqrt(d);
    const eps = (d + t + 16 + 4 * Math.min(4 * 4 * d * scale, 20)) * F32_EPS;
    const want = cachedAttentionRef(q, k, v, dims);
    const mag = cachedAttentionRef(q, k, v.map(Math.abs), dims);
    assertClose(await rt.read(out), want, (i) => 2 * eps * mag[i] + 1e-30, JSON.stringify(dims));
  }
});

Deno.test("cached attention gives the fused causal attention's bits for the same rows", async () => {
  // Decoding token by token over a cache must give what the training forward computes for the
  // whole sequence: the same terms in the same order.
  using rt = await GpuRuntime.create();
  const [t, h, kvh, d] = [11, 4, 2, 8];
  const q = randomF32(1, t * h * d, -2, 2), k = randomF32(2, t * kvh * d, -2, 2);
  const v = randomF32(3, t * kvh * d);
  const gk = rt.buffer("k", k), gv = rt.buffer("v", v);
  const whole = rt.buffer("whole out", t * h * d * 4);
  const step = rt.beginStep("whole and cached");
  new Attention(rt).forward(step.pass, {
    b: 1,
    t,
    h,
    kvh,
    d,
    q: rt.buffer("q", q),
    k: gk,
    v: gv,
    out: whole,
    lse: rt.buffer("lse", h * t * 4),
  });
  const cached = new CachedAttention(rt);
  const rows: GPUBuffer[] = [];
  for (let pos = 0; pos < t; pos++) {
    const out = rt.buffer(`out ${pos}`, h * d * 4);
    rows.push(out);
    const qRow = rt.buffer(`q ${pos}`, q.slice(pos * h * d, (pos + 1) * h * d));
    cached.forward(step.pass, {
      n: 1,
      start: pos,
      positions: t,
      h,
      kvh,
      d,
      q: qRow,
      kCache: gk,
      vCache: gv,
      out,
    });
  }
  await step.submit();
  const wholeBits = new Uint32Array((await rt.read(whole)).buffer);
  for (let pos = 0; pos < t; pos++) {
    const got = new Uint32Array((await rt.read(rows[pos])).buffer);
    assert.deepEqual(got, wholeBits.slice(pos * h * d, (pos + 1) * h * d), `position ${pos}`);
  }
  // And both are the reference's values.
  const ref = attentionForwardRef(q, k, v, { b: 1, t, h, kvh, d }).out;
  assertClose(new Float32Array(wholeBits.buffer), ref, 1e-5, "whole against the reference");
});

Deno.test("cached attention refuses tokens past the cache and bad heads", async () => {
  using rt = await GpuRuntime.create();
  const attn = new CachedAttention(rt);
  const big = rt.buffer("big", 4096);
  const base = { q: big, kCache: big, vCache: big, out: big };
  const step = rt.beginStep("bad");
  assert.throws(
    () => attn.forward(step.pass, { ...base, n: 2, start: 7, positions: 8, h: 2, kvh: 1, d: 4 }),
    /positions 7\.\.8 do not fit a cache of 8 positions/,
  );
  assert.throws(
    () => attn.forward(step.pass, { ...base, n: 1, start: 0, positions: 8, h: 3, kvh: 2, d: 4 }),
    /multiple of KVH/,
  );
  assert.throws(
    () => attn.forward(step.pass, { ...base, n: 1, start: 0, positions: 8, h: 2, kvh: 2, d: 6 }),
    /multiple of 4/,
  );
  await step.submit();
});
