/**
 * Which dataset, and which sequence of it, each sample of a weighted mix is. Pure: sizes,
 * weights and a seed in, a table out; the provider (data/weighted.ts) does the reads.
 *
 * The table follows Psyche's `build_weighted_index` (`shared/data-provider/src/weighted/mod.rs`)
 * exactly, so an unshuffled mix numbers its samples as Psyche's does:
 *
 * - **Length.** A mix of datasets with `sizes[d]` sequences has `Σ sizes` samples, whatever the
 *   weights: a dataset weighted above its share of the sequences is repeated, one below is not
 *   read to its end.
 * - **Weights.** Normalised to their sum. Without weights (Psyche's `LengthWeighted`) each
 *   dataset weighs its size, so every sequence of every dataset appears exactly once.
 * - **Choice.** Sample `s` goes to the dataset with the largest error
 *   `w[d] · max(s, 1) − drawn[d]` (`drawn[d]`: samples given to `d` so far; the first largest
 *   wins a tie; a dataset with no sequences is never chosen). Every prefix of the table then
 *   holds each dataset's share closely: within 2 samples, as the tests check for up to six
 *   datasets.
 * - **Exhaustion.** Dataset `d`'s `k`-th sample (from 0) is its sequence `k mod sizes[d]`: its
 *   sequences in order, then again from the first once all were used. A dataset is never read
 *   past its end.
 * - **Shuffle.** With `Seeded(seed)`, sample `i` is entry `perm[i]` of the table above, with
 *   `perm = shufflePermutation(n, seed)` (data/shuffle.ts; Psyche co-shuffles the two columns
 *   with ChaCha8 instead, as everywhere else in docs/data.md's "Differences from Psyche").
 *
 * Building the table costs `n × datasets` steps and 6 bytes per sample (a 1e8-sequence mix:
 * about 0.6 GB and a few seconds), as Psyche's does.
 *
 * @module
 */
import { DataError } from "./errors.ts";
import { checkBatch } from "./sequence_index.ts";
import { shufflePermutation } from "./shuffle.ts";
import type { BatchId, Shuffle } from "../common/mod.ts";

/** Most datasets in one mix (the table stores a dataset number in 16 bits). */
export const MAX_WEIGHTED_DATASETS = 0xffff;

/** The sample table of a weighted mix. */
export interface WeightedIndex {
  /** Sequences in each dataset, as given. */
  readonly sizes: readonly number[];
  /** The normalised weights (sum 1). */
  readonly weights: readonly number[];
  /** Samples in the mix: `Σ sizes`. */
  readonly numSequences: number;
  /** `[numSequences]` dataset of each sample. */
  readonly datasetOf: Uint16Array;
  /** `[numSequences]` sequence, inside its dataset, of each sample. */
  readonly sequenceOf: Uint32Array;
}

/** Options for {@linkcode buildWeightedIndex}. */
export interface WeightedIndexOptions {
  /** One positive weight per dataset; omitted, each dataset weighs its size. */
  weights?: readonly number[];
  /** Default `DontShuffle`. */
  shuffle?: Shuffle;
}

/**
 * The sample table of a mix of datasets with `sizes` sequences. Throws
 * {@linkcode DataError} (key `"weights"`) for weights that are not one finite positive number
 * per dataset, and for a mix with no sequence or more than 2^32 − 1.
 *
 * @example
 * ```ts
 * import { buildWeightedIndex } from "./weighted_index.ts";
 * // Two datasets of 4 sequences, weighted 3:1: dataset 1 is used once in every 4 samples.
 * const index = buildWeightedIndex([4, 4], { weights: [3, 1] });
 * if (index.datasetOf.join() !== "0,1,0,0,0,1,0,0") throw new Error("unexpected order");
 * // Dataset 0 ran out after its 4 sequences and started again from its first.
 * if (index.sequenceOf.join() !== "0,0,1,2,3,1,0,1") throw new Error("unexpected sequences");
 * ```
 */
export function buildWeightedIndex(
  sizes: readonly number[],
  options: WeightedIndexOptions = {},
): WeightedIndex {
  if (sizes.length === 0) {
    throw new DataError("A weighted mix needs at least one dataset, found none", {
      key: "providers",
    });
  }
  if (sizes.length > MAX_WEIGHTED_DATASETS) {
    throw new DataError(
      `A weighted mix holds at most ${MAX_WEIGHTED_DATASETS} datasets, found ${sizes.length}`,
      { key: "providers" },
    );
  }
  sizes.forEach((size, d) => {
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new RangeError(`Dataset ${d} size must be a non-negative integer, found ${size}`);
    }
  });
  const n = sizes.reduce((a, b) => a + b, 0);
  if (n === 0) {
    throw new DataError(`Empty weighted mix: its ${sizes.length} datasets hold no sequence`, {
      key: "providers",
    });
  }
  if (n > 0xffff_ffff) {
    throw new DataError(`A weighted mix of ${n} sequences exceeds 2^32 - 1`, { key: "providers" });
  }
  const weights = normalise(options.weights ?? sizes, options.weights !== undefined, sizes.length);

  let datasetOf = new Uint16Array(n);
  let sequenceOf = new Uint32Array(n);
  const drawn = new Float64Array(sizes.length);
  for (let s = 0; s < n; s++) {
    const at = Math.max(s, 1);
    let best = -Infinity;
    let chosen = 0;
    for (let d = 0; d < sizes.length; d++) {
      if (sizes[d] === 0) continue;
      const error = weights[d] * at - drawn[d];
      if (error > best) {
        best = error;
        chosen = d;
      }
    }
    datasetOf[s] = chosen;
    sequenceOf[s] = drawn[chosen] % sizes[chosen];
    drawn[chosen]++;
  }

  const shuffle = options.shuffle ?? { kind: "DontShuffle" };
  if (shuffle.kind === "Seeded") {
    const perm = shufflePermutation(n, shuffle.seed);
    const shuffledDataset = new Uint16Array(n);
    const shuffledSequence = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      shuffledDataset[i] = datasetOf[perm[i]];
      shuffledSequence[i] = sequenceOf[perm[i]];
    }
    datasetOf = shuffledDataset;
    sequenceOf = shuffledSequence;
  }
  return { sizes: [...sizes], weights, numSequences: n, datasetOf, sequenceOf };
}

function normalise(weights: readonly number[], given: boolean, datasets: number): number[] {
  if (weights.length !== datasets) {
    throw new DataError(
      `A weighted mix of ${datasets} datasets needs ${datasets} weights, found ${weights.length}`,
      { key: "weights" },
    );
  }
  if (given) {
    weights.forEach((w, d) => {
      if (!Number.isFinite(w) || w <= 0) {
        throw new DataError(
          `Weight of dataset ${d} must be a finite number > 0, found ${w} ` +
            "(leave a dataset out of the mix rather than weighting it 0)",
          { key: "weights" },
        );
      }
    });
  }
  const sum = weights.reduce((a, b) => a + b, 0);
  if (!Number.isFinite(sum)) {
    throw new DataError(`Weights sum to ${sum}; expected a finite sum`, { key: "weights" });
  }
  return weights.map((w) => w / sum);
}

/** One read of a weighted batch: sequences `start..end` of one dataset, and where they go. */
export interface WeightedRun {
  /** Index of the dataset. */
  dataset: number;
  /** First sequence of the dataset to read. */
  start: number;
  /** Last sequence (inclusive). */
  end: number;
  /** `[end − start + 1]` row of the batch that each sequence read goes to. */
  rows: number[];
}

/**
 * The reads for a batch of a mix, as Psyche plans them: the batch's samples are grouped by
 * dataset, sorted by sequence, and cut into runs of consecutive sequences (one
 * `getSamples` call each). A sequence that appears twice in the batch is read twice.
 * Throws {@linkcode DataError} (key `"batch"`) for a batch out of range.
 *
 * @example
 * ```ts
 * import { buildWeightedIndex, planWeightedReads } from "./weighted_index.ts";
 * const index = buildWeightedIndex([4, 4]); // alternates: (0,0) (1,0) (0,1) (1,1) ...
 * const runs = planWeightedReads(index, { start: 0, end: 3 });
 * const text = runs.map((r) => `${r.dataset}:${r.start}..${r.end}->${r.rows}`).join(" ");
 * if (text !== "0:0..1->0,2 1:0..1->1,3") throw new Error(text);
 * ```
 */
export function planWeightedReads(index: WeightedIndex, batch: BatchId): WeightedRun[] {
  checkBatch(batch, index.numSequences);
  const byDataset = new Map<number, Array<{ sequence: number; row: number }>>();
  for (let i = batch.start; i <= batch.end; i++) {
    const dataset = index.datasetOf[i];
    let list = byDataset.get(dataset);
    if (list === undefined) byDataset.set(dataset, list = []);
    list.push({ sequence: index.sequenceOf[i], row: i - batch.start });
  }
  const runs: WeightedRun[] = [];
  for (const dataset of [...byDataset.keys()].sort((a, b) => a - b)) {
    const wanted = byDataset.get(dataset)!.sort((a, b) => a.sequence - b.sequence || a.row - b.row);
    let run: WeightedRun | null = null;
    for (const { sequence, row } of wanted) {
      if (run !== null && sequence === run.end + 1) {
        run.end = sequence;
        run.rows.push(row);
      } else {
        run = { dataset, start: sequence, end: sequence, rows: [row] };
        runs.push(run);
      }
    }
  }
  return runs;
}
