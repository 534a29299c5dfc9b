/**
 * f32 → f16 and f32 → bf16 conversions: the 16-bit copies of mixed-precision training (weights
 * read by the matmuls, activations saved for the backward), made from f32 masters on the GPU.
 *
 * Shapes: x `[n]` f32 → out `[n]` f16, stored as `ceil(n / 2)` u32 words of two halves (element
 * `2i` in the low half), which is how WGSL's `array<f16>` and a host `Uint16Array` see them. Each
 * invocation converts one pair with `pack2x16float`, so no two invocations write one word. Values
 * round to a neighbouring f16 (WGSL leaves the direction to the adapter; one adapter always
 * rounds the same way); magnitudes over 65504 become infinite.
 *
 * bf16 (bfloat16, the top half of an f32; no WGSL type, no device feature) is stored the same
 * way, two to a u32 word. Its conversion works on the bits, so every adapter gives the same
 * result as the checkpoint codec (model/float_codec.ts): round to nearest, ties to even; overflow
 * to ±inf; subnormals kept (never flushed: no float operation touches them); NaN stays NaN with
 * its sign and high payload bits.
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

/** WGSL of the conversion: uniform `n`, bindings `1: x` (f32), `2: out` (u32 pairs of f16). */
export function toF16Kernel(wg: number, items = 1): string {
  return `struct Params { n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
${main1d(wg, items)}
  let e = 2u * i;
  if (e >= p.n) { return; }
  var hi = 0.0;
  if (e + 1u < p.n) { hi = x[e + 1u]; }
  out[i] = pack2x16float(vec2<f32>(x[e], hi));
}
`;
}

/** The conversion kernel. Its `items` counts pairs: one f16 word holds two elements. */
export class CastF16 extends ElementKernel {
  /** Bytes of the f16 copy of `n` elements (whole u32 words). */
  static bytes(n: number): number {
    return 4 * Math.ceil(n / 2);
  }

  /** Encode `out[i] = f16(x[i])` for i < n. */
  encode(pass: GPUComputePassEncoder, args: { x: TensorView; out: TensorView; n: number }): void {
    const { n } = args;
    requireDims("cast to f16", { n });
    requireLength('cast to f16: binding "x"', args.x, n, "[n]");
    requireLength('cast to f16: binding "out" (f16)', args.out, n, "[n]", 2);
    const [wg, items] = [this.wg, this.items];
    const pipeline = this.rt.pipeline(`cast/f16/${wg}x${items}`, () => toF16Kernel(wg, items));
    const group = bindTensors(this.rt, pipeline, [n], [args.x, args.out]);
    dispatch1d(pass, pipeline, group, Math.ceil(n / 2), wg, items);
  }
}

/**
 * WGSL `fn bf16_bits(u: u32) -> u32`: the bf16 bits nearest to the f32 whose bits are `u` (ties to
 * even, NaN kept a NaN), as model/float_codec.ts computes them. Shared by every kernel that rounds
 * to bf16, so they all round alike.
 */
export const BF16_BITS_WGSL = `fn bf16_bits(u: u32) -> u32 {
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: the top half alone could read as infinity, so keep a mantissa bit set.
    let hi = u >> 16u;
    return select(hi, hi | 0x40u, (hi & 0x7fu) == 0u);
  }
  return (u + 0x7fffu + ((u >> 16u) & 1u)) >> 16u;
}`;

/**
 * WGSL of the f32 → bf16 conversion: uniform `n`, bindings `1: x` (f32, read as bits), `2: out`
 * (u32 pairs of bf16).
 */
export function toBf16Kernel(wg: number, items = 1): string {
  return `struct Params { n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
${BF16_BITS_WGSL}
${main1d(wg, items)}
  let e = 2u * i;
  if (e >= p.n) { return; }
  var hi = 0u;
  if (e + 1u < p.n) { hi = bf16_bits(x[e + 1u]); }
  out[i] = bf16_bits(x[e]) | (hi << 16u);
}
`;
}

/** The f32 → bf16 conversion kernel. Its `items` counts pairs, as {@link CastF16}'s. */
export class CastBf16 extends ElementKernel {
  /** Bytes of the bf16 copy of `n` elements (whole u32 words). */
  static bytes(n: number): number {
    return 4 * Math.ceil(n / 2);
  }

  /** Encode `out[i] = bf16(x[i])` (round to nearest even) for i < n. */
  encode(pass: GPUComputePassEncoder, args: { x: TensorView; out: TensorView; n: number }): void {
    const { n } = args;
    requireDims("cast to bf16", { n });
    requireLength('cast to bf16: binding "x"', args.x, n, "[n]");
    requireLength('cast to bf16: binding "out" (bf16)', args.out, n, "[n]", 2);
    const [wg, items] = [this.wg, this.items];
    const pipeline = this.rt.pipeline(`cast/bf16/${wg}x${items}`, () => toBf16Kernel(wg, items));
    const group = bindTensors(this.rt, pipeline, [n], [args.x, args.out]);
    dispatch1d(pass, pipeline, group, Math.ceil(n / 2), wg, items);
  }
}
