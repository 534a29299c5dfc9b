import assert from "node:assert/strict";
import { Attention, type AttentionDims } from "./attention.ts";
import { GpuRuntime } from "./gpu.ts";
import {
  attentionBackwardBounds,
  attentionBackwardRef,
  attentionForwardRef,
} from "./reference/attention.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

Deno.test("attention reference backward matches finite differences", () => {
  for (const lengths of [undefined, [[2, 1]]]) referenceByFiniteDifferences(lengths);
});

/** The reference's gradients against central differences, with or without packed documents. */
function referenceByFiniteDifferences(sequenceLengths?: number[][]) {
  const dims = { b: 1, t: 3, h: 4, kvh: 2, d: 4, sequenceLengths };
  const q = Float64Array.from(randomF32(1, 3 * 4 * 4, -2, 2));
  const k = Float64Array.from(randomF32(2, 3 * 2 * 4, -2, 2));
  const v = Float64Array.from(randomF32(3, 3 * 2 * 4));
  const w = Float64Array.from(randomF32(4, 3 * 4 * 4));
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
  const attn = new Attention(rt);
  const shapes: AttentionDims[] = [
    { b: 1, t: 1, h: 1, kvh: 1, d: 4 },
    { b: 2, t: 7, h: 6, kvh: 2, d: 8 },
    { b: 1, t: 19, h: 3, kvh: 1, d: 12, scale: 0.7 },
    { b: 3, t: 33, h: 4, kvh: 4, d: 64 },
  ];
  for (const dims of shapes) {
    const { b, t, h, kvh, d } = dims;
    const nq = b * t * h * d, nk = b * t * kvh * d, rows = b * h * t;
    const q = randomF32(t + d, nq, -2, 2), k = randomF32(t + d + 1, nk, -2, 2);
    const v = randomF32(t + d + 2, nk), dOut = randomF32(t + d + 3, nq);
    const gq = rt.buffer("q", q), gk = rt.buffer("k", k), gv = rt.buffer("v", v);
    const gdo = rt.buffer("dOut", dOut), out = rt.buffer("out", nq * 4);
    const lse = rt.buffer("lse", rows * 4), delta = rt.buffer("delta", rows * 4);
    const dq = rt.buffer("dq", nq * 4), dk = rt.buffer("dk", nk * 4), dv = rt.buffer("dv", nk * 4);
    const step = rt.beginStep("attention");
    attn.forward(step.pass, { ...dims, q: gq, k: gk, v: gv, out, lse });
    attn.backward(step.pass, {
      ...dims,
      q: gq,
      k: gk,
      v: gv,
      out,
      lse,
      dOut: gdo,
      dq,
      dk,
      dv,
      delta,
    });
    await step.submit();
    // Each probability carries relative error ε ≤ (D + T + 16 + 4·max|score|)·u: the score's
    // dot product (D terms), exp (3 + 2|x| ulp), the normaliser (≤ T terms and rescalings).
    // Outputs are sums of probability-weighted terms, so their error is ε times the sum of the
    // terms' magnitudes (Σ P|v| for the output). The gradients' bounds come from
    // attentionBackwardBounds: per entry, the magnitudes of its terms, including what dP − Δ
    // cancels; the f32 error is at most (ε + (D + T)·u) times that.
    const scale = dims.scale ?? 1 / Math.sqrt(d);
    const maxScore = 4 * 4 * d * scale;
    const eps = (d + t + 16 + 4 * Math.min(maxScore, 20)) * F32_EPS;
    const ref = attentionForwardRef(q, k, v, dims);
    const mag = attentionForwardRef(q, k, v.map(Math.abs), dims).out;
    const name = JSON.stringify(dims);
    assertClose(await rt.read(out), ref.out, (i) => 2 * eps * mag[i] + 1e-30, `out ${name}`);
    assertClose(await rt.read(lse), ref.lse, (i) => 2 * eps * (1 + Math.abs(ref.lse[i])), "lse");
    const grads = attentionBackwardRef(q, k, v, dOut, dims);
    const bounds = attentionBackwardBounds(q, k, v, dOut, dims);
    const gradEps = eps + (d + t) * F32_EPS;
    for (const label of ["dq", "dk", "dv"] as const) {
      const got = await rt.read({ dq, dk, dv }[label]);
      const tol = (i: number) => 2 * gradEps * bounds[label][i] + 1e-30;
      assertClose(got, grads[label], tol, `${label} ${name}`);
    }
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
  const dims: AttentionDims = { b: 3, t: 19, h: 4, kvh: 2, d: 8 };
  const { b, t, h, kvh, d } = dims;
  const nq = b * t * h * d, nk = b * t * kvh * d, rows = b * h * t;
  const inputs = {
    q: rt.buffer("q", randomF32(1, nq, -2, 2)),
    k: rt.buffer("k", randomF32(2, nk, -2, 2)),
    v: rt.buffer("v", randomF32(3, nk)),
    dOut: rt.buffer("dOut", randomF32(4, nq)),
    out: rt.buffer("out", nq * 4),
    lse: rt.buffer("lse", rows * 4),
    delta: rt.buffer("delta", rows * 4),
  };
  const run = async (wg: number, lockstep: number) => {
    const attn = new Attention(rt, { workgroupSize: wg, lockstep });
    const dq = rt.buffer("dq", nq * 4), dk = rt.buffer("dk", nk * 4), dv = rt.buffer("dv", nk * 4);
    const step = rt.beginStep("attention lockstep");
    attn.forward(step.pass, { ...dims, ...inputs });
    attn.backward(step.pass, { ...dims, ...inputs, dq, dk, dv });
    await step.submit();
    const bits = async (x: GPUBuffer) => new Uint32Array((await rt.read(x)).buffer);
    return { dk: await bits(dk), dv: await bits(dv) };
  };
  const plain = await run(64, 1);
  for (const [wg, lockstep] of [[64, 32], [64, 8], [256, 32], [64, 7]]) {
    const got = await run(wg, lockstep);
    assert.deepEqual(got.dk, plain.dk, `dk, workgroup ${wg}, lockstep ${lockstep}`);
    assert.deepEqual(got.dv, plain.dv, `dv, workgroup ${wg}, lockstep ${lockstep}`);
  }
  assert.throws(() => new Attention(rt, { lockstep: 0 }), /lockstep must be a positive integer/);
});

/** `[B, T, 2]` u32: each token's document `[start, end)` in its row, from the lengths. */
function spans(lengths: number[][], t: number): Uint32Array {
  const out = new Uint32Array(lengths.length * t * 2);
  lengths.forEach((row, bb) => {
    let start = 0;
    for (const len of row) {
      for (let j = start; j < start + len; j++) out.set([start, start + len], (bb * t + j) * 2);
      start += len;
    }
  });
  return out;
}

Deno.test("packed documents: attention sees only its own document, as the f64 reference", async () => {
  using rt = await GpuRuntime.create();
  const dims: AttentionDims = { b: 2, t: 11, h: 4, kvh: 2, d: 8 };
  const { b, t, h, kvh, d } = dims;
  const lengths = [[4, 1, 6], [11]];
  const nq = b * t * h * d, nk = b * t * kvh * d, rows = b * h * t;
  const q = randomF32(5, nq, -2, 2), k = randomF32(6, nk, -2, 2);
  const v = randomF32(7, nk), dOut = randomF32(8, nq);
  const inputs = {
    q: rt.buffer("q", q),
    k: rt.buffer("k", k),
    v: rt.buffer("v", v),
    dOut: rt.buffer("dOut", dOut),
    lse: rt.buffer("lse", rows * 4),
    delta: rt.buffer("delta", rows * 4),
  };
  const run = async (lockstep: number, documents?: Uint32Array) => {
    const attn = new Attention(rt, { workgroupSize: 64, lockstep });
    const out = rt.buffer("out", nq * 4);
    const dq = rt.buffer("dq", nq * 4), dk = rt.buffer("dk", nk * 4), dv = rt.buffer("dv", nk * 4);
    const docs = documents === undefined ? {} : { documents: rt.buffer("documents", documents) };
    const step = rt.beginStep("packed attention");
    attn.forward(step.pass, { ...dims, ...inputs, ...docs, out });
    attn.backward(step.pass, { ...dims, ...inputs, ...docs, out, dq, dk, dv });
    await step.submit();
    return {
      out: await rt.read(out),
      lse: await rt.read(inputs.lse),
      dq: await rt.read(dq),
      dk: await rt.read(dk),
      dv: await rt.read(dv),
    };
  };
  const got = await run(1, spans(lengths, t));
  const packed = { ...dims, sequenceLengths: lengths };
  const eps = (d + t + 16 + 4 * 16) * F32_EPS;
  const ref = attentionForwardRef(q, k, v, packed);
  const mag = attentionForwardRef(q, k, v.map(Math.abs), packed).out;
  assertClose(got.out, ref.out, (i) => 2 * eps * mag[i] + 1e-30, "packed out");
  assertClose(got.lse, ref.lse, (i) => 2 * eps * (1 + Math.abs(ref.lse[i])), "packed lse");
  const grads = attentionBackwardRef(q, k, v, dOut, packed);
  const bounds = attentionBackwardBounds(q, k, v, dOut, packed);
  for (const label of ["dq", "dk", "dv"] as const) {
    const tol = (i: number) => 2 * (eps + (d + t) * F32_EPS) * bounds[label][i] + 1e-30;
    assertClose(got[label], grads[label], tol, `packed ${label}`);
  }
  // The mask matters: token 4 (a one-token document) attends to itself only, so its output is
  // its value row, while the unmasked attention mixes in tokens 0..3.
  const plainRef = attentionForwardRef(q, k, v, dims).out;
  const o = (4 * h) * d;
  assert.ok(Math.abs(plainRef[o] - ref.out[o]) > 1e-3, "the reference ignores the documents");
  // Lockstep walks give the same bits with documents too.
  const stepped = await run(8, spans(lengths, t));
  assert.deepEqual(stepped.dk, got.dk);
  assert.deepEqual(stepped.dv, got.dv);
  // One document per row is the unmasked attention, to the bit.
  const whole = await run(1, spans([[t], [t]], t));
  const plain = await run(1);
  for (const label of ["out", "lse", "dq", "dk", "dv"] as const) {
    assert.deepEqual(whole[label], plain[label], `${label}: one document per row`);
  }
});
