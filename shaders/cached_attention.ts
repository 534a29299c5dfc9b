/**
 * Causal grouped-query attention of new tokens over a key/value cache, for generation: the
 * queries of `n` tokens at positions `start..start+n−1` of one sequence attend to the cached keys
 * and values at positions `0..` their own (the cache already holds the new tokens' rows:
 * shaders/kv_cache.ts writes them first). Decoding is `n = 1` (single-query attention over the
 * cache); a prompt's prefill is `start = 0, n = prompt length`.
 *
 * Shapes: q `[n, H, D]` (after RoPE), kCache and vCache `[S, KVH, D]` (S positions, rotated keys),
 * out `[n, H, D]`. Query head h reads key/value head `h / (H / KVH)`; scores are `scale · q·k`
 * (scale defaults to `1/sqrt(D)`).
 *
 * One invocation per (token, head) walks the keys with the online softmax of the training
 * forward (shaders/attention_steps.ts `onlineSoftmaxStep`), in the same order: a query at position t
 * gets the bits the fused causal attention gives row t of the whole sequence.
 *
 * @module
 */

import { f32Bits, type GpuRuntime, type TensorView } from "./gpu.ts";
import { forwardOutput, forwardRegisters, onlineSoftmaxStep } from "./attention_steps.ts";
import { bindTensors, dispatch1d, main1d, requireDims, requireLength } from "./kernel.ts";

/** One invocation per (token, head): the online softmax over cache positions `0..start+token`. */
export function cachedAttentionKernel(d: number, wg: number): string {
  const dv = d / 4;
  return `struct Params { n: u32, start: u32, h: u32, kvh: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
${main1d(wg)}
  if (i >= p.n * p.h) { return; }
  let hh = i % p.h;
  let tok = i / p.h;
  let g = hh / (p.h / p.kvh);
  let qo = (tok * p.h + hh) * ${dv}u;
  let last = p.start + tok;
${forwardRegisters(dv)}
  for (var s = 0u; s <= last; s++) {
    let ko = (s * p.kvh + g) * ${dv}u;
    ${onlineSoftmaxStep(dv)}
  }
${forwardOutput(dv, "  ")}
}
`;
}

/** Dimensions of one {@link CachedAttention.forward}. */
export interface CachedAttentionDims {
  /** New tokens n (queries). */
  readonly n: number;
  /** Position of the first new token; the cache holds positions `0..start+n−1`. */
  readonly start: number;
  /** Positions the cache can hold, S (`start + n ≤ S`). */
  readonly positions: number;
  /** Query heads H. */
  readonly h: number;
  /** Key/value heads KVH (divides H). */
  readonly kvh: number;
  /** Head size D (multiple of 4, ≤ 256). */
  readonly d: number;
  /** Score scale (default `1/sqrt(D)`). */
  readonly scale?: number;
}

/** Bindings of {@link CachedAttention.forward}. */
export interface CachedAttentionArgs extends CachedAttentionDims {
  /** Queries of the new tokens `[n, H, D]`, after RoPE. */
  readonly q: TensorView;
  /** Cached keys `[S, KVH, D]`, after RoPE. */
  readonly kCache: TensorView;
  /** Cached values `[S, KVH, D]`. */
  readonly vCache: TensorView;
  /** Written: attention output `[n, H, D]`. */
  readonly out: TensorView;
}

/** Attention of new tokens over a key/value cache (forward only: generation). */
export class CachedAttention {
  readonly #rt: GpuRuntime;
  readonly #wg: number;

  /** Default workgroup size: the profile's. */
  constructor(rt: GpuRuntime, workgroupSize: number = rt.profile.workgroupSize) {
    this.#rt = rt;
    this.#wg = workgroupSize;
  }

  /** `out [n, H, D]` from q and the cache. */
  forward(pass: GPUComputePassEncoder, args: CachedAttentionArgs): void {
    const what = "cached attention";
    const { n, start, positions, h, kvh, d } = args;
    requireDims(what, { n, positions, h, kvh, d });
    requireDims(what, { start }, { allowZero: true });
    if (h % kvh !== 0) {
      throw new RangeError(`${what}: query heads H = ${h} must be a multiple of KVH = ${kvh}`);
    }
    if (d % 4 !== 0 || d > 256) {
      throw new RangeError(`${what}: head size D must be a multiple of 4 up to 256, got ${d}`);
    }
    if (start + n > positions) {
      throw new RangeError(
        `${what}: tokens at positions ${start}..${start + n - 1} do not fit a cache of ` +
          `${positions} positions`,
      );
    }
    requireLength(`${what}: binding "q"`, args.q, n * h * d, "[n, H, D]");
    requireLength(`${what}: binding "out"`, args.out, n * h * d, "[n, H, D]");
    for (const [name, view] of [["kCache", args.kCache], ["vCache", args.vCache]] as const) {
      requireLength(`${what}: binding "${name}"`, view, positions * kvh * d, "[S, KVH, D]");
    }
    const wg = this.#wg;
    const pipeline = this.#rt.pipeline(
      `cached-attention/d${d}/${wg}`,
      () => cachedAttentionKernel(d, wg),
    );
    const scale = args.scale ?? 1 / Math.sqrt(d);
    const group = bindTensors(this.#rt, pipeline, [n, start, h, kvh, f32Bits(scale)], [
      args.q,
      args.kCache,
      args.vCache,
      args.out,
    ]);
    dispatch1d(pass, pipeline, group, n * h, wg);
  }
}
