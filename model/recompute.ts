/**
 * Activation recomputation (`--recompute`): which buffers hold each layer's saved activations,
 * and which layers the backward must rebuild before it can run.
 *
 * Without recomputation every layer keeps its own activation set from forward to backward
 * (L sets). With it, every layer writes one shared set: the forward keeps only each layer's
 * input (the residual stream `x[l]`, which it holds anyway), and the backward re-runs layer
 * l's forward from `x[l]` into the shared set just before layer l's backward. The last layer's
 * activations are still in the set when the backward starts, so it is not rebuilt. The rebuild
 * runs the same kernels on the same inputs in the same order, so the activations, and with them
 * every gradient, have the same bits as without recomputation (tests/recompute_test.ts).
 *
 * Pure: model/llama.ts allocates and encodes by this plan.
 *
 * @example
 * ```ts
 * import { activationPlan } from "./recompute.ts";
 * const plan = activationPlan(4, { recompute: true });
 * if (plan.sets !== 1 || plan.rebuildsBeforeBackward(3) || !plan.rebuildsBeforeBackward(0)) {
 *   throw new Error("unexpected plan");
 * }
 * ```
 *
 * @module
 */

/** Where each layer's saved activations live, and which layers the backward rebuilds. */
export interface ActivationPlan {
  /** Whether activations are recomputed in the backward. */
  readonly recompute: boolean;
  /** Activation sets to allocate: one per layer, or one shared set with recomputation. */
  readonly sets: number;
  /** The set layer `layer`'s forward writes and its backward reads. */
  setOf(layer: number): number;
  /**
   * Whether the backward must re-run layer `layer`'s forward first: true when a later layer's
   * forward overwrote its set.
   */
  rebuildsBeforeBackward(layer: number): boolean;
}

/** The activation plan of a model of `numLayers` layers. */
export function activationPlan(
  numLayers: number,
  options: { recompute: boolean },
): ActivationPlan {
  if (!Number.isSafeInteger(numLayers) || numLayers < 1) {
    throw new RangeError(`numLayers must be >= 1, got ${numLayers}`);
  }
  const { recompute } = options;
  const check = (layer: number) => {
    if (!Number.isInteger(layer) || layer < 0 || layer >= numLayers) {
      throw new RangeError(`layer ${layer} outside [0, ${numLayers})`);
    }
  };
  return {
    recompute,
    sets: recompute ? 1 : numLayers,
    setOf(layer) {
      check(layer);
      return recompute ? 0 : layer;
    },
    rebuildsBeforeBackward(layer) {
      check(layer);
      return recompute && layer < numLayers - 1;
    },
  };
}
