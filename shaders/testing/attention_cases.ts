/**
 * Attention test cases, shared by the row kernels' tests (attention_test.ts) and the tiled ones
 * (attention_tiled_test.ts): seeded inputs, packed documents as the kernels read them, one
 * forward and backward run read back, and the checks against the f64 reference and bit for bit.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Attention, type AttentionDims, type AttentionOptions } from "../attention.ts";
import type { GpuRuntime } from "../gpu.ts";
import {
  attentionBackwardBounds,
  attentionBackwardRef,
  attentionForwardRef,
} from "../reference/attention.ts";
import { assertClose, F32_EPS, randomF32 } from "./kernels.ts";

/** One attention case: its dimensions, packed document lengths if any, and the inputs' seed. */
export interface AttentionCase {
  readonly dims: AttentionDims;
  /** `[B][documents]` lengths, each row summing to T; absent: one document per row. */
  readonly lengths?: number[][];
  readonly seed: number;
}

/** Every output of a forward and backward, in the order the tests report them. */
export const ATTENTION_OUTPUTS = ["out", "lse", "dq", "dk", "dv"] as const;

/** The outputs of one run, read back. */
export type AttentionOutputs = Record<(typeof ATTENTION_OUTPUTS)[number], Float32Array>;

/** The inputs of one case: q, k in [-2, 2) (scores of some size), v and dO in [-1, 1). */
export interface AttentionInputs {
  readonly q: Float32Array;
  readonly k: Float32Array;
  readonly v: Float32Array;
  readonly dOut: Float32Array;
}

/** The seeded inputs of a case of `dims`: seeds `seed` to `seed + 3` for q, k, v and dO. */
export function attentionInputs(dims: AttentionDims, seed: number): AttentionInputs {
  const { b, t, h, kvh, d } = dims;
  const nq = b * t * h * d, nk = b * t * kvh * d;
  return {
    q: randomF32(seed, nq, -2, 2),
    k: randomF32(seed + 1, nk, -2, 2),
    v: randomF32(seed + 2, nk),
    dOut: randomF32(seed + 3, nq),
  };
}

/** `[B, T, 2]` u32: each token's document `[start, end)` in its row, from the lengths. */
export function documentSpans(lengths: number[][], t: number): Uint32Array {
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

/**
 * Forward and backward of case `c` by an `Attention` built with `options`: the host inputs and
 * every output, read back. The GPU buffers are destroyed before it returns.
 */
export async function runAttention(
  rt: GpuRuntime,
  c: AttentionCase,
  options: AttentionOptions = {},
): Promise<{ host: AttentionInputs; got: AttentionOutputs }> {
  const { b, t, h, kvh, d } = c.dims;
  const nq = b * t * h * d, nk = b * t * kvh * d, rows = b * h * t;
  const host = attentionInputs(c.dims, c.seed);
  const q = rt.buffer("q", host.q), k = rt.buffer("k", host.k), v = rt.buffer("v", host.v);
  const dOut = rt.buffer("dOut", host.dOut);
  const out = rt.buffer("out", nq * 4), lse = rt.buffer("lse", rows * 4);
  const delta = rt.buffer("delta", rows * 4);
  const dq = rt.buffer("dq", nq * 4), dk = rt.buffer("dk", nk * 4), dv = rt.buffer("dv", nk * 4);
  const documents = c.lengths === undefined
    ? undefined
    : rt.buffer("documents", documentSpans(c.lengths, t));
  const attn = new Attention(rt, options);
  const step = rt.beginStep("attention case");
  const fwd = { ...c.dims, q, k, v, out, lse, ...(documents ? { documents } : {}) };
  attn.forward(step.pass, fwd);
  attn.backward(step.pass, { ...fwd, dOut, dq, dk, dv, delta });
  await step.submit();
  const got: AttentionOutputs = {
    out: await rt.read(out),
    lse: await rt.read(lse),
    dq: await rt.read(dq),
    dk: await rt.read(dk),
    dv: await rt.read(dv),
  };
  for (const x of [q, k, v, dOut, out, lse, delta, dq, dk, dv, documents]) x?.destroy();
  return { host, got };
}

/** `c`'s dimensions and documents, to name it in a failure. */
export function caseName(c: AttentionCase): string {
  return `${JSON.stringify(c.dims)} documents ${JSON.stringify(c.lengths)}`;
}

/**
 * Throw unless `got` holds case `c`'s f64 reference outputs within the f32 error bound.
 *
 * Each probability carries relative error ε ≤ (D + T + 16 + 4·max|score|)·u: the score's dot
 * product (D terms), exp (3 + 2|x| ulp), the normaliser (≤ T terms and rescalings); max|score|
 * is at most 4·4·D·scale for these inputs, capped at 20. Outputs are sums of
 * probability-weighted terms, so their error is ε times the sum of the terms' magnitudes (Σ P|v|
 * for the output). The gradients' bounds come from attentionBackwardBounds: per entry, the
 * magnitudes of its terms, including what dP − Δ cancels; the f32 error is at most
 * (ε + (D + T)·u) times that.
 */
export function assertMatchesReference(
  c: AttentionCase,
  host: AttentionInputs,
  got: AttentionOutputs,
): void {
  const { t, d } = c.dims;
  const dims = { ...c.dims, sequenceLengths: c.lengths };
  const { q, k, v, dOut } = host;
  const scale = c.dims.scale ?? 1 / Math.sqrt(d);
  const eps = (d + t + 16 + 4 * Math.min(16 * d * scale, 20)) * F32_EPS;
  const name = caseName(c);
  const ref = attentionForwardRef(q, k, v, dims);
  const mag = attentionForwardRef(q, k, v.map(Math.abs), dims).out;
  assertClose(got.out, ref.out, (i) => 2 * eps * mag[i] + 1e-30, `out ${name}`);
  assertClose(got.lse, ref.lse, (i) => 2 * eps * (1 + Math.abs(ref.lse[i])), `lse ${name}`);
  const grads = attentionBackwardRef(q, k, v, dOut, dims);
  const bounds = attentionBackwardBounds(q, k, v, dOut, dims);
  const gradEps = eps + (d + t) * F32_EPS;
  for (const label of ["dq", "dk", "dv"] as const) {
    const tol = (i: number) => 2 * gradEps * bounds[label][i] + 1e-30;
    assertClose(got[label], grads[label], tol, `${label} ${name}`);
  }
}

/**
 * Throw unless `got` and `want` hold the same bits, naming the first difference (assert's
 * deepEqual takes minutes to print the diff of arrays this long).
 */
export function assertSameBits(got: Float32Array, want: Float32Array, what: string): void {
  const a = new Uint32Array(got.buffer), b = new Uint32Array(want.buffer);
  assert.equal(a.length, b.length, `${what}: lengths`);
  const first = a.findIndex((x, i) => x !== b[i]);
  if (first < 0) return;
  const count = a.reduce((n, x, i) => n + (x === b[i] ? 0 : 1), 0);
  assert.fail(
    `${what}: ${count} of ${a.length} differ, first [${first}] ${got[first]} vs ${want[first]}`,
  );
}

/** {@link assertSameBits} for every output of two runs. */
export function assertSameOutputs(got: AttentionOutputs, want: AttentionOutputs, what: string) {
  for (const label of ATTENTION_OUTPUTS) {
    assertSameBits(got[label], want[label], `${label}, ${what}`);
  }
}
