/**
 * SwiGLU, the Llama MLP's gate: `out = silu(gate) · up`, `silu(g) = g·σ(g)`.
 *
 * Shapes: gate, up, out `[N, F]` (N = B·T, F = intermediate size), flattened to `n = N·F`.
 * Backward: `dGate = dOut · up · σ(g)·(1 + g·(1 − σ(g)))`, `dUp = dOut · silu(g)`.
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

/** Forward, one invocation per element. */
export function swigluForwardKernel(wg: number, items = 1): string {
  return `struct Params { n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gate: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
${main1d(wg, items)}
  if (i >= p.n) { return; }
  let g = gate[i];
  out[i] = g / (1.0 + exp(-g)) * up[i];
}
`;
}

/** Backward, one invocation per element. */
export function swigluBackwardKernel(wg: number, items = 1): string {
  return `struct Params { n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gate: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read_write> dgate: array<f32>;
@group(0) @binding(5) var<storage, read_write> dup: array<f32>;
${main1d(wg, items)}
  if (i >= p.n) { return; }
  let g = gate[i];
  let sig = 1.0 / (1.0 + exp(-g));
  let dy = dout[i];
  dgate[i] = dy * up[i] * sig * (1.0 + g * (1.0 - sig));
  dup[i] = dy * g * sig;
}
`;
}

/** Bindings of {@link SwiGlu.forward}; all `[N, F]`, flattened to `n` elements. */
export interface SwiGluForwardArgs {
  /** Gate projection. */
  readonly gate: TensorView;
  /** Up projection. */
  readonly up: TensorView;
  /** Written: `silu(gate) · up`. */
  readonly out: TensorView;
  /** Elements, N·F. */
  readonly n: number;
}

/** Bindings of {@link SwiGlu.backward}; all `[N, F]`. */
export interface SwiGluBackwardArgs {
  /** The forward's gate. */
  readonly gate: TensorView;
  /** The forward's up. */
  readonly up: TensorView;
  /** Gradient of the output. */
  readonly dOut: TensorView;
  /** Written: gate gradient. */
  readonly dGate: TensorView;
  /** Written: up gradient. */
  readonly dUp: TensorView;
  /** Elements, N·F. */
  readonly n: number;
}

/** SwiGLU forward and backward over `n` elements. */
export class SwiGlu extends ElementKernel {
  /** `out = silu(gate) · up`. */
  forward(
    pass: GPUComputePassEncoder,
    args: SwiGluForwardArgs,
  ): void {
    this.#run(pass, "forward", { gate: args.gate, up: args.up, out: args.out }, args.n);
  }

  /** `dGate`, `dUp` (overwritten) from `dOut`. */
  backward(
    pass: GPUComputePassEncoder,
    args: SwiGluBackwardArgs,
  ): void {
    const { gate, up, dOut, dGate, dUp } = args;
    this.#run(pass, "backward", { gate, up, dOut, dGate, dUp }, args.n);
  }

  #run(
    pass: GPUComputePassEncoder,
    which: "forward" | "backward",
    views: Record<string, TensorView>,
    n: number,
  ): void {
    requireDims(`swiglu ${which}`, { n });
    for (const [name, view] of Object.entries(views)) {
      requireLength(`swiglu ${which}: binding "${name}"`, view, n, "[N, F]");
    }
    const [wg, items] = [this.wg, this.items];
    const pipeline = this.rt.pipeline(
      `swiglu/${which}/${wg}x${items}`,
      () => which === "forward" ? swigluForwardKernel(wg, items) : swigluBackwardKernel(wg, items),
    );
    const group = bindTensors(this.rt, pipeline, [n], Object.values(views));
    dispatch1d(pass, pipeline, group, n, wg, items);
  }
}
