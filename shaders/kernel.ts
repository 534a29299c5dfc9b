/**
 * Plumbing shared by every kernel: checking that bound views are large enough, building bind
 * groups (uniform parameters at binding 0, then the tensors in order), and splitting large
 * one-dimensional dispatches over two grid dimensions.
 *
 * @module
 */

import { type GpuRuntime, resolveView, type TensorView } from "./gpu.ts";

/**
 * Throw a `RangeError` unless `view` holds at least `needed` elements of `bytesPerElement` bytes
 * (default 4; 2 for f16). `what` reads like `matmul: binding "a"` and `shape` explains the count
 * (`[m, k] = [32, 17]`).
 */
export function requireLength(
  what: string,
  view: TensorView,
  needed: number,
  shape: string,
  bytesPerElement = 4,
): void {
  const have = Math.floor(resolveView(view).size / bytesPerElement);
  if (have < needed) {
    throw new RangeError(`${what} holds ${have} elements, needs ${shape} = ${needed}`);
  }
}

/** Throw a `RangeError` unless every named dimension is a positive integer (zero allowed if said). */
export function requireDims(
  kernel: string,
  dims: Record<string, number>,
  options: { allowZero?: boolean } = {},
): void {
  for (const [name, value] of Object.entries(dims)) {
    const ok = Number.isInteger(value) && (options.allowZero ? value >= 0 : value > 0) &&
      value < 2 ** 32;
    if (!ok) {
      const kind = options.allowZero ? "a non-negative" : "a positive";
      throw new RangeError(`${kernel}: ${name} must be ${kind} integer below 2^32, got ${value}`);
    }
  }
}

/**
 * A bind group for `pipeline`: binding 0 is the uniform buffer holding `params` (u32 words), then
 * each tensor view at bindings 1, 2, ...
 */
export function bindTensors(
  rt: GpuRuntime,
  pipeline: GPUComputePipeline,
  params: readonly number[],
  views: readonly TensorView[],
): GPUBindGroup {
  const uniform = rt.uniform(params);
  const entries = [{ buffer: uniform, offset: 0, size: uniform.size }];
  const limit = rt.limits.maxStorageBufferBindingSize;
  views.forEach((view, i) => {
    const { buffer, offset, size } = resolveView(view);
    const bytes = Math.ceil(size / 4) * 4;
    if (bytes > limit) {
      throw new RangeError(
        `${pipeline.label}: binding ${i + 1} ("${buffer.label}", offset ${offset}) is ${bytes} ` +
          `bytes, over the device's maxStorageBufferBindingSize ${limit}: pass a view with an ` +
          `explicit size, or split the work into row ranges`,
      );
    }
    entries.push({ buffer, offset, size: bytes });
  });
  return rt.bindGroup(pipeline, entries);
}

/** One block of {@link rowBlocks}: rows `[start, start + rows)`. */
export interface RowBlock {
  readonly start: number;
  readonly rows: number;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/**
 * Splits `rows` rows of `rowBytes` bytes into consecutive blocks that each fit in one storage
 * binding of `maxBytes` and start at a multiple of `alignBytes` (the device's
 * `minStorageBufferOffsetAlignment`) from the tensor's start; every block but the last has the
 * same size, a multiple of `multipleOf` rows (default 1). One block when the whole tensor fits.
 * Throws a RangeError when not even one aligned
 * group of rows fits.
 */
export function rowBlocks(
  rows: number,
  rowBytes: number,
  options: { maxBytes: number; alignBytes: number; multipleOf?: number },
): RowBlock[] {
  requireDims("rowBlocks", { rows, rowBytes });
  const { maxBytes, alignBytes } = options;
  if (rows * rowBytes <= maxBytes) return [{ start: 0, rows }];
  const aligned = alignBytes / gcd(alignBytes, rowBytes);
  const multiple = options.multipleOf ?? 1;
  const step = aligned / gcd(aligned, multiple) * multiple;
  const per = Math.floor(maxBytes / rowBytes / step) * step;
  if (per < 1) {
    throw new RangeError(
      `rows of ${rowBytes} bytes cannot be split into blocks of at most ${maxBytes} bytes ` +
        `starting at multiples of ${alignBytes} bytes (${step} rows at least)`,
    );
  }
  const out: RowBlock[] = [];
  for (let start = 0; start < rows; start += per) {
    out.push({ start, rows: Math.min(per, rows - start) });
  }
  return out;
}

/** `ceil(a / b)` for positive integers. */
export function ceilDiv(a: number, b: number): number {
  return Math.floor((a + b - 1) / b);
}

/** Largest workgroup count per grid dimension guaranteed by WebGPU. */
export const MAX_GRID = 65535;

/**
 * Grid for `workgroups` workgroups of a one-dimensional kernel: `[x, y]` with `x ≤ 65535`.
 * Kernels recover the linear workgroup index as `wid.x + wid.y * nwg.x` and skip indices past the
 * end.
 */
export function grid1d(workgroups: number): [number, number] {
  if (workgroups <= MAX_GRID) return [Math.max(1, workgroups), 1];
  const y = ceilDiv(workgroups, MAX_GRID);
  return [ceilDiv(workgroups, y), y];
}

/**
 * WGSL that sums `array[0..wg)` into `array[0]` in a fixed tree (pairs `li`, `li + s` for halving
 * `s`), a barrier after each level so every invocation may read `array[0]` after it. `wg` must be
 * a power of two; the order never changes, so the bits do not either.
 */
export function sumTreeWgsl(wg: number, array: string): string {
  const steps: string[] = [];
  for (let s = wg / 2; s >= 1; s /= 2) {
    steps.push(`  if (li < ${s}u) { ${array}[li] = ${array}[li] + ${array}[li + ${s}u]; }
  workgroupBarrier();`);
  }
  return steps.join("\n");
}

/** Encode one dispatch: set pipeline and bind group, dispatch `[x, y, z]` workgroups. */
export function dispatch(
  pass: GPUComputePassEncoder,
  pipeline: GPUComputePipeline,
  bindGroup: GPUBindGroup,
  workgroups: readonly [number, number?, number?],
): void {
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.dispatchWorkgroups(workgroups[0], workgroups[1] ?? 1, workgroups[2] ?? 1);
}

/**
 * WGSL entry-point header of a one-dimensional kernel: declares `main` with workgroup size `wg`
 * and binds `i`, the linear invocation index over a {@link grid1d} grid. Follow with the body
 * (which may `return` early) and `}`.
 *
 * With `items` (elements per invocation, for CPU adapters where each workgroup costs a launch),
 * `main` calls the body, emitted as `fn item(i: u32)`, for `items` indices `wg` apart; the body
 * then sees only `i` and module-scope declarations. Dispatch with the same `items`.
 */
export function main1d(wg: number, items?: number): string {
  const head = `@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {`;
  if (items === undefined) {
    return `${head}
  let i = (wid.x + wid.y * nwg.x) * ${wg}u + li;`;
  }
  return `${head}
  let first = (wid.x + wid.y * nwg.x) * ${wg * items}u + li;
  for (var it = 0u; it < ${items}u; it++) { item(first + it * ${wg}u); }
}

fn item(i: u32) {`;
}

/**
 * Dispatch enough workgroups of size `wg` for `threads` indices of a {@link main1d} kernel
 * handling `items` indices per invocation (default 1).
 */
export function dispatch1d(
  pass: GPUComputePassEncoder,
  pipeline: GPUComputePipeline,
  bindGroup: GPUBindGroup,
  threads: number,
  wg: number,
  items = 1,
): void {
  dispatch(pass, pipeline, bindGroup, grid1d(ceilDiv(Math.max(1, threads), wg * items)));
}

/**
 * The base of the kernels that give each invocation of a 1-D grid `items` consecutive elements
 * (cast, elementwise, embedding, rope, swiglu): the runtime that builds and caches their
 * pipelines, and the launch shape, the device profile's unless a test or a bench pins it.
 */
export abstract class ElementKernel {
  /** The runtime that builds and caches the pipelines. */
  protected readonly rt: GpuRuntime;
  /** Invocations per workgroup. */
  protected readonly wg: number;
  /** Elements per invocation. */
  protected readonly items: number;

  /** Defaults: the profile's `workgroupSize` and `itemsPerInvocation`. */
  constructor(
    rt: GpuRuntime,
    workgroupSize: number = rt.profile.workgroupSize,
    items: number = rt.profile.itemsPerInvocation,
  ) {
    this.rt = rt;
    this.wg = workgroupSize;
    this.items = items;
  }
}

/** A piece of one segment: concatenated elements `[start, start + size)` of segment `segment`. */
export interface SegmentPart {
  segment: number;
  start: number;
  size: number;
}

/**
 * Covers the concatenation of `segments` (consecutive `{start, size}` ranges of one sequence,
 * e.g. the parameters split into GPU buffers) for a reduction that works in granules of `granule` floats
 * (sumsq chunks, digest blocks), so that its result does not depend on the segmentation: a
 * stretch with one part is a run of whole granules inside one segment (the last may be short at
 * the very end); a stretch with several parts is one granule straddling segments, which the
 * caller gathers into scratch first. With one segment there is one stretch, `[0, total)`.
 */
export function granuleStretches(
  segments: readonly { start: number; size: number }[],
  granule: number,
): { start: number; size: number; parts: SegmentPart[] }[] {
  if (!Number.isInteger(granule) || granule < 1) {
    throw new RangeError(`granule must be a positive integer, got ${granule}`);
  }
  const last = segments[segments.length - 1];
  const total = last ? last.start + last.size : 0;
  const out: { start: number; size: number; parts: SegmentPart[] }[] = [];
  let pos = 0;
  while (pos < total) {
    let s = 0;
    while (segments[s].start + segments[s].size <= pos) s++;
    const segEnd = segments[s].start + segments[s].size;
    const granuleEnd = Math.min(pos + granule, total);
    if (granuleEnd <= segEnd) {
      const runEnd = segEnd === total
        ? total
        : pos + Math.floor((segEnd - pos) / granule) * granule;
      out.push({
        start: pos,
        size: runEnd - pos,
        parts: [{ segment: s, start: pos, size: runEnd - pos }],
      });
      pos = runEnd;
      continue;
    }
    const parts: SegmentPart[] = [];
    for (let p = pos; p < granuleEnd; s++) {
      const stop = Math.min(granuleEnd, segments[s].start + segments[s].size);
      parts.push({ segment: s, start: p, size: stop - p });
      p = stop;
    }
    out.push({ start: pos, size: granuleEnd - pos, parts });
    pos = granuleEnd;
  }
  return out;
}
