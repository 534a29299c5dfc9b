/**
 * Rotary position embeddings, Hugging Face Llama convention (`rotate_half`): within each head of
 * size D, element i < D/2 pairs with i + D/2 and both rotate by the angle `t · θ^(−2i/D)` of
 * position t:
 * `y_i = x_i·cos − x_{i+D/2}·sin`, `y_{i+D/2} = x_{i+D/2}·cos + x_i·sin`.
 * The backward is the inverse rotation (sin negated). With Llama 3's scaling (`rope_type:
 * "llama3"`) the inverse frequencies `θ^(−2i/D)` are rescaled first ({@link ropeInvFreq}); the
 * kernel only reads the table, so it is the same for every scaling.
 *
 * Shapes: x `[N, heads, D]` with N = B·T tokens and position `t = n mod T`, rotated in place;
 * table `[T, D/2, 2]` of (cos, sin) from {@link ropeTable}. With `positions` (u32 `[N]`, each
 * `< T`), token n rotates by the angle of position `positions[n]` instead (HF `position_ids`:
 * packed documents restart at 0); positions `n mod T` give the same bits as none. The table is computed once on the host
 * in f64 (with HF's f32 inverse frequencies) so every adapter rotates by bit-identical angles;
 * GPU `sin`/`cos` differ between vendors.
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

/**
 * Llama 3's frequency scaling (HF `rope_type: "llama3"`, Llama 3.1 and 3.2): the low
 * frequencies, whose wavelength exceeds the pre-training context, are divided by `factor`; the
 * high ones are kept; a band between is interpolated. See {@link ropeInvFreq}.
 */
export interface Llama3RopeScaling {
  /** The HF `rope_type`. */
  readonly ropeType: "llama3";
  /** Divisor of the low frequencies (`factor`, 32 for Llama 3.2). */
  readonly factor: number;
  /** Wavelengths above `originalMaxPositionEmbeddings / lowFreqFactor` are scaled. */
  readonly lowFreqFactor: number;
  /** Wavelengths below `originalMaxPositionEmbeddings / highFreqFactor` are kept. */
  readonly highFreqFactor: number;
  /** The context length of pre-training (`original_max_position_embeddings`, 8192). */
  readonly originalMaxPositionEmbeddings: number;
}

/** A RoPE scaling other than plain RoPE: only Llama 3's for now. */
export type RopeScaling = Llama3RopeScaling;

/** What sets the rotary frequencies: the base θ (`rope_theta`) and a scaling, null for none. */
export interface RopeFrequencies {
  /** Base frequency θ. */
  readonly theta: number;
  /** The frequency scaling (`rope_scaling`), or null for plain RoPE. */
  readonly scaling: RopeScaling | null;
}

const f32 = Math.fround;

/**
 * The inverse frequencies `[D/2]` in HF's f32 arithmetic: `1 / θ^(2i/D)`, then, for llama3
 * scaling, transformers' `_compute_llama3_parameters` with every PyTorch operation rounded to f32
 * in the order transformers applies them (`a / t` for a number `a` is `reciprocal(t) · a`, as
 * PyTorch's `__rtruediv__` computes it). Pure; the f64 reference is shaders/reference/rope.ts.
 *
 * @example
 * ```ts
 * import { ropeInvFreq } from "./rope.ts";
 * const plain = ropeInvFreq(4, { theta: 10000, scaling: null });   // [1, 0.01]
 * const scaled = ropeInvFreq(4, {
 *   theta: 10000,
 *   scaling: {
 *     ropeType: "llama3", factor: 8, lowFreqFactor: 1, highFreqFactor: 4,
 *     originalMaxPositionEmbeddings: 64,
 *   },
 * });
 * // wavelength 2π is below 64/4: kept; 200π is above 64/1: divided by 8.
 * if (scaled[0] !== plain[0] || scaled[1] !== Math.fround(plain[1] / 8)) throw new Error();
 * ```
 */
export function ropeInvFreq(d: number, rope: RopeFrequencies): Float32Array {
  if (!Number.isInteger(d) || d < 2 || d % 2 !== 0) {
    throw new RangeError(`ropeInvFreq: head size D must be a positive even integer, got ${d}`);
  }
  const { theta, scaling } = rope;
  if (!(theta > 0)) throw new RangeError(`ropeInvFreq: rope_theta must be positive, got ${theta}`);
  const half = d / 2;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = f32(1 / f32(theta ** f32((2 * i) / d)));
  if (scaling === null) return inv;
  const { factor, lowFreqFactor: low, highFreqFactor: high } = scaling;
  const old = scaling.originalMaxPositionEmbeddings;
  if (!(factor > 0 && low > 0 && high > low && old > 0)) {
    throw new RangeError(
      `ropeInvFreq: llama3 scaling needs factor, low_freq_factor, original context > 0 and ` +
        `high_freq_factor > low_freq_factor, got ${JSON.stringify(scaling)}`,
    );
  }
  // transformers' Python numbers meet f32 tensors, so each is rounded to f32 first.
  const lowWavelen = f32(old / low), highWavelen = f32(old / high);
  const twoPi = f32(2 * Math.PI), oldF = f32(old), lowF = f32(low), factorF = f32(factor);
  const band = f32(high - low);
  for (let i = 0; i < half; i++) {
    const f = inv[i];
    const wavelen = f32(f32(1 / f) * twoPi);
    if (wavelen < highWavelen) continue; // high frequency: kept
    if (wavelen > lowWavelen) {
      inv[i] = f32(f / factorF); // low frequency: divided by factor
      continue;
    }
    const smooth = f32(f32(f32(f32(1 / wavelen) * oldF) - lowF) / band);
    inv[i] = f32(f32(f32(f32(1 - smooth) * f) / factorF) + f32(smooth * f));
  }
  return inv;
}

/**
 * The (cos, sin) table `[T, D/2, 2]` for positions `0..T-1`: as HF, the inverse frequencies
 * ({@link ropeInvFreq}, scaled when `rope.scaling` says so) and the angle `t · inv_freq` are
 * rounded to f32, then cos and sin are exact.
 *
 * @example
 * ```ts
 * import { ropeTable } from "./rope.ts";
 * const table = ropeTable(2, 4, { theta: 10000, scaling: null });   // T = 2, D = 4
 * if (table[0] !== 1 || table[1] !== 0) throw new Error("position 0 does not rotate");
 * ```
 */
export function ropeTable(t: number, d: number, rope: RopeFrequencies): Float32Array {
  if (!Number.isInteger(t) || t < 1) throw new RangeError(`ropeTable: T must be >= 1, got ${t}`);
  if (!Number.isInteger(d) || d < 2 || d % 2 !== 0) {
    throw new RangeError(`ropeTable: head size D must be a positive even integer, got ${d}`);
  }
  const half = d / 2;
  const inv = ropeInvFreq(d, rope);
  const table = new Float32Array(t * half * 2);
  for (let i = 0; i < half; i++) {
    for (let pos = 0; pos < t; pos++) {
      const angle = f32(pos * inv[i]);
      table[(pos * half + i) * 2] = Math.cos(angle);
      table[(pos * half + i) * 2 + 1] = Math.sin(angle);
    }
  }
  return table;
}

/**
 * In-place rotation; `direction` is 1 (forward) or −1 (backward: rotate back). `positioned`
 * reads each token's position from binding 3 (u32 `[N]`) instead of `token mod T`. `paired`
 * rotates a second tensor of the same tokens, `x2 [N, heads2, D]` (the keys beside the queries;
 * the binding after the others), in the same dispatch: its pairs follow the first's in the index
 * space, and each pair goes through the same statements as alone, so the bits are those of two
 * dispatches.
 */
export function ropeKernel(wg: number, items = 1, positioned = false, paired = false): string {
  const positions = positioned
    ? "\n@group(0) @binding(3) var<storage, read> positions: array<u32>;"
    : "";
  // Bindings are numbered in order (kernel.ts bindTensors): x2 follows positions when present.
  const at = positioned ? 4 : 3;
  const second = paired
    ? `\n@group(0) @binding(${at}) var<storage, read_write> x2: array<f32>;`
    : "";
  const rotate = (x: string, heads: string, index: string) => {
    const pos = positioned ? `positions[row / ${heads}]` : `(row / ${heads}) % p.t`;
    return `let pair = ${index} % half;
    let row = ${index} / half;               // token · heads + head
    let pos = ${pos};
    let cs = (pos * half + pair) * 2u;
    let c = table[cs];
    let s = table[cs + 1u] * p.direction;
    let o = row * p.d + pair;
    let x0 = ${x}[o];
    let x1 = ${x}[o + half];
    ${x}[o] = x0 * c - x1 * s;
    ${x}[o + half] = x1 * c + x0 * s;`;
  };
  const first = "p.n * p.heads * half";
  const body = paired
    ? `if (i < ${first}) {
    ${rotate("x", "p.heads", "i")}
  } else {
    if (i - ${first} >= p.n * p.heads2 * half) { return; }
    ${rotate("x2", "p.heads2", `(i - ${first})`)}
  }`
    : `if (i >= ${first}) { return; }
  {
    ${rotate("x", "p.heads", "i")}
  }`;
  return `struct Params { n: u32, t: u32, heads: u32, d: u32, direction: f32, heads2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> table: array<f32>;${positions}${second}
${main1d(wg, items)}
  let half = p.d / 2u;
  ${body}
}
`;
}

/** Dimensions of one rotary call. */
export interface RopeDims {
  /** Tokens N = B·T. */
  readonly n: number;
  /** Sequence length T (position = token index mod T). */
  readonly t: number;
  /** Heads in x (H for queries, KVH for keys). */
  readonly heads: number;
  /** Head size D (even). */
  readonly d: number;
}

/** Bindings of {@link Rope.forward}. */
export interface RopeForwardArgs extends RopeDims {
  /** Rotated in place: queries or keys `[N, heads, D]`. */
  readonly x: TensorView;
  /** `[T, D/2, 2]` (cos, sin) from {@link ropeTable}. */
  readonly table: TensorView;
  /** u32 `[N]`: each token's position (`< T`, not checked on the GPU); absent: `n mod T`. */
  readonly positions?: TensorView;
  /**
   * A second tensor of the same tokens, `[N, second.heads, D]` (the keys beside the queries),
   * rotated in the same dispatch: one launch for both, with the bits of two.
   */
  readonly second?: RopeSecond;
}

/** The second tensor of a paired rotation ({@link RopeForwardArgs.second}). */
export interface RopeSecond {
  /** Rotated in place (or back, in the backward): `[N, heads, D]`. */
  readonly x: TensorView;
  /** Its heads (KVH for keys). */
  readonly heads: number;
}

/** Bindings of {@link Rope.backward}. */
export interface RopeBackwardArgs extends RopeDims {
  /** Rotated back in place: the gradient `[N, heads, D]` of the rotated tensor. */
  readonly dx: TensorView;
  /** The forward's table. */
  readonly table: TensorView;
  /** The forward's positions, if it had them. */
  readonly positions?: TensorView;
  /** A second gradient rotated back in the same dispatch ({@link RopeForwardArgs.second}). */
  readonly second?: RopeSecond;
}

/** Rotary embeddings in place: forward rotates, backward rotates the gradient back. */
export class Rope extends ElementKernel {
  /** Rotate `x [N, heads, D]` in place by its positions. */
  forward(pass: GPUComputePassEncoder, args: RopeForwardArgs): void {
    this.#run(pass, args, 1);
  }

  /** Rotate the gradient `dx [N, heads, D]` back in place (the transpose of the forward). */
  backward(
    pass: GPUComputePassEncoder,
    args: RopeBackwardArgs,
  ): void {
    this.#run(pass, { ...args, x: args.dx }, -1);
  }

  #run(
    pass: GPUComputePassEncoder,
    args: RopeForwardArgs,
    direction: 1 | -1,
  ): void {
    const { n, t, heads, d } = args;
    requireDims("rope", { n, t, heads, d });
    if (d % 2 !== 0) throw new RangeError(`rope: head size D must be even, got ${d}`);
    requireLength('rope: binding "x"', args.x, n * heads * d, "[N, heads, D]");
    requireLength('rope: binding "table"', args.table, t * d, "[T, D/2, 2]");
    const positioned = args.positions !== undefined;
    if (positioned) requireLength('rope: binding "positions"', args.positions!, n, "[N]");
    const second = args.second;
    if (second) {
      requireDims("rope", { "second.heads": second.heads });
      requireLength('rope: binding "second.x"', second.x, n * second.heads * d, "[N, heads, D]");
    }
    const paired = second !== undefined;
    const [wg, items] = [this.wg, this.items];
    const pipeline = this.rt.pipeline(
      `rope/${wg}x${items}${positioned ? "/positions" : ""}${paired ? "/paired" : ""}`,
      () => ropeKernel(wg, items, positioned, paired),
    );
    const heads2 = second?.heads ?? 0;
    const params = [n, t, heads, d, direction === 1 ? 0x3f800000 : 0xbf800000, heads2];
    const tensors = [
      args.x,
      args.table,
      ...(positioned ? [args.positions!] : []),
      ...(second ? [second.x] : []),
    ];
    const group = bindTensors(this.rt, pipeline, params, tensors);
    dispatch1d(pass, pipeline, group, (n * (heads + heads2) * d) / 2, wg, items);
  }
}
