/**
 * Tuning profiles: the kernel shapes (tile sizes, vector widths, workgroup sizes) chosen per
 * adapter. CPU rasterizers (Mesa llvmpipe / lavapipe, SwiftShader, WARP) run each invocation as a
 * SIMD lane on a CPU core: workgroup memory and barriers are slow there, while many outputs per
 * invocation held in vec4 registers are fast. Discrete GPUs want the opposite: tiles staged in
 * workgroup memory shared by many invocations. Every field is a parameter a test can vary.
 *
 * @module
 */

/**
 * Matmul kernel shape. `"register"`: each invocation computes `rows × cols` outputs held in vec4
 * registers, reading operands straight from storage (CPU adapters). `"tiled"`: a workgroup stages
 * `tile × depth` slices of both operands in workgroup memory; each invocation computes
 * `rows × cols` outputs of the tile (GPUs). `"tiled-vec4"`: the same staging, with each
 * invocation's outputs in 4×4 blocks read from workgroup memory as vec4 and the next slice
 * loaded while the current one is multiplied (`rows`, `cols` multiples of 4; the same bits as
 * `"tiled"`).
 */
export interface MatmulTiling {
  /** Which kernel family. */
  readonly strategy: "register" | "tiled" | "tiled-vec4";
  /** Output rows per invocation (register and tiled: 1..16; tiled-vec4: 4, 8, 12 or 16). */
  readonly rows: number;
  /** Output columns per invocation; a multiple of 4 for the register strategy. */
  readonly cols: number;
  /** Workgroup size `[x, y]`: x walks output columns, y output rows. */
  readonly workgroup: readonly [number, number];
  /** Tiled strategies only: reduction depth staged per barrier (the K slice). */
  readonly depth: number;
  /**
   * `tiled-vec4` only: slices of workgroup memory (default 1). With 2 (double buffering) the
   * next slice is staged into the other buffer while the current one is multiplied, so each
   * slice needs one barrier instead of two, for twice the workgroup memory; the same bits.
   */
  readonly buffers?: 1 | 2;
  /**
   * `tiled-vec4` only: the K loop over a staged slice written out `depth` times with constant
   * offsets (`--tiling` flag `u`), so no loop counter or per-step address arithmetic is left for
   * the driver to keep; the same FMAs in the same order, the same bits.
   */
  readonly unrollK?: true;
  /**
   * `tiled-vec4` only (`depth` a multiple of 4): each invocation fetches its staged elements from
   * storage four at a time, one vec4 (16-byte) load along the operand's stored-contiguous axis
   * (`--tiling` flag `g4`), on calls whose rows are whole vec4 (the other calls run the scalar
   * fetch); the same staged values, the same bits.
   */
  readonly vec4Loads?: true;
  /**
   * `tiled-vec4` only, one buffer: workgroup memory as one array per staged K row (`--tiling`
   * flag `kr`), so an unrolled read's only dynamic index is the invocation's own, the same at
   * every K step, and the bounds clamp naga adds to dynamic workgroup indices is computed once a
   * slice instead of once a read; the same staged values, the same bits.
   */
  readonly kRows?: true;
}

/**
 * One row of a profile's matmul table: products of a listed layout that launch at least
 * `minWorkgroups` workgroups of the profile's reference tiling (`matmul`; output tiles × batch)
 * run `tiling` instead. Counted in reference tiles so that every rule, whatever its own tile,
 * speaks of the same output sizes, and so that split-K (which plans with the reference) and the
 * table can be kept apart: a rule at or above the split-K target never claims a product the
 * policy splits.
 */
export interface MatmulShapeRule {
  /** The class's name, printed by benchmarks (`"wide nn"`). */
  readonly name: string;
  /** Operand layouts the rule applies to. */
  readonly layouts: readonly ("nn" | "nt" | "tn")[];
  /** Fewest workgroups of the reference tiling (tiles × batch) for the rule to apply. */
  readonly minWorkgroups: number;
  /** The tiling to run: workgroup-tiled, its depth dividing the reference tiling's. */
  readonly tiling: MatmulTiling;
}

/**
 * Attention kernel shape (shaders/attention.ts). `"rows"`: one invocation per query row (forward,
 * dQ) or key row (dK/dV), each streaming the rows it needs from storage (CPU adapters, where
 * workgroup memory is no faster than storage). `"tiled"`: a workgroup of `rows` invocations owns
 * `rows` consecutive query (or key) rows of one head and stages the rows they all read, `staged`
 * at a time, in workgroup memory (shaders/attention_tiled.ts; GPUs), for heads up to
 * `maxHeadDim`. Both give the same bits, so the choice changes times only.
 */
export interface AttentionTiling {
  /** Which kernel family. */
  readonly strategy: "rows" | "tiled";
  /** Tiled only: rows owned per workgroup, one per invocation (the workgroup size). */
  readonly rows: number;
  /**
   * Tiled only: most rows staged in workgroup memory per barrier; fewer when a head size D would
   * exceed the device's `maxComputeWorkgroupStorageSize`.
   */
  readonly staged: number;
  /**
   * Tiled only, forward and dQ: query rows per invocation (default 1), so each staged key and
   * value row read from workgroup memory serves that many queries; the workgroup then owns
   * `rows · queries` query rows. The same bits for every value. No profile sets it: on an H200
   * (2026-11-30) 2 and 4 were slower than 1 at D = 32 and D = 64 alike.
   */
  readonly queries?: number;
  /**
   * Tiled only: each staged row its own workgroup array (`ks[s][j]`, not `ks[s·D/4 + j]`;
   * `--attention`/`--tiles` suffix `,ra`). naga clamps every dynamic workgroup index, so a flat
   * index costs a clamp per vec4 read; with a row per array the one dynamic index, the row, is
   * clamped once for all of its reads. The same bits; not in any profile until a GPU measures it.
   */
  readonly rowArrays?: true;
  /**
   * Tiled only: the largest head size D that runs the tiled kernels; larger heads run the row
   * kernels (see {@link attentionStrategyFor}). Absent: every D runs tiled.
   */
  readonly maxHeadDim?: number;
}

/**
 * The kernels attention runs at head size `d`: `"rows"` for a row tiling, or for a tiled one whose
 * `maxHeadDim` is below `d`; else `"tiled"`. Pure: the same for every client with the profile.
 *
 * @example
 * ```ts
 * import { attentionStrategyFor, GPU_PROFILE } from "./profile.ts";
 * if (attentionStrategyFor(GPU_PROFILE.attention, 32) !== "tiled") throw new Error();
 * if (attentionStrategyFor(GPU_PROFILE.attention, 64) !== "rows") throw new Error();
 * ```
 */
export function attentionStrategyFor(tiling: AttentionTiling, d: number): "rows" | "tiled" {
  if (tiling.strategy === "rows") return "rows";
  return tiling.maxHeadDim === undefined || d <= tiling.maxHeadDim ? "tiled" : "rows";
}

/** Everything a kernel needs to pick its shape on one adapter. */
export interface TuningProfile {
  /** Human-readable name (`"cpu"` or `"gpu"`), printed by benchmarks. */
  readonly name: string;
  /** True on a CPU rasterizer (llvmpipe, lavapipe, SwiftShader, WARP). */
  readonly cpu: boolean;
  /**
   * Matmul kernel shape: the reference tiling. It runs every product no `matmulByShape` rule
   * claims, and split-K always plans its slices with it (shaders/matmul_picker.ts).
   */
  readonly matmul: MatmulTiling;
  /**
   * Tilings for classes of matmul shapes, first match wins (shaders/matmul_picker.ts); empty:
   * `matmul` for every shape. Every tiled tiling gives the same bits, so the table changes
   * times, never results.
   */
  readonly matmulByShape: readonly MatmulShapeRule[];
  /** Invocations per workgroup of the one-dimensional kernels (elementwise, norms, losses). */
  readonly workgroupSize: number;
  /**
   * Elements each invocation of an elementwise-style kernel handles. On CPU adapters every
   * workgroup is a separate launch (about a microsecond on llvmpipe), so large arrays are covered
   * by fewer, longer invocations.
   */
  readonly itemsPerInvocation: number;
  /**
   * How a kernel reduces a long row (the cross-entropy's log-sum-exp over the vocabulary, the
   * RMSNorm weight gradient's sum over tokens):
   * `"invocation"`, one invocation walks each row (CPU adapters: a row is a long vector loop and
   * workgroup barriers are slow); `"workgroup"`, a workgroup shares each row and reduces it in
   * workgroup memory (GPUs: one invocation per row leaves all but one multiprocessor idle and
   * reads the logits uncoalesced; on an H200 it was 57% of the 20M model's step).
   */
  readonly rowReduction: "invocation" | "workgroup";
  /**
   * Most bytes of one LM-head logits chunk (model/lm_head.ts), which sets the rows of the head's
   * matmuls and of the cross-entropy per dispatch. CPU adapters keep it cache-sized; GPUs want
   * thousands of rows per dispatch to fill their multiprocessors (at 256 rows, the head's
   * input-gradient matmul ran 16 workgroups on an H200's 132 multiprocessors).
   */
  readonly logitsChunkBytes: number;
  /**
   * When a tiled matmul splits its reduction over K across workgroups (shaders/split_k.ts): a
   * product with a small output and a long K (the weight gradients, K = B·T tokens) otherwise
   * runs a few workgroups on a GPU with a hundred multiprocessors.
   */
  readonly splitK: SplitKPolicy;
  /**
   * Invocations a kernel may assume run in lockstep (a warp: 32 on NVIDIA). A kernel whose
   * invocations each walk rows in one shared order from different starts (the attention's key
   * and value gradients: key `s` walks the queries `s…T−1`) starts each such group at its
   * first member's row, the others skipping rows before their own, so each load of the walk is
   * one address for the whole warp, not one per invocation. 1: no alignment (CPU adapters:
   * llvmpipe loads lane by lane whatever the addresses).
   */
  readonly lockstep: number;
  /** Attention kernel shape, per head size D (`maxHeadDim`). */
  readonly attention: AttentionTiling;
  /**
   * Hand a step's work to the queue a layer at a time (`GpuStep.flush`), so the GPU runs the
   * first layers while the host still encodes the rest; false: one submission per step. On
   * lavapipe a submission waits for the one before it to finish (9 ms behind a busy queue,
   * 2026-11-30), so there it would serialise host and device instead of overlapping them.
   */
  readonly flushLayers: boolean;
}

/**
 * Split-K policy of a profile: split when a matmul's output tiles are fewer than
 * `targetWorkgroups` and K holds at least two slices of `minSliceK`. `targetWorkgroups: 0` turns
 * split-K off.
 */
export interface SplitKPolicy {
  /** Workgroups a matmul should launch; fewer output tiles than this split K. 0: never split. */
  readonly targetWorkgroups: number;
  /** Fewest K elements per slice: below this the partial sums cost more than they save. */
  readonly minSliceK: number;
  /**
   * Most bytes of f32 partial sums one matmul may hold (`slices · batch · m · n · 4`). At most
   * 128 MiB, the `maxStorageBufferBindingSize` every WebGPU device has, so the slicing (and so
   * the bits) depends on the profile alone, not on the adapter's limits.
   */
  readonly scratchBytes: number;
}

/** Split-K off: the policy of profiles whose matmul never splits K. */
export const SPLIT_K_OFF: SplitKPolicy = { targetWorkgroups: 0, minSliceK: 0, scratchBytes: 0 };

/**
 * Register-blocked matmul for CPU adapters: 16×32 outputs per invocation, 8×8 invocations. On
 * llvmpipe loads, not FMAs, bound the matmul (each one a loop over the SIMD lanes), so the block
 * is as large as the tiling allows: 1.4-2.5x the FMAs per second of 8×16 in
 * `bench/matmul_cpu.ts` (docs/benchmarks.md), although its accumulators spill.
 */
export const CPU_PROFILE: TuningProfile = {
  name: "cpu",
  cpu: true,
  matmul: { strategy: "register", rows: 16, cols: 32, workgroup: [8, 8], depth: 0 },
  matmulByShape: [],
  workgroupSize: 64,
  itemsPerInvocation: 16,
  rowReduction: "invocation",
  logitsChunkBytes: 32 * 2 ** 20,
  // Two lavapipe threads are kept busy by a handful of workgroups already.
  splitK: SPLIT_K_OFF,
  lockstep: 1,
  attention: { strategy: "rows", rows: 0, staged: 0 },
  flushLayers: false,
};

/**
 * Reference workgroups (64 × 64 tiles) from which the GPU profile's `wide` rules apply: 528 tiles
 * of 128 × 128, four per multiprocessor of an H100/H200's 132. First chosen so that smaller
 * products kept the 64 × 64 tile; the H200's timings of 2026-11-30 found 8×8 tilings faster below
 * it too (the `medium` rules), so it now parts two sets of measured tilings.
 */
export const GPU_WIDE_WORKGROUPS = 4 * 4 * 132;

/**
 * `tiled-vec4` tiling with `rows × cols` outputs per invocation; `buffers: 2` double-buffers its
 * workgroup memory (a single-buffered tiling carries no `buffers` field); `variants` turns on the
 * unrolled K loop and the vec4 storage loads (fields left out when off, so a plain tiling's JSON,
 * which pipeline keys and table pins compare, is what it was).
 */
export const vec4Tiling = (
  rows: number,
  cols: number,
  workgroup: readonly [number, number],
  depth: number,
  buffers: 1 | 2 = 1,
  variants: {
    readonly unrollK?: boolean;
    readonly vec4Loads?: boolean;
    readonly kRows?: boolean;
  } = {},
): MatmulTiling => ({
  strategy: "tiled-vec4",
  rows,
  cols,
  workgroup,
  depth,
  ...(buffers === 2 ? { buffers } : {}),
  ...(variants.unrollK ? { unrollK: true } : {}),
  ...(variants.vec4Loads ? { vec4Loads: true } : {}),
  ...(variants.kRows ? { kRows: true } : {}),
});

/**
 * Reference workgroups from which the GPU profile's `medium` rules apply: its split-K target
 * (`splitK.targetWorkgroups`), so no rule claims a product split-K may split. Those, the `narrow`
 * products, run the reference tiling, the one split-K plans with.
 */
export const GPU_MEDIUM_WORKGROUPS = 512;

/**
 * The GPU profile's matmul table: one rule per layout and size class, `wide` from
 * `GPU_WIDE_WORKGROUPS` reference tiles, `medium` from `GPU_MEDIUM_WORKGROUPS`; `narrow` products
 * (fewer tiles) keep the reference. Measured on an H200 (2026-11-30, at 22bcb5e,
 * `bench/matmul_gpu.ts --reps 10 --shapes 20m-4x256,20m-16x1024,1b-1x128`: every distinct matmul of
 * those steps under each candidate tiling), the class's total under the reference or the old rule
 * against the rule's tiling: medium nn 5.18 → 4.06 ms (1.27x), medium nt 4.72 → 3.98 (1.19x),
 * medium tn 9.22 → 7.57 (1.22x), wide nt 18.53 → 15.17 (1.22x, 8×8 on 16×16, depth 16 before);
 * each the class's fastest single tiling. `wide nn` (one shape, 2.37 → 2.26 ms, 1.05x; 8×8 on
 * 16×8 before) follows the same day's 4096³ sweep too, which ranks 8×8 on 16×16, depth 8 first
 * for nn (22.7 against 21.8 TFLOP/s) and nt (22.0); `wide tn` was already the class's fastest (and
 * the sweep's, 22.7 TFLOP/s). The narrow classes gained at most 1.07x and stay on the reference
 * (docs/kernels.md, "Tilings by shape class").
 */
export const GPU_MATMUL_TABLE: readonly MatmulShapeRule[] = [
  gpuRule("wide", "nn", vec4Tiling(8, 8, [16, 16], 8)),
  gpuRule("wide", "nt", vec4Tiling(8, 8, [16, 16], 8)),
  gpuRule("wide", "tn", vec4Tiling(8, 8, [16, 16], 16)),
  gpuRule("medium", "nn", vec4Tiling(8, 8, [16, 16], 8)),
  gpuRule("medium", "nt", vec4Tiling(8, 8, [16, 8], 8)),
  gpuRule("medium", "tn", vec4Tiling(8, 8, [16, 8], 8)),
];

/** A rule of {@link GPU_MATMUL_TABLE}: `tiling` for one layout's wide or medium products. */
function gpuRule(
  size: "wide" | "medium",
  layout: MatmulShapeRule["layouts"][number],
  tiling: MatmulTiling,
): MatmulShapeRule {
  return {
    name: `${size} ${layout}`,
    layouts: [layout],
    minWorkgroups: size === "wide" ? GPU_WIDE_WORKGROUPS : GPU_MEDIUM_WORKGROUPS,
    tiling,
  };
}

/**
 * The GPU profile's attention tiles: 64 query rows per workgroup share each staged key/value row,
 * 64x fewer storage reads of K and V; 64 staged rows of D = 32 take 16 KiB (K and V), WebGPU's
 * default workgroup-memory limit. Measured on an H200 (2026-11-30, `bench/attention_gpu.ts`, rows
 * ÷ tiled, above 1 the tiles win): D = 32 (the 20M model, B 16, T 1024, H = KVH = 8) forward 1.85x,
 * backward 1.43x (1.30x / 1.00x in packed documents of 300), the whole 20M step at 16 x 1024 104.9
 * ms against 117.4; D = 64 (the 1B's heads, B 4, T 2048, H 32, KVH 8) forward 0.80x, backward 0.68x
 * (8.07 / 34.7 ms on rows, 10.1 / 50.8 tiled). So the profile runs them for D ≤ 32 only; D = 48 and
 * D = 128 were not measured and take the row kernels.
 */
export const GPU_ATTENTION_TILES: AttentionTiling = { strategy: "tiled", rows: 64, staged: 64 };

/**
 * Workgroup-tiled matmul for GPUs: 64×64 tiles, 16 deep, 16×16 invocations of 4×4 outputs, read
 * from workgroup memory as vec4 with the next slice loaded during the current one (`tiled-vec4`,
 * the same bits as the scalar `tiled`). On an H200 (2026-11-28) it ran the 20M step at 16 x 1024
 * in 113 ms against the scalar kernel's 156 ms, and 4096³ at 16.0 / 16.4 / 17.6 TFLOP/s (nn / nt /
 * tn) against 4.4-7.5 / 12.8 / 13.2 (docs/benchmarks.md). Its K loop is written out (`unrollK`,
 * the same bits again): on the H200 (2026-11-30, second lease) that took 4096³ from 18.3 / 19.1 /
 * 20.4 to 26.6 / 28.3 / 29.2 TFLOP/s, and the 20M step at 16 x 1024 run with it for every shape
 * from 68.3 to 60.6 ms (PyTorch 52.7). Split-K aims at 512 workgroups (about
 * four per multiprocessor on a 132-multiprocessor H100/H200) with slices of at least 256 (16 tiles
 * deep) and at most 64 MiB of partial sums. Products with at least `GPU_MEDIUM_WORKGROUPS` output
 * tiles run an 8×8 tiling of {@link GPU_MATMUL_TABLE} instead (the same bits).
 */
export const GPU_PROFILE: TuningProfile = {
  name: "gpu",
  cpu: false,
  matmul: vec4Tiling(4, 4, [16, 16], 16, 1, { unrollK: true }),
  matmulByShape: GPU_MATMUL_TABLE,
  workgroupSize: 256,
  itemsPerInvocation: 1,
  rowReduction: "workgroup",
  logitsChunkBytes: 512 * 2 ** 20,
  splitK: { targetWorkgroups: 512, minSliceK: 256, scratchBytes: 64 * 2 ** 20 },
  // NVIDIA's warp; AMD's 64-wide waves then read two rows per load instead of one.
  lockstep: 32,
  // Tiled for the 20M model's heads (D = 32), rows for the 1B's (D = 64): GPU_ATTENTION_TILES.
  attention: { ...GPU_ATTENTION_TILES, maxHeadDim: 32 },
  // A 20M step at 4 x 256 spent about half its wall time outside the kernels on an H200.
  flushLayers: true,
};

/** The adapter fields that decide the profile (a subset of `GPUAdapterInfo`). */
export interface AdapterDescription {
  readonly vendor?: string;
  readonly architecture?: string;
  readonly device?: string;
  readonly description?: string;
  readonly isFallbackAdapter?: boolean;
}

const CPU_NAMES = /llvmpipe|lavapipe|softpipe|swiftshader|warp|microsoft basic render/i;

/**
 * True when the adapter is a CPU rasterizer. Detected from the adapter's fallback flag or its
 * description (Mesa reports `"llvmpipe (LLVM 15.0.6, 256 bits)"` for both llvmpipe and lavapipe).
 *
 * @example
 * ```ts
 * import { isCpuAdapter } from "./profile.ts";
 * if (!isCpuAdapter({ description: "llvmpipe (LLVM 15.0.6, 256 bits)" })) throw new Error();
 * if (isCpuAdapter({ description: "NVIDIA H100 80GB HBM3" })) throw new Error();
 * ```
 */
export function isCpuAdapter(info: AdapterDescription): boolean {
  if (info.isFallbackAdapter) return true;
  const text = [info.vendor, info.architecture, info.device, info.description].join(" ");
  return CPU_NAMES.test(text);
}

/** The profile for an adapter: {@link CPU_PROFILE} on CPU rasterizers, {@link GPU_PROFILE} else. */
export function profileFor(info: AdapterDescription): TuningProfile {
  return isCpuAdapter(info) ? CPU_PROFILE : GPU_PROFILE;
}
