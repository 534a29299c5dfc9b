import assert from "node:assert/strict";
import { Attention, type AttentionDims } from "./attention.ts";
import { GpuRuntime } from "./gpu.ts";
import { attentionBackwardRef, attentionForwardRef } from "./reference/attention.ts";
import {
  assertMatchesReference,
  assertSameOutputs,
  type AttentionCase,
  attentionInputs,
  runAttention,
} from "./testing/attention_cases.ts";

Deno.test("attention reference backward matches finite differences", () => {
  for (const lengths of [undefined, [[2, 1]]]) referenceByFiniteDifferences(lengths);
});

/** The reference's gradients against central differences, with or without packed documents. */
function referenceByFiniteDifferences(sequenceLengths?: number[][]) {
  const dims = { b: 1, t: 3, h: 4, kvh: 2, d: 4, sequenceLengths };
  const inputs = attentionInputs(dims, 1);
  const [q, k, v, w] = [inputs.q, inputs.k, inputs.v, inputs.dOut].map((x) => Float64Array.from(x));
  const loss = () => attentionForwardRef(q, k, v, dims).out.reduce((s, o, i) => s + o * w[i], 0);
  const grads = attentionBackwardRef(q, k, v, w, dims);
  for (
    const [name, x, g] of [["q", q, grads.dq], ["k", k, grads.dk], ["v", v, grads.dv]] as const
  ) {
    for (let i = 0; i < x.length; i += 3) {
      const x0 = x[i], eps = 1e-6;
      x[i] = x0 + eps;
      const up = loss();
      x[i] = x0 - eps;
      const down = loss();
      x[i] = x0;
      const fd = (up - down) / (2 * eps);
      assert.ok(
        Math.abs(fd - g[i]) < 1e-7 + 1e-6 * Math.abs(fd),
        `d${name}[${i}]: ${g[i]} vs ${fd}`,
      );
    }
  }
}

Deno.test("fused attention forward and backward match the f64 reference", async () => {
  using rt = await GpuRuntime.create();
  const shapes: AttentionDims[] = [
    { b: 1, t: 1, h: 1, kvh: 1, d: 4 },
    { b: 2, t: 7, h: 6, kvh: 2, d: 8 },
    { b: 1, t: 19, h: 3, kvh: 1, d: 12, scale: 0.7 },
    { b: 3, t: 33, h: 4, kvh: 4, d: 64 },
  ];
  for (const dims of shapes) {
    const c = { dims, seed: dims.t + dims.d };
    const { host, got } = await runAttention(rt, c);
    assertMatchesReference(c, host, got);
  }
});

Deno.test("attention rejects bad head counts and sizes", async () => {
  using rt = await GpuRuntime.create();
  const attn = new Attention(rt);
  const big = rt.buffer("big", 4096);
  const step = rt.beginStep("bad");
  const base = { q: big, k: big, v: big, out: big, lse: big, b: 1, t: 2 };
  assert.throws(() => attn.forward(step.pass, { ...base, h: 3, kvh: 2, d: 4 }), /multiple of KVH/);
  assert.throws(() => attn.forward(step.pass, { ...base, h: 2, kvh: 2, d: 6 }), /multiple of 4/);
  assert.throws(
    () => attn.forward(step.pass, { ...base, q: rt.buffer("small", 16), h: 2, kvh: 1, d: 8 }),
    /binding "q" holds 4 elements, needs \[B, T, H, D\] = 32/,
  );
  await step.submit();
});

Deno.test("the key and value gradients' lockstep walk gives the plain walk's bits", async () => {
  // Key s walks the queries s..T-1; in lockstep runs every invocation walks from its run's first
  // key and skips the queries before its own. Runs here cross head groups and batch entries
  // (T = 19 is no multiple of any run) and workgroups of 64 and 256.
  using rt = await GpuRuntime.create();
  const c: AttentionCase = { dims: { b: 3, t: 19, h: 4, kvh: 2, d: 8 }, seed: 1 };
  const plain = (await runAttention(rt, c, { workgroupSize: 64, lockstep: 1 })).got;
  for (const [wg, lockstep] of [[64, 32], [64, 8], [256, 32], [64, 7]]) {
    const { got } = await runAttention(rt, c, { workgroupSize: wg, lockstep });
    assertSameOutputs(got, plain, `workgroup ${wg}, lockstep ${lockstep}`);
  }
  assert.throws(() => new Attention(rt, { lockstep: 0 }), /lockstep must be a positive integer/);
});

Deno.test("packed documents: attention sees only its own document, as the f64 reference", async () => {
  using rt = await GpuRuntime.create();
  const dims: AttentionDims = { b: 2, t: 11, h: 4, kvh: 2, d: 8 };
  const packed: AttentionCase = { dims, lengths: [[4, 1, 6], [11]], seed: 5 };
  const run = (c: AttentionCase, lockstep = 1) =>
    runAttention(rt, c, { workgroupSize: 64, lockstep });
  const { host, got } = await run(packed);
  assertMatchesReference(packed, host, got);
  // The mask matters: token 4 (a one-token document) attends to itself only, so its output is
  // its value row, while the unmasked attention mixes in tokens 0..3.
  const { q, k, v } = host;
  const plainRef = attentionForwardRef(q, k, v, dims).out;
  const packedRef = attentionForwardRef(q, k, v, { ...dims, sequenceLengths: packed.lengths });
  const o = (4 * dims.h) * dims.d;
  assert.ok(Math.abs(plainRef[o] - packedRef.out[o]) > 1e-3, "the reference ignores the documents");
  // Lockstep walks give the same bits with documents too.
  assertSameOutputs((await run(packed, 8)).got, got, "lockstep 8");
  // One document per row is the unmasked attention, to the bit.
  const whole = (await run({ ...packed, lengths: [[dims.t], [dims.t]] })).got;
  const plain = (await run({ dims, seed: packed.seed })).got;
  assertSameOutputs(whole, plain, "one document per row");
});
