/**
 * Sum of squares over many buffers into one scalar, for global gradient-norm clipping
 * (`‖g‖ = sqrt(Σ over every gradient tensor of Σ g²)`), in a fixed order so every run on one
 * adapter gives the same bits. Two passes and no atomics:
 *
 * 1. per input, each workgroup squares and sums one chunk of `CHUNK_ITEMS · wg` elements
 *    (invocation `l` takes elements `l, l + wg, ...`, then a fixed binary tree in workgroup
 *    memory) into `partials[offset + workgroup]`;
 * 2. one workgroup sums all partials the same way into `out[0]`.
 *
 * @module
 */

import type { GpuRuntime, TensorView } from "./gpu.ts";
import {
  bindTensors,
  ceilDiv,
  dispatch,
  grid1d,
  requireDims,
  requireLength,
  sumTreeWgsl,
} from "./kernel.ts";

/** Elements each invocation squares in pass 1 (64: few workgroups, each a launch on CPUs). */
export const CHUNK_ITEMS = 64;

/** Pass 1: partial sums of squares of one input (`square`) or plain sums of partials. */
export function sumsqKernel(wg: number, square: boolean): string {
  return `struct Params { n: u32, out_offset: u32, items: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
var<workgroup> partial: array<f32, ${wg}>;

@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let w = wid.x + wid.y * nwg.x;
  let base = w * p.items * ${wg}u;
  var acc = 0.0;
  for (var j = 0u; j < p.items; j++) {
    let e = base + j * ${wg}u + li;
    if (e < p.n) { let v = x[e]; acc += ${square ? "v * v" : "v"}; }
  }
  partial[li] = acc;
  workgroupBarrier();
${sumTreeWgsl(wg, "partial")}
  if (li == 0u) { out[p.out_offset + w] = partial[0]; }
}
`;
}

/** One input of {@link SumOfSquares.encode}: a view and how many of its elements count. */
export interface SumsqInput {
  readonly x: TensorView;
  readonly length: number;
}

/** Deterministic Σ x² over several buffers. */
export class SumOfSquares {
  readonly #rt: GpuRuntime;
  readonly #wg: number;

  /** `workgroupSize` must be a power of two (the tree halves it). */
  constructor(rt: GpuRuntime, workgroupSize: number = rt.profile.workgroupSize) {
    if (!Number.isInteger(Math.log2(workgroupSize))) {
      throw new RangeError(`sumsq: workgroupSize must be a power of two, got ${workgroupSize}`);
    }
    this.#rt = rt;
    this.#wg = workgroupSize;
  }

  /** Elements of the `partials` scratch buffer needed for inputs of these lengths. */
  partialsLength(lengths: readonly number[]): number {
    const chunk = CHUNK_ITEMS * this.#wg;
    return lengths.reduce((sum, n) => sum + ceilDiv(n, chunk), 0);
  }

  /**
   * Encode `out[0] = Σ_inputs Σ_{i < length} x[i]²`. `partials` is scratch of at least
   * {@link partialsLength} elements.
   */
  encode(
    pass: GPUComputePassEncoder,
    args: { inputs: readonly SumsqInput[]; partials: TensorView; out: TensorView },
  ): void {
    const lengths = args.inputs.map((input, i) => {
      requireDims(`sumsq input ${i}`, { length: input.length });
      requireLength(`sumsq: input ${i}`, input.x, input.length, "length");
      return input.length;
    });
    if (lengths.length === 0) throw new RangeError("sumsq: no inputs");
    const total = this.partialsLength(lengths);
    requireLength('sumsq: binding "partials"', args.partials, total, "Σ ceil(length / chunk)");
    requireLength('sumsq: binding "out"', args.out, 1, "1");
    const wg = this.#wg;
    const square = this.#rt.pipeline(`sumsq/square/${wg}`, () => sumsqKernel(wg, true));
    const sum = this.#rt.pipeline(`sumsq/sum/${wg}`, () => sumsqKernel(wg, false));
    let offset = 0;
    args.inputs.forEach((input) => {
      const groups = ceilDiv(input.length, CHUNK_ITEMS * wg);
      const group = bindTensors(this.#rt, square, [input.length, offset, CHUNK_ITEMS], [
        input.x,
        args.partials,
      ]);
      dispatch(pass, square, group, grid1d(groups));
      offset += groups;
    });
    // Pass 2: one workgroup, each invocation summing every wg-th partial.
    const group = bindTensors(this.#rt, sum, [total, 0, ceilDiv(total, wg)], [
      args.partials,
      args.out,
    ]);
    dispatch(pass, sum, group, [1]);
  }
}
