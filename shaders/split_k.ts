/**
 * Split-K for the workgroup-tiled matmul: which products cut their reduction over K into slices,
 * and into how many. A weight gradient `dW = Xᵀ·dY` has a small output (`[out, in]`, 256 × 256 on
 * the 20M model: 16 tiles of 64 × 64) and a long K (B·T tokens, 16,384), so the unsplit kernel
 * runs 16 workgroups on a GPU with 132 multiprocessors, each walking all of K. Cut into S slices,
 * S workgroups per tile each sum one slice into a scratch of f32 partials `[batch, S, m, n]`, and
 * a second kernel adds the S partials of each output in slice order.
 *
 * Pure logic: the plan is a function of the profile's policy, the tiling, the shape and the
 * adapter's limits (which never bind when the policy's scratch budget is at most 128 MiB).
 *
 * @example The 20M model's weight gradient at 16 × 1024 tokens under the GPU profile
 * ```ts
 * import { GPU_PROFILE } from "./profile.ts";
 * import { splitKPlan } from "./split_k.ts";
 * const limits = { maxStorageBufferBindingSize: 2 ** 30, maxBufferSize: 2 ** 30 };
 * const shape = { m: 256, n: 256, k: 16384, batch: 1 };
 * const plan = splitKPlan(GPU_PROFILE.splitK, GPU_PROFILE.matmul, shape, limits);
 * // 16 tiles × 32 slices = 512 workgroups, each summing 512 tokens.
 * if (plan.slices !== 32 || plan.sliceK !== 512) throw new Error(JSON.stringify(plan));
 * ```
 *
 * @module
 */

import type { MatmulTiling, SplitKPolicy } from "./profile.ts";

/** Largest workgroup count per grid dimension (kernel.ts's `MAX_GRID`): slices × batch in z. */
const MAX_GRID_Z = 65535;

/** Most scratch bytes a policy may ask for: the `maxStorageBufferBindingSize` WebGPU guarantees. */
export const MAX_SPLIT_K_SCRATCH = 128 * 2 ** 20;

/** The shape of one (batched) matmul. */
export interface SplitKShape {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly batch: number;
}

/** The adapter limits a split must respect: the partials are one buffer bound whole. */
export interface SplitKLimits {
  readonly maxStorageBufferBindingSize: number;
  readonly maxBufferSize: number;
}

/**
 * How one matmul runs: `slices` workgroups along K per output tile, each summing `sliceK`
 * consecutive K indices (the last slice the rest). `slices: 1, sliceK: k` is unsplit.
 */
export interface SplitKPlan {
  readonly slices: number;
  readonly sliceK: number;
}

/** Throw a RangeError naming the field unless `policy` is a usable split-K policy. */
export function validateSplitKPolicy(policy: SplitKPolicy): void {
  const bad = (why: string) => new RangeError(`split-K policy ${JSON.stringify(policy)}: ${why}`);
  const { targetWorkgroups, minSliceK, scratchBytes } = policy;
  if (!Number.isInteger(targetWorkgroups) || targetWorkgroups < 0) {
    throw bad("targetWorkgroups must be a non-negative integer (0: split-K off)");
  }
  if (targetWorkgroups === 0) return;
  if (!Number.isInteger(minSliceK) || minSliceK < 1) {
    throw bad("minSliceK must be a positive integer");
  }
  if (!Number.isInteger(scratchBytes) || scratchBytes < 1 || scratchBytes > MAX_SPLIT_K_SCRATCH) {
    throw bad(`scratchBytes must be an integer in 1..${MAX_SPLIT_K_SCRATCH} (128 MiB)`);
  }
}

/**
 * The split the policy picks for `shape` under `tiling`: none unless the tiling is workgroup-tiled,
 * the output tiles (times the batch) are fewer than `targetWorkgroups`, and K holds two slices of
 * `minSliceK`. Then S is the smallest power of two with `tiles · S ≥ targetWorkgroups`, halved
 * until each slice holds `minSliceK`, the partials fit the scratch budget and the limits, and
 * `batch · S` fits a grid dimension; each slice is a whole number of tile depths
 * (`sliceK = ⌈k / S⌉` rounded up to `depth`), so a ragged K leaves the last slice short and may
 * need fewer than S slices.
 */
export function splitKPlan(
  policy: SplitKPolicy,
  tiling: MatmulTiling,
  shape: SplitKShape,
  limits: SplitKLimits,
): SplitKPlan {
  const { m, n, k, batch } = shape;
  const unsplit = { slices: 1, sliceK: k };
  if (tiling.strategy === "register" || policy.targetWorkgroups === 0) return unsplit;
  const tileRows = tiling.rows * tiling.workgroup[1], tileCols = tiling.cols * tiling.workgroup[0];
  const tiles = Math.ceil(m / tileRows) * Math.ceil(n / tileCols) * batch;
  if (tiles >= policy.targetWorkgroups) return unsplit;
  const depth = tiling.depth;
  const minSlice = Math.ceil(Math.max(policy.minSliceK, depth) / depth) * depth;
  const sliceBytes = batch * m * n * 4;
  const budget = Math.min(
    policy.scratchBytes,
    limits.maxStorageBufferBindingSize,
    limits.maxBufferSize,
  );
  const cap = Math.min(
    Math.floor(k / minSlice),
    Math.floor(budget / sliceBytes),
    Math.floor(MAX_GRID_Z / batch),
  );
  let slices = 1;
  while (tiles * slices < policy.targetWorkgroups) slices *= 2;
  while (slices > cap) slices /= 2;
  if (slices < 2) return unsplit;
  const sliceK = Math.ceil(Math.ceil(k / slices) / depth) * depth;
  const used = Math.ceil(k / sliceK);
  return used < 2 ? unsplit : { slices: used, sliceK };
}

/**
 * The plan for a slice length a caller pins (`MatmulArgs.sliceK`: the parts of one product split
 * over rows or columns take the whole product's slicing, so they give its bits). `sliceK ≥ k`
 * runs unsplit; a shorter one must be a positive multiple of a tiled tiling's depth and its
 * partials must fit the limits and the grid. Throws a RangeError saying which rule it breaks.
 */
export function pinnedSplitK(
  sliceK: number,
  tiling: MatmulTiling,
  shape: SplitKShape,
  limits: SplitKLimits,
): SplitKPlan {
  const { m, n, k, batch } = shape;
  const what = `matmul [m, n, k] = [${m}, ${n}, ${k}]: sliceK ${sliceK}`;
  if (!Number.isInteger(sliceK) || sliceK < 1) {
    throw new RangeError(`${what} must be a positive integer`);
  }
  if (sliceK >= k) return { slices: 1, sliceK: k };
  if (tiling.strategy === "register") {
    throw new RangeError(`${what} splits K, which only the workgroup-tiled kernel does`);
  }
  if (sliceK % tiling.depth !== 0) {
    throw new RangeError(`${what} is not a multiple of the tiling depth ${tiling.depth}`);
  }
  const slices = Math.ceil(k / sliceK);
  const bytes = slices * batch * m * n * 4;
  const limit = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  if (bytes > limit) {
    throw new RangeError(`${what} needs ${bytes} bytes of partial sums, over the limit ${limit}`);
  }
  if (slices * batch > MAX_GRID_Z) {
    throw new RangeError(`${what}: ${slices} slices × batch ${batch} exceed ${MAX_GRID_Z}`);
  }
  return { slices, sliceK };
}
