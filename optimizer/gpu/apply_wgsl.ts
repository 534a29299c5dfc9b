/**
 * WGSL of the filtered exact apply (consensus side): `θ −= lr·sign(X)` with
 * `X = Σ_e q_e·Q₁[u_e][i]·Q₂[v_e][j]` the exact integer decode of exact.ts, computed cheaply.
 *
 * Each invocation owns `rows` consecutive rows × 4 consecutive columns of one chunk. It sums X
 * in f32 (one multiply and one vec4 multiply-add per entry and row) together with
 * `S = Σ_e |q_e|` (exact, u32). With `E` entries in the chunk and `Qm ≥ max|Q₁|·max|Q₂|` (the
 * Spec's `qm12`), `T = fl(fl(f32(S)·Qm)·(E+3)·2^-23)` bounds `|X_f32 − X|` for every order of
 * summation, with or without FMA contraction (proof in docs/protocol.md, "DisTrO
 * determinism"). Where `|X_f32| > T` the sign of X_f32 is the sign of X; otherwise that row's
 * 4 elements are recomputed exactly with the 64-bit integer emulation of distro_wgsl.ts
 * `applyVec4Kernel`. The result is bit-identical to exact.ts `updateSigns` on every adapter.
 *
 * Bindings: 0 spec, 1 hyper `{lr}`, 2 meta `[param]{offsets, entry, stride_k, _}`, 3 θ (vec4,
 * rw), 4 fixed basis (i32), 5 indices, 6 q (i32), 7 offsets, 8 fixed basis as f32 (same
 * offsets; every entry is an integer below 2^14, exact in f32). Needs n2 divisible by 4 and
 * `rows` dividing n1; dispatch `(rows_total / rows)·(cols / 4)` invocations.
 *
 * @module
 */

import { main1d } from "../../shaders/kernel.ts";
import { SPEC_WGSL } from "./distro_wgsl.ts";

/** The filtered apply for `rows` rows (1, 2, 4 or 8) × 4 columns per invocation. */
export function applyFilteredKernel(wg: number, rows: number): string {
  if (![1, 2, 4, 8].includes(rows)) throw new RangeError(`applyFilteredKernel: rows ${rows}`);
  return /* wgsl */ `${SPEC_WGSL}
struct Meta { offsets: u32, entry: u32, stride_k: u32, _p: u32 };
@group(0) @binding(1) var<storage, read> hyper: array<f32>;
@group(0) @binding(2) var<storage, read> metas: array<Meta>;
@group(0) @binding(3) var<storage, read_write> theta: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> qbasis: array<i32>;
@group(0) @binding(5) var<storage, read> idx: array<u32>;
@group(0) @binding(6) var<storage, read> qv: array<i32>;
@group(0) @binding(7) var<storage, read> offsets: array<u32>;
@group(0) @binding(8) var<storage, read> fbasis: array<f32>;

// Exact sign of X for 4 elements of chunk row i, columns j..j+3 (64-bit two's complement
// accumulation of exactly split i32 products; see applyVec4Kernel).
fn exact_sign(start: u32, end: u32, i: u32, j: u32) -> vec4<f32> {
  let one = vec4<i32>(1);
  let zero = vec4<i32>(0);
  var lo = vec4<u32>(0u);
  var hi = vec4<i32>(0);
  for (var e = start; e < end; e++) {
    let uv = split_uv(idx[e]);
    let a = qbasis[spec.qb1 + uv.x * spec.n1 + i];
    let o = spec.qb2 + uv.y * spec.n2 + j;
    let p = a * vec4<i32>(qbasis[o], qbasis[o + 1u], qbasis[o + 2u], qbasis[o + 3u]);
    let q = qv[e];
    let lowPart = q * (p & vec4<i32>(0xffff));
    let highPart = q * (p >> vec4<u32>(16u));
    let l1 = bitcast<vec4<u32>>(lowPart);
    var s = lo + l1;
    hi = hi + (lowPart >> vec4<u32>(31u)) + select(zero, one, s < l1);
    lo = s;
    let l2 = bitcast<vec4<u32>>(highPart) << vec4<u32>(16u);
    s = lo + l2;
    hi = hi + (highPart >> vec4<u32>(16u)) + select(zero, one, s < l2);
    lo = s;
  }
  let positive = (hi > zero) | ((hi == zero) & (lo != vec4<u32>(0u)));
  return select(select(vec4<f32>(0.0), vec4<f32>(1.0), positive), vec4<f32>(-1.0), hi < zero);
}

${main1d(wg)}
  let per_row = spec.cols / 4u;
  if (i >= (spec.rows / ${rows}u) * per_row) { return; }
  let rg = i / per_row;
  let r0 = rg * ${rows}u;
  let col0 = (i - rg * per_row) * 4u;
  let br = r0 / spec.n1;
  let bc = col0 / spec.n2;
  let c = br * spec.col_chunks + bc;
  let i0 = r0 - br * spec.n1;
  let j0 = col0 - bc * spec.n2;
  let m = metas[spec.param];
  var start: u32;
  var end: u32;
  if (m.stride_k != 0u) {
    start = m.entry + c * m.stride_k;
    end = start + m.stride_k;
  } else {
    start = offsets[m.offsets + c];
    end = offsets[m.offsets + c + 1u];
  }
  var acc: array<vec4<f32>, ${rows}>;
  var sum_abs = 0u;
  for (var e = start; e < end; e++) {
    let uv = split_uv(idx[e]);
    let q = qv[e];
    sum_abs += u32(abs(q));
    let qf = f32(q);
    let o = spec.qb2 + uv.y * spec.n2 + j0;
    let b = vec4<f32>(fbasis[o], fbasis[o + 1u], fbasis[o + 2u], fbasis[o + 3u]);
    let a = spec.qb1 + uv.x * spec.n1 + i0;
    for (var r = 0u; r < ${rows}u; r++) {
      acc[r] += (qf * fbasis[a + r]) * b;
    }
  }
  let bound = (f32(sum_abs) * spec.qm12) * (f32(end - start + 3u) * ${2 ** -23});
  let lr = hyper[0];
  for (var r = 0u; r < ${rows}u; r++) {
    var s = sign(acc[r]);
    if (any(abs(acc[r]) <= vec4<f32>(bound))) {
      s = exact_sign(start, end, i0 + r, j0);
    }
    let at = (r0 + r) * per_row + col0 / 4u;
    theta[at] = theta[at] - lr * s;
  }
}
`;
}
