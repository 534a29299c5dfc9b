/**
 * Elementwise kernels over flat f32 ranges: fill, copy, add (`out = a + b`), axpy (`y += α·x`,
 * the in-place residual add and gradient accumulation) and scale (`x *= α`). WebGPU forbids
 * binding one buffer as both read and read-write in a dispatch, so in-place updates are the ops
 * that own their target (`axpy`, `scale`, `fill`) rather than `add` with aliased operands.
 *
 * Backward of `add` is the identity (`da = db = dout`), of `axpy` it is `dx += α·dy`, and of
 * `scale` it is `scale` again: no separate kernels are needed.
 *
 * @module
 */

import { f32Bits, type TensorView } from "./gpu.ts";
import {
  bindTensors,
  dispatch1d,
  ElementKernel,
  main1d,
  requireDims,
  requireLength,
} from "./kernel.ts";

/** The elementwise operations. */
export type ElementwiseOp = "fill" | "copy" | "add" | "axpy" | "scale";

/** Bindings (after the uniform `n, alpha`) and statement of each op; `i` < n is the index. */
const OPS: Record<ElementwiseOp, { bindings: [string, "read" | "read_write"][]; body: string }> = {
  fill: { bindings: [["out", "read_write"]], body: "out[i] = p.alpha;" },
  copy: { bindings: [["src", "read"], ["dst", "read_write"]], body: "dst[i] = src[i];" },
  add: {
    bindings: [["a", "read"], ["b", "read"], ["out", "read_write"]],
    body: "out[i] = a[i] + b[i];",
  },
  axpy: {
    bindings: [["x", "read"], ["y", "read_write"]],
    body: "y[i] = fma(p.alpha, x[i], y[i]);",
  },
  scale: { bindings: [["x", "read_write"]], body: "x[i] = x[i] * p.alpha;" },
};

/** WGSL source of one elementwise op. */
export function elementwiseKernel(op: ElementwiseOp, wg: number, items = 1): string {
  const { bindings, body } = OPS[op];
  return `struct Params { n: u32, alpha: f32 }
@group(0) @binding(0) var<uniform> p: Params;
${
    bindings.map(([name, access], i) =>
      `@group(0) @binding(${i + 1}) var<storage, ${access}> ${name}: array<f32>;`
    ).join("\n")
  }
${main1d(wg, items)}
  if (i >= p.n) { return; }
  ${body}
}
`;
}

/** Elementwise kernels; `n` is the element count, views must hold at least `n` elements. */
export class Elementwise extends ElementKernel {
  /** `out[i] = value` for i < n. */
  fill(pass: GPUComputePassEncoder, args: { out: TensorView; n: number; value: number }): void {
    this.#run(pass, "fill", [args.out], args.n, args.value);
  }

  /** `dst[i] = src[i]`. */
  copy(pass: GPUComputePassEncoder, args: { src: TensorView; dst: TensorView; n: number }): void {
    this.#run(pass, "copy", [args.src, args.dst], args.n, 0);
  }

  /** `out[i] = a[i] + b[i]` (out must not alias a or b). */
  add(
    pass: GPUComputePassEncoder,
    args: { a: TensorView; b: TensorView; out: TensorView; n: number },
  ): void {
    this.#run(pass, "add", [args.a, args.b, args.out], args.n, 0);
  }

  /** `y[i] += alpha·x[i]` (residual add with alpha 1; gradient accumulation). */
  axpy(
    pass: GPUComputePassEncoder,
    args: { x: TensorView; y: TensorView; n: number; alpha?: number },
  ): void {
    this.#run(pass, "axpy", [args.x, args.y], args.n, args.alpha ?? 1);
  }

  /** `x[i] *= alpha`. */
  scale(pass: GPUComputePassEncoder, args: { x: TensorView; n: number; alpha: number }): void {
    this.#run(pass, "scale", [args.x], args.n, args.alpha);
  }

  #run(
    pass: GPUComputePassEncoder,
    op: ElementwiseOp,
    views: TensorView[],
    n: number,
    alpha: number,
  ): void {
    requireDims(op, { n }, { allowZero: true });
    if (n === 0) return;
    views.forEach((v, i) => requireLength(`${op}: binding "${OPS[op].bindings[i][0]}"`, v, n, "n"));
    const [wg, items] = [this.wg, this.items];
    const pipeline = this.rt.pipeline(
      `elementwise/${op}/${wg}x${items}`,
      () => elementwiseKernel(op, wg, items),
    );
    const group = bindTensors(this.rt, pipeline, [n, f32Bits(alpha)], views);
    dispatch1d(pass, pipeline, group, n, wg, items);
  }
}
