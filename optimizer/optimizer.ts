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

/** What one optimizer step receives. All buffers use the flat parameter layout. */
export interface OptimizerStepArgs {
  /** `[P]` parameters, updated in place. */
  params: GPUBuffer;
  /** `[P]` gradients of the mean loss (already averaged over micro-batches). */
  grads: GPUBuffer;
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
  encodeSettle?(step: GpuStep, params: GPUBuffer): void;
}
