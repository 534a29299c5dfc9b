/**
 * f32 → nearest bf16, in place: each value becomes the f32 whose low 16 bits are zero and whose
 * high half is its bf16 rounding (round to nearest, ties to even; overflow to ±inf; subnormals
 * kept; NaN stays NaN with its sign and high payload). The same bits as the conversion of
 * cast.ts followed by the exact bf16 → f32 expansion, i.e. model/float_codec.ts's
 * `decodeBf16(encodeBf16(x))`, on every adapter (integer operations only).
 *
 * It is the checkpoint-boundary rounding of `[model.LLM] snapshot_dtype = "bf16"`: every client
 * rounds its f32 masters with it at Cooldown, so all of them, and the joiners that fetch the
 * bf16 snapshot, hold the same bits.
 *
 * Shapes: x `[n]` f32, read and written as u32 bits.
 *
 * @module
 */

import type { TensorView } from "./gpu.ts";
import { BF16_BITS_WGSL } from "./cast.ts";
import {
  bindTensors,
  dispatch1d,
  ElementKernel,
  main1d,
  requireDims,
  requireLength,
} from "./kernel.ts";

/** WGSL of the rounding: uniform `n`, binding `1: x` (f32 as bits, read and written). */
export function roundBf16Kernel(wg: number, items = 1): string {
  return `struct Params { n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<u32>;
${BF16_BITS_WGSL}
${main1d(wg, items)}
  if (i >= p.n) { return; }
  x[i] = bf16_bits(x[i]) << 16u;
}
`;
}

/** The in-place f32 → bf16 rounding kernel. */
export class RoundBf16 extends ElementKernel {
  /** Encode `x[i] = f32(bf16(x[i]))` (round to nearest even) for i < n, in place. */
  encode(pass: GPUComputePassEncoder, args: { x: TensorView; n: number }): void {
    const { n } = args;
    requireDims("round to bf16", { n });
    requireLength('round to bf16: binding "x"', args.x, n, "[n]");
    const [wg, items] = [this.wg, this.items];
    const pipeline = this.rt.pipeline(
      `round-bf16/${wg}x${items}`,
      () => roundBf16Kernel(wg, items),
    );
    const group = bindTensors(this.rt, pipeline, [n], [args.x]);
    dispatch1d(pass, pipeline, group, n, wg, items);
  }
}
