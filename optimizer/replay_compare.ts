/**
 * Comparisons a verifier makes between what a trainer published and served and what its replay
 * of the trainer's step produced (docs/protocol.md, "Verification"). Byte equality is the wrong
 * test across adapters (lavapipe and an NVIDIA GPU differ in last bits), so each comparison is a
 * measure the verifier holds to a tolerance calibrated on honest replays:
 *
 * - {@link compareCoefficients}: of the published entries, how many name a coefficient the replay
 *   did not select in that chunk, and how many of the shared ones carry the other sign. Near-ties
 *   in a chunk's top-k are where honest adapters disagree.
 * - {@link compareStates}: the L2 distance between the served and the replayed state (δ, and the
 *   own values at the coefficients both selected), to be read relative to the step's gradient
 *   contribution `lr·‖g‖`: honest float noise is a tiny fraction of it, a gradient of other data,
 *   negated or scaled is of its order.
 * - {@link ownMatchesResult}: exact, no tolerance: the served state after the step must hold the
 *   very coefficients and signs the trainer published (it produced both itself).
 * - {@link coefficientOverlap}: the share of one result's coefficients another also selected; a
 *   copied result overlaps its source almost wholly, honest ones little (measured in
 *   docs/benchmarks.md, "Verification").
 *
 * Pure; sums in f64.
 *
 * @module
 */
import { signBit, type SparseParam } from "./compress.ts";
import type { ChunkLayout } from "./layout.ts";
import type { DistroState } from "./optimizer.ts";

/** How the published coefficients differ from the replayed ones. */
export interface CoefficientComparison {
  /** Published entries compared. */
  readonly entries: number;
  /** Published entries whose coefficient the replay did not select in that chunk. */
  readonly missing: number;
  /** Entries both selected whose signs differ. */
  readonly signFlips: number;
}

/** `(missing + signFlips) / entries` in parts per million, rounded up (0 for no entries). */
export function mismatchPpm(c: CoefficientComparison): number {
  return c.entries === 0 ? 0 : Math.ceil(1e6 * (c.missing + c.signFlips) / c.entries);
}

function checkParams(a: readonly SparseParam[], layouts: readonly ChunkLayout[], what: string) {
  if (a.length !== layouts.length) {
    throw new RangeError(`${what} has ${a.length} parameters, the model ${layouts.length}`);
  }
  a.forEach((p, n) => {
    const want = layouts[n].chunks * layouts[n].k;
    if (p.indices.length !== want || p.values.length !== want) {
      throw new RangeError(`${what} parameter ${n}: ${p.indices.length} entries, expected ${want}`);
    }
  });
}

/**
 * For each chunk of each parameter, the replay's `k` entries by coefficient index; `visit` gets
 * every published entry with the replay's value at its index, or undefined.
 */
function eachPair(
  published: readonly SparseParam[],
  replayed: readonly SparseParam[],
  layouts: readonly ChunkLayout[],
  visit: (published: number, replayed: number | undefined) => void,
): void {
  checkParams(published, layouts, "the published result");
  checkParams(replayed, layouts, "the replayed result");
  const byIndex = new Map<number, number>();
  layouts.forEach((layout, n) => {
    const { k, chunks } = layout;
    const pub = published[n], rep = replayed[n];
    for (let c = 0; c < chunks; c++) {
      byIndex.clear();
      for (let r = 0; r < k; r++) byIndex.set(rep.indices[c * k + r], rep.values[c * k + r]);
      for (let r = 0; r < k; r++) {
        visit(pub.values[c * k + r], byIndex.get(pub.indices[c * k + r]));
      }
    }
  });
}

/**
 * Compares a published result with the replayed one, chunk by chunk, by coefficient index (the
 * order of entries within a chunk does not matter). Signs compare by sign bit, so 1-bit ±1
 * values compare with unquantized ones.
 */
export function compareCoefficients(
  published: readonly SparseParam[],
  replayed: readonly SparseParam[],
  layouts: readonly ChunkLayout[],
): CoefficientComparison {
  let entries = 0, missing = 0, signFlips = 0;
  eachPair(published, replayed, layouts, (pub, rep) => {
    entries++;
    if (rep === undefined) missing++;
    else if (signBit(pub) !== signBit(rep)) signFlips++;
  });
  return { entries, missing, signFlips };
}

/** How a served state differs from the replayed one. */
export interface StateComparison {
  /** ‖δ_served − δ_replayed‖₂. */
  readonly deltaDistance: number;
  /** ‖own_served − own_replayed‖₂ over the coefficients both selected. */
  readonly ownDistance: number;
  /** Served own entries whose coefficient the replay did not select. */
  readonly ownUnmatched: number;
}

/**
 * Compares the state a trainer served as its state after a step with the replay's. RangeError
 * when their sizes differ, or either lacks an own result (a state after a step always has one).
 */
export function compareStates(
  served: DistroState,
  replayed: DistroState,
  layouts: readonly ChunkLayout[],
): StateComparison {
  if (served.delta.length !== replayed.delta.length) {
    throw new RangeError(
      `served δ holds ${served.delta.length} floats, the replay's ${replayed.delta.length}`,
    );
  }
  if (served.own === null || replayed.own === null) {
    throw new RangeError("a state after a step holds an own result");
  }
  let sq = 0;
  for (let i = 0; i < served.delta.length; i++) {
    const d = served.delta[i] - replayed.delta[i];
    sq += d * d;
  }
  let ownSq = 0, ownUnmatched = 0;
  eachPair(
    splitOwn(served.own, layouts),
    splitOwn(replayed.own, layouts),
    layouts,
    (pub, rep) => {
      if (rep === undefined) ownUnmatched++;
      else ownSq += (pub - rep) * (pub - rep);
    },
  );
  return { deltaDistance: Math.sqrt(sq), ownDistance: Math.sqrt(ownSq), ownUnmatched };
}

/** A state's flat own entries cut into per-parameter results. */
export function splitOwn(
  own: { readonly indices: Uint32Array; readonly values: Float32Array },
  layouts: readonly ChunkLayout[],
): SparseParam[] {
  let at = 0;
  return layouts.map((l) => {
    const n = l.chunks * l.k;
    const part = {
      indices: own.indices.subarray(at, at + n),
      values: own.values.subarray(at, at + n),
    };
    at += n;
    return part;
  });
}

/**
 * Whether `state` (a trainer's state after a step) holds exactly the coefficients `published`
 * names in every chunk, each with the published sign.
 */
export function ownMatchesResult(
  state: DistroState,
  published: readonly SparseParam[],
  layouts: readonly ChunkLayout[],
): boolean {
  if (state.own === null) return false;
  const c = compareCoefficients(published, splitOwn(state.own, layouts), layouts);
  return c.missing === 0 && c.signFlips === 0;
}

/** The share (0..1) of `a`'s entries whose coefficient `b` also selected in that chunk. */
export function coefficientOverlap(
  a: readonly SparseParam[],
  b: readonly SparseParam[],
  layouts: readonly ChunkLayout[],
): number {
  const c = compareCoefficients(a, b, layouts);
  return c.entries === 0 ? 0 : (c.entries - c.missing) / c.entries;
}
