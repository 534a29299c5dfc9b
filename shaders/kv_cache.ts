/**
 * Appending new tokens to a key/value cache, for generation: the `n` tokens at positions
 * `start..start+n−1` of one sequence have their queries rotated in place and their keys rotated
 * and written, with their values, into cache rows `start..start+n−1`. RoPE uses each token's
 * own position (not its index among the new tokens, as the training kernel's `n mod T` does),
 * with the rotation and the (cos, sin) table of shaders/rope.ts (`ropeTable`), so a token's
 * rotated query and key are the training forward's bits.
 *
 * Shapes: q `[n, H, D]` (rotated in place), k and v `[n, KVH, D]` (read), table `[S, D/2, 2]`,
 * kCache and vCache `[S, KVH, D]` (rows `start..start+n−1` written, the others untouched).
 *
 * One invocation per (token, head of H + KVH, rotation pair i < D/2): a query head rotates its
 * pair (i, i + D/2) in place; a key/value head rotates the key's pair into the cache and copies
 * the value's two elements.
 *
 * @module
 */

import type { TensorView } from "./gpu.ts";
import {
  bindTensors,
  dispatch1d,
  ElementKernel,
  main1d,
  requireDims,
  requireLength,
} from "./kernel.ts";

/** The append kernel (see the module doc). */
export function kvCacheAppendKernel(wg: number, items = 1): string {
  return `struct Params { n: u32, start: u32, h: u32, kvh: u32, d: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> table: array<f32>;
@group(0) @binding(5) var<storage, read_write> kCache: array<f32>;
@group(0) @binding(6) var<storage, read_write> vCache: array<f32>;
${main1d(wg, items)}
  let half = p.d / 2u;
  let heads = p.h + p.kvh;
  if (i >= p.n * heads * half) { return; }
  let pair = i % half;
  let row = i / half;               // token · (H + KVH) + head
  let head = row % heads;
  let tok = row / heads;
  let pos = p.start + tok;
  let cs = (pos * half + pair) * 2u;
  let c = table[cs];
  let s = table[cs + 1u];
  if (head < p.h) {
    let o = (tok * p.h + head) * p.d + pair;
    let x0 = q[o];
    let x1 = q[o + half];
    q[o] = x0 * c - x1 * s;
    q[o + half] = x1 * c + x0 * s;
    return;
  }
  let g = head - p.h;
  let src = (tok * p.kvh + g) * p.d + pair;
  let dst = (pos * p.kvh + g) * p.d + pair;
  let x0 = k[src];
  let x1 = k[src + half];
  kCache[dst] = x0 * c - x1 * s;
  kCache[dst + half] = x1 * c + x0 * s;
  vCache[dst] = v[src];
  vCache[dst + half] = v[src + half];
}
`;
}

/** Dimensions of one {@link KvCacheAppend.encode}. */
export interface KvCacheDims {
  /** New tokens n. */
  readonly n: number;
  /** Position of the first new token. */
  readonly start: number;
  /** Positions the cache (and the table) holds, S (`start + n ≤ S`). */
  readonly positions: number;
  /** Query heads H. */
  readonly h: number;
  /** Key/value heads KVH. */
  readonly kvh: number;
  /** Head size D (even). */
  readonly d: number;
}

/** Bindings of {@link KvCacheAppend.encode}. */
export interface KvCacheAppendArgs extends KvCacheDims {
  /** Rotated in place: the new tokens' queries `[n, H, D]`. */
  readonly q: TensorView;
  /** The new tokens' keys `[n, KVH, D]`, before RoPE. */
  readonly k: TensorView;
  /** The new tokens' values `[n, KVH, D]`. */
  readonly v: TensorView;
  /** `[S, D/2, 2]` (cos, sin) from `ropeTable(S, D, θ)`. */
  readonly table: TensorView;
  /** Rows `start..start+n−1` written: rotated keys `[S, KVH, D]`. */
  readonly kCache: TensorView;
  /** Rows `start..start+n−1` written: values `[S, KVH, D]`. */
  readonly vCache: TensorView;
}

/** RoPE at each new token's position, and its key and value written into the cache. */
export class KvCacheAppend extends ElementKernel {
  /** Encodes the append of `n` tokens at `start` (see the module doc). */
  encode(pass: GPUComputePassEncoder, args: KvCacheAppendArgs): void {
    const what = "kv cache append";
    const { n, start, positions, h, kvh, d } = args;
    requireDims(what, { n, positions, h, kvh, d });
    requireDims(what, { start }, { allowZero: true });
    if (d % 2 !== 0) throw new RangeError(`${what}: head size D must be even, got ${d}`);
    if (start + n > positions) {
      throw new RangeError(
        `${what}: tokens at positions ${start}..${start + n - 1} do not fit a cache of ` +
          `${positions} positions`,
      );
    }
    requireLength(`${what}: binding "q"`, args.q, n * h * d, "[n, H, D]");
    requireLength(`${what}: binding "k"`, args.k, n * kvh * d, "[n, KVH, D]");
    requireLength(`${what}: binding "v"`, args.v, n * kvh * d, "[n, KVH, D]");
    requireLength(`${what}: binding "table"`, args.table, positions * d, "[S, D/2, 2]");
    for (const [name, view] of [["kCache", args.kCache], ["vCache", args.vCache]] as const) {
      requireLength(`${what}: binding "${name}"`, view, positions * kvh * d, "[S, KVH, D]");
    }
    const [wg, items] = [this.wg, this.items];
    const pipeline = this.rt.pipeline(
      `kv-cache-append/${wg}x${items}`,
      () => kvCacheAppendKernel(wg, items),
    );
    const group = bindTensors(this.rt, pipeline, [n, start, h, kvh, d], [
      args.q,
      args.k,
      args.v,
      args.table,
      args.kCache,
      args.vCache,
    ]);
    dispatch1d(pass, pipeline, group, n * (h + kvh) * (d / 2), wg, items);
  }
}
