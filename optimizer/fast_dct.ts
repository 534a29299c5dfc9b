/**
 * Fast orthonormal DCT-II for power-of-two lengths: a straight-line program (Lee's recursive
 * factorisation) that the GPU kernels unroll, plus its evaluation and rounding-error bound in
 * TypeScript.
 *
 * The dense transform costs `n` multiply-adds per output; this plan costs about
 * `(n/2)·log₂n + n` multiplications and `(3n/2)·log₂n` additions for all `n` outputs
 * (n = 64: 12 operations per value instead of 64 multiply-adds).
 *
 * Lee's recursion, for the unnormalized `X_k = Σ_m x_m cos(π(2m+1)k / 2N)`:
 * `X_{2k} = DCT_{N/2}(x_m + x_{N−1−m})_k` and, with
 * `b_m = (x_m − x_{N−1−m}) / (2 cos(π(2m+1) / 2N))`, `B = DCT_{N/2}(b)`,
 * `X_{2k+1} = B_k + B_{k+1}` (`B_{N/2} = 0`), from `2cos(a)cos(b) = cos(a+b) + cos(a−b)`.
 * The orthonormal scale `s_u` (dct.ts) is one final multiplication per output.
 *
 * The forward DCT is sender-private (it only decides what a client sends), so it need not be
 * bit-identical across adapters; {@link fastDctErrorBound} gives the tolerance tests use.
 *
 * @module
 */

import type { ChunkLayout } from "./layout.ts";

/** Largest length with a fast plan; longer power-of-two chunks use the dense kernels. */
export const FAST_DCT_MAX = 128;

/** One operation of a {@link FastDctPlan}, on SSA variables (inputs are `0..n-1`). */
export type DctOp =
  | { readonly op: "add" | "sub"; readonly dst: number; readonly a: number; readonly b: number }
  | { readonly op: "mul"; readonly dst: number; readonly a: number; readonly c: number };

/** A straight-line orthonormal DCT-II of length `n`: `out[u] = Σ_i C[u][i]·in[i]`. */
export interface FastDctPlan {
  /** Transform length (a power of two, at most {@link FAST_DCT_MAX}). */
  readonly n: number;
  /** Variables in all (inputs first). */
  readonly vars: number;
  /** Operations in evaluation order; every operand is defined before use. */
  readonly ops: readonly DctOp[];
  /** `outputs[u]`: the variable holding coefficient `u`. */
  readonly outputs: readonly number[];
}

/** Whether `n` has a fast plan (a power of two from 1 to {@link FAST_DCT_MAX}). */
export function hasFastDct(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= FAST_DCT_MAX && (n & (n - 1)) === 0;
}

const planCache = new Map<number, FastDctPlan>();

/** The fast plan of length `n` (cached). Throws `RangeError` unless {@link hasFastDct}. */
export function fastDctPlan(n: number): FastDctPlan {
  if (!hasFastDct(n)) {
    throw new RangeError(`fastDctPlan: length ${n} is not a power of two in 1..${FAST_DCT_MAX}`);
  }
  const cached = planCache.get(n);
  if (cached) return cached;
  const ops: DctOp[] = [];
  let vars = n;
  const add = (op: "add" | "sub", a: number, b: number) => {
    ops.push({ op, dst: vars, a, b });
    return vars++;
  };
  const mul = (a: number, c: number) => {
    ops.push({ op: "mul", dst: vars, a, c });
    return vars++;
  };
  /** Unnormalized DCT-II of the variables `xs`. */
  const lee = (xs: number[]): number[] => {
    const len = xs.length;
    if (len === 1) return xs;
    const half = len / 2;
    const sums: number[] = [];
    const diffs: number[] = [];
    for (let m = 0; m < half; m++) {
      sums.push(add("add", xs[m], xs[len - 1 - m]));
      const d = add("sub", xs[m], xs[len - 1 - m]);
      diffs.push(mul(d, 1 / (2 * Math.cos((Math.PI * (2 * m + 1)) / (2 * len)))));
    }
    const even = lee(sums);
    const odd = lee(diffs);
    const out: number[] = [];
    for (let k = 0; k < half; k++) {
      out.push(even[k]);
      out.push(k + 1 < half ? add("add", odd[k], odd[k + 1]) : odd[k]);
    }
    return out;
  };
  const raw = lee(Array.from({ length: n }, (_, i) => i));
  const outputs = raw.map((v, u) => {
    const s = u === 0 ? Math.sqrt(1 / n) : Math.sqrt(2 / n);
    return s === 1 ? v : mul(v, s);
  });
  const plan = { n, vars, ops, outputs };
  planCache.set(n, plan);
  return plan;
}

/**
 * The fast orthonormal inverse DCT (DCT-III) of length `n`: the transpose of
 * {@link fastDctPlan}'s linear program (orthonormal, so `C⁻¹ = Cᵀ`), `out[i] = Σ_u C[u][i]·in[u]`.
 * Built by walking the forward operations backwards and accumulating each variable's adjoint;
 * a variable's adjoint is kept as `(variable, sign)` so that subtractions need no negations
 * (one final `·(−1)` only where an output ends up negated). About the forward plan's cost.
 * Cached; throws `RangeError` unless {@link hasFastDct}.
 */
export function fastIdctPlan(n: number): FastDctPlan {
  const cached = inversePlanCache.get(n);
  if (cached) return cached;
  const forward = fastDctPlan(n);
  const ops: DctOp[] = [];
  let vars = n;
  const emit = (op: DctOp["op"], a: number, bc: number) => {
    ops.push(op === "mul" ? { op, dst: vars, a, c: bc } : { op, dst: vars, a, b: bc });
    return vars++;
  };
  /** Adjoint of each forward variable: `sign·v[variable]` in the new program. */
  const adjoint = new Map<number, { v: number; sign: 1 | -1 }>();
  const accumulate = (x: number, v: number, sign: 1 | -1) => {
    const prev = adjoint.get(x);
    if (prev === undefined) adjoint.set(x, { v, sign });
    else if (prev.sign === sign) adjoint.set(x, { v: emit("add", prev.v, v), sign });
    else adjoint.set(x, { v: emit("sub", prev.v, v), sign: prev.sign });
  };
  forward.outputs.forEach((v, u) => accumulate(v, u, 1));
  for (let k = forward.ops.length - 1; k >= 0; k--) {
    const o = forward.ops[k];
    const g = adjoint.get(o.dst);
    if (g === undefined) continue;
    if (o.op === "mul") {
      accumulate(o.a, emit("mul", g.v, g.sign * o.c), 1); // the sign rides on the constant
    } else {
      accumulate(o.a, g.v, g.sign);
      accumulate(o.b, g.v, o.op === "add" ? g.sign : (-g.sign as 1 | -1));
    }
  }
  const outputs = Array.from({ length: n }, (_, i) => {
    const g = adjoint.get(i)!;
    return g.sign === 1 ? g.v : emit("mul", g.v, -1);
  });
  const plan = { n, vars, ops, outputs };
  inversePlanCache.set(n, plan);
  return plan;
}

const inversePlanCache = new Map<number, FastDctPlan>();

/**
 * Runs `plan` on `x` (length n). With `round = Math.fround` every constant and every result is
 * rounded to f32, as the WGSL kernel computes (without FMA contraction); the default is f64.
 */
export function runFastDct(
  plan: FastDctPlan,
  x: ArrayLike<number>,
  round: (v: number) => number = (v) => v,
): Float64Array {
  if (x.length !== plan.n) {
    throw new RangeError(`runFastDct: expected ${plan.n} inputs, found ${x.length}`);
  }
  const v = new Float64Array(plan.vars);
  for (let i = 0; i < plan.n; i++) v[i] = round(x[i]);
  for (const o of plan.ops) {
    if (o.op === "mul") v[o.dst] = round(round(o.c) * v[o.a]);
    else v[o.dst] = round(o.op === "add" ? v[o.a] + v[o.b] : v[o.a] - v[o.b]);
  }
  return Float64Array.from(plan.outputs, (i) => v[i]);
}

const U32 = 2 ** -24;

/**
 * Running (a-posteriori) bound on the f32 rounding error of `plan` applied to `x`, whose values
 * may already carry absolute errors up to `xError` (a number, or one per input: the bounds of a
 * previous pass). Returns one bound per output, valid for every f32 evaluation of the plan as
 * written: each variable carries its exact value `v` (f64) and an error bound `E`, propagated with
 * the standard model `fl(a ∘ b) = (a ∘ b)(1 + δ)`, `|δ| ≤ 2^-24`:
 * `E(a ± b) = E_a + E_b + u·(|v| + E_a + E_b)`; a constant `c` is stored as `ĉ = fl(c)` and
 * `E(ĉ·a) = |c|·E_a + (|ĉ − c| + u·|ĉ|)·(|v_a| + E_a)`. An FMA contraction of a multiplication
 * into the following addition only removes a rounding. Underflow is ignored: a subnormal result
 * adds at most 2^-149 per operation, negligible at the magnitudes tests use. (`v` is evaluated in
 * f64, whose own error, ~1e-16 relative, is far below the bound.)
 */
export function fastDctErrorBound(
  plan: FastDctPlan,
  x: ArrayLike<number>,
  xError: number | ArrayLike<number> = 0,
): Float64Array {
  const exact = new Float64Array(plan.vars);
  const err = new Float64Array(plan.vars);
  for (let i = 0; i < plan.n; i++) {
    exact[i] = x[i];
    err[i] = typeof xError === "number" ? xError : xError[i];
  }
  for (const o of plan.ops) {
    if (o.op === "mul") {
      const cf = Math.fround(o.c);
      exact[o.dst] = o.c * exact[o.a];
      err[o.dst] = Math.abs(o.c) * err[o.a] +
        (Math.abs(cf - o.c) + U32 * Math.abs(cf)) * (Math.abs(exact[o.a]) + err[o.a]);
    } else {
      exact[o.dst] = o.op === "add" ? exact[o.a] + exact[o.b] : exact[o.a] - exact[o.b];
      const e = err[o.a] + err[o.b];
      err[o.dst] = e + U32 * (Math.abs(exact[o.dst]) + e);
    }
  }
  return Float64Array.from(plan.outputs, (i) => err[i]);
}

/**
 * Per-coefficient error bound (chunk-major, as dct.ts `encode`) of the blocked fast DCT the GPU
 * computes for `x`: the plan of length n1 down each chunk column first, then the plan of length
 * n2 along each chunk row, both in f32 (see {@link fastDctErrorBound}).
 */
export function fastEncodeErrorBound(layout: ChunkLayout, x: ArrayLike<number>): Float64Array {
  const { n1, n2, colChunks, chunks, totalk } = layout;
  const cols = layout.shape.length === 2 ? layout.shape[1] : 1;
  const p1 = fastDctPlan(n1), p2 = fastDctPlan(n2);
  const out = new Float64Array(layout.size);
  const col = new Float64Array(n1);
  const t = new Float64Array(totalk); // pass-1 values of one chunk, [u][j]
  const te = new Float64Array(totalk); // and their error bounds
  for (let c = 0; c < chunks; c++) {
    const r0 = Math.floor(c / colChunks) * n1;
    const q0 = (c % colChunks) * n2;
    for (let j = 0; j < n2; j++) {
      for (let i = 0; i < n1; i++) col[i] = x[(r0 + i) * cols + q0 + j];
      const vals = runFastDct(p1, col);
      const errs = fastDctErrorBound(p1, col);
      for (let u = 0; u < n1; u++) {
        t[u * n2 + j] = vals[u];
        te[u * n2 + j] = errs[u];
      }
    }
    for (let u = 0; u < n1; u++) {
      const row = t.subarray(u * n2, (u + 1) * n2);
      const errs = fastDctErrorBound(p2, row, te.subarray(u * n2, (u + 1) * n2));
      out.set(errs, c * totalk + u * n2);
    }
  }
  return out;
}

/** Operation counts of a plan: multiplications and additions (subtractions included). */
export function fastDctCost(plan: FastDctPlan): { mul: number; add: number } {
  let mul = 0;
  for (const o of plan.ops) if (o.op === "mul") mul++;
  return { mul, add: plan.ops.length - mul };
}
