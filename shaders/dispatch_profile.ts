/**
 * Per-dispatch GPU timing for profiling a whole training step without touching the code that
 * encodes it. A profiled runtime (`GpuRuntime.create({ profileDispatches: true })`) hands out a
 * {@link ProfilingPass} as every step's `pass`: each dispatch then runs in a compute pass of its
 * own, timed with GPU timestamps and named after its pipeline, so a step's time splits by kernel.
 * One pass per dispatch adds the pass boundaries' cost, so totals run a little over an unprofiled
 * step's; the split is what it is for.
 *
 * @module
 */

/** GPU time of one timed section (a dispatch, when profiling dispatches). */
export interface SectionTiming {
  /** The section's name: the pipeline's key when profiling dispatches. */
  readonly name: string;
  /** Milliseconds between the start and the end of its compute pass, as the GPU measured. */
  readonly ms: number;
}

/** Opens a timed compute pass named `name` (a step's `timed`). */
export type OpenTimedPass = (name: string) => GPUComputePassEncoder;

/**
 * Stands in for a compute pass: remembers the pipeline and bind groups set on it and, at each
 * dispatch, replays them into a fresh timed pass. It implements the part of
 * `GPUComputePassEncoder` the kernels use (shaders/kernel.ts `dispatch`); anything else throws.
 */
export class ProfilingPass {
  readonly #open: OpenTimedPass;
  #pipeline: GPUComputePipeline | undefined;
  readonly #groups = new Map<number, GPUBindGroup | null>();

  constructor(open: OpenTimedPass) {
    this.#open = open;
  }

  /** This object, typed as the pass the kernels expect. */
  asPass(): GPUComputePassEncoder {
    return this as unknown as GPUComputePassEncoder;
  }

  setPipeline(pipeline: GPUComputePipeline): void {
    this.#pipeline = pipeline;
  }

  setBindGroup(index: number, group: GPUBindGroup | null): void {
    this.#groups.set(index, group);
  }

  dispatchWorkgroups(x: number, y = 1, z = 1): void {
    if (!this.#pipeline) throw new Error("dispatchWorkgroups before setPipeline");
    const pass = this.#open(this.#pipeline.label || "unlabelled pipeline");
    pass.setPipeline(this.#pipeline);
    for (const [index, group] of this.#groups) pass.setBindGroup(index, group);
    pass.dispatchWorkgroups(x, y, z);
  }

  /** Nothing to end: each dispatch's pass is ended by the step when the next one opens. */
  end(): void {}
}

/** One row of {@link summarizeTimings}: a pipeline's dispatches in the profiled steps. */
export interface KernelTotal {
  readonly name: string;
  readonly dispatches: number;
  readonly ms: number;
  /** Of the sum over every kernel (0..1). */
  readonly share: number;
}

/**
 * Total time and count per section name, largest first. `group` maps a name to the row it counts
 * in (e.g. dropping a tiling suffix), the name itself by default.
 */
export function summarizeTimings(
  timings: readonly SectionTiming[],
  group: (name: string) => string = (name) => name,
): KernelTotal[] {
  const rows = new Map<string, { dispatches: number; ms: number }>();
  let total = 0;
  for (const t of timings) {
    const key = group(t.name);
    const row = rows.get(key) ?? { dispatches: 0, ms: 0 };
    row.dispatches++;
    row.ms += t.ms;
    total += t.ms;
    rows.set(key, row);
  }
  return [...rows].map(([name, r]) => ({ name, ...r, share: total > 0 ? r.ms / total : 0 }))
    .sort((a, b) => b.ms - a.ms || a.name.localeCompare(b.name));
}
