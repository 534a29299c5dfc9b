/**
 * The seam between the training loop and an optimizer. The trainer computes gradients into one
 * flat GPU buffer laid out like the parameters (model/params.ts) and hands both to an
 * {@link Optimizer}, which updates the parameters in place. AdamW (adamw.ts) and DisTrO
 * (gpu/distro_gpu.ts) implement it; the trainer knows nothing else about them. The interface
 * lives here, beside its implementations, so the optimizer never imports the trainer.
 *
 * @module
 */
import type { GpuStep, TensorView } from "../shaders/mod.ts";
import type { ParamBuffers } from "../model/mod.ts";

/**
 * A role of the flat parameter layout on the GPU: one buffer, or one per segment when the model
 * is over `maxBufferSize` (model/param_buffers.ts).
 */
export type FlatBuffers = GPUBuffer | ParamBuffers;

/** The buffers of `flat`, one per segment. */
export function segmentBuffers(flat: FlatBuffers): readonly GPUBuffer[] {
  return "buffers" in flat ? flat.buffers : [flat];
}

/** What one optimizer step receives. All buffers use the flat parameter layout. */
export interface OptimizerStepArgs {
  /** `[P]` parameters, updated in place. */
  params: FlatBuffers;
  /** `[P]` gradients of the mean loss (already averaged over micro-batches), split alike. */
  grads: FlatBuffers;
  /** Learning rate for this step (from the schedule). */
  lr: number;
  /** 1-based optimizer step number (AdamW's bias correction counts from 1). */
  stepNumber: number;
  /**
   * `[1]` sum of squared gradient elements, computed earlier in the same GPU step; used for
   * gradient-norm clipping. Null when clipping is off.
   */
  gradSumSq: TensorView | null;
}

/**
 * An optimizer that runs on the GPU. `encodeStep` records its work into the training step's
 * command encoder (no submit, no readback), so forward, backward and update go to the GPU as one
 * submission. It may write small per-step constants with `queue.writeBuffer`, so at most one
 * optimizer step may be encoded per submission.
 */
export interface Optimizer extends Disposable {
  /** Short name for logs (`"adamw"`, `"distro"`). */
  readonly name: string;
  /** Records one update of `args.params` from `args.grads` into `step`. */
  encodeStep(step: GpuStep, args: OptimizerStepArgs): void;
  /**
   * Brings `params` back to the trained values before they are read out for a checkpoint.
   * DisTrO leaves the next step's lookahead applied after `encodeStep`; this undoes it.
   * Optimizers without such state leave it out. Call it only after the last step.
   */
  encodeSettle?(step: GpuStep, params: FlatBuffers): void;
  /**
   * Re-establishes what {@link encodeSettle} undid, so training continues bit for bit: after a
   * checkpoint taken mid-run, or after {@link loadState} on resume. `lastLr` is the learning rate
   * of the last step done. Optimizers without such state leave it out.
   */
  encodeResume?(step: GpuStep, args: { params: FlatBuffers; lastLr: number }): void;
  /** Reads the optimizer's state back to the host (after the last step was submitted). */
  readState(options?: { signal?: AbortSignal }): Promise<OptimizerState>;
  /**
   * Where the state {@link readState} reads lives on the GPU, so a checkpoint save can read it a
   * chunk at a time instead of whole (train/streamed_save.ts `saveTraining`). Valid until the next
   * step is encoded.
   */
  stateBuffers(): OptimizerStateBuffers;
  /**
   * Replaces the optimizer's state with `state` (from {@link readState}, possibly through a
   * checkpoint). Throws a RangeError naming what does not fit: another optimizer kind, or a
   * tensor of the wrong length. Call {@link encodeResume} afterwards, before the next step.
   */
  loadState(state: OptimizerState): void;
  /**
   * The streamed form of {@link loadState}: takes the scalars of the state (AdamW's step count,
   * whether DisTrO has an own result) and returns the buffers the caller then fills a chunk at a
   * time (train/streamed_load.ts), with the lengths {@link stateBuffers} gives. Call
   * {@link encodeResume} once they are filled, before the next step.
   */
  prepareLoad(state: OptimizerStateScalars): OptimizerStateBuffers;
}

/** What {@link Optimizer.prepareLoad} takes: the state without its arrays. */
export type OptimizerStateScalars =
  | { readonly kind: "adamw"; readonly step: number }
  | { readonly kind: "distro"; readonly hasOwn: boolean };

/** AdamW's state: the moments over the flat parameter layout and the steps taken. */
export interface AdamWState {
  readonly kind: "adamw";
  /** Steps taken: the `t` of the bias correction of the last step (0 before the first). */
  readonly step: number;
  /** `[P]` first moments (torch's `exp_avg`). */
  readonly m: Float32Array;
  /** `[P]` second moments (torch's `exp_avg_sq`). */
  readonly v: Float32Array;
}

/** Single-node DisTrO's state: the residual momentum and the own result not yet applied. */
export interface DistroState {
  readonly kind: "distro";
  /** `[P]` residual momentum δ. */
  readonly delta: Float32Array;
  /**
   * The latest own result (unquantized, E = Σ chunks·k entries in parameter order): error
   * feedback for the next step, and the update the next single-node step applies. Null before
   * the first step.
   */
  readonly own: { readonly indices: Uint32Array; readonly values: Float32Array } | null;
}

/**
 * A flat array on the GPU split into segment buffers: flat element `i` of segment `s` lives at
 * `i − segments[s].start` in `buffers[s]` ({@link ParamBuffers} is one).
 */
export interface SegmentedBuffers {
  readonly segments: readonly { readonly start: number; readonly size: number }[];
  readonly buffers: readonly GPUBuffer[];
}

/** {@link OptimizerState}'s arrays where they live on the GPU (same lengths and order). */
export type OptimizerStateBuffers =
  | { readonly kind: "adamw"; readonly step: number; m: SegmentedBuffers; v: SegmentedBuffers }
  | {
    readonly kind: "distro";
    readonly delta: SegmentedBuffers;
    /** `[E]` u32 indices and f32 values, one buffer each; null before the first step. */
    readonly own: { readonly indices: GPUBuffer; readonly values: GPUBuffer } | null;
  };

/** What a checkpoint keeps of an optimizer, as host arrays. */
export type OptimizerState = AdamWState | DistroState;
