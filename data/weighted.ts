/**
 * A weighted mix of datasets, served as one: any data providers (HTTP, local, parquet, a
 * TCP data server) with one weight each, numbered by {@linkcode buildWeightedIndex}. Every
 * client that opens the same datasets with the same weights and seed serves the same
 * sequence for the same index.
 *
 * @module
 */
import { forEachLimited } from "./concurrency.ts";
import { DataError } from "./errors.ts";
import type { DataProvider, TokenBatch } from "./provider.ts";
import { buildWeightedIndex, planWeightedReads, type WeightedIndex } from "./weighted_index.ts";
import type { BatchId, Shuffle } from "../common/mod.ts";

/** One dataset of a mix. */
export interface WeightedSource {
  /** The dataset; the mix closes it. */
  provider: DataProvider;
  /** Its weight (> 0; normalised over the mix). Give every source one, or none. */
  weight?: number;
  /** How errors name it (default `dataset <i>`). */
  name?: string;
}

/** Options for {@linkcode WeightedDataProvider.create}. */
export interface WeightedProviderOptions {
  /** Order of the mix's samples (default `DontShuffle`). */
  shuffle?: Shuffle;
  /** Reads in flight at once, per batch (default 4). */
  concurrency?: number;
}

/** Several datasets mixed by weight. */
export class WeightedDataProvider implements DataProvider {
  readonly seqLen: number;
  readonly numSequences: number;
  /** The sample table: which dataset and sequence each sample is. */
  readonly index: WeightedIndex;
  readonly #sources: readonly WeightedSource[];
  readonly #concurrency: number;
  #closed = false;

  private constructor(
    sources: readonly WeightedSource[],
    index: WeightedIndex,
    options: WeightedProviderOptions,
  ) {
    this.#sources = sources;
    this.index = index;
    this.seqLen = sources[0].provider.seqLen;
    this.numSequences = index.numSequences;
    this.#concurrency = options.concurrency ?? 4;
  }

  /**
   * Mixes `sources` (which it then owns, and closes on failure too). Throws
   * {@linkcode DataError} when the sources cut sequences of different lengths, when some
   * have weights and others not, or for bad weights ({@linkcode buildWeightedIndex}).
   */
  static async create(
    sources: readonly WeightedSource[],
    options: WeightedProviderOptions = {},
  ): Promise<WeightedDataProvider> {
    try {
      const name = (i: number) => sources[i].name ?? `dataset ${i}`;
      const seqLen = sources[0]?.provider.seqLen;
      sources.forEach((s, i) => {
        if (s.provider.seqLen !== seqLen) {
          throw new DataError(
            `${name(i)} has sequences of ${s.provider.seqLen} tokens, but ${name(0)} has ` +
              `${seqLen}; every dataset of a mix must have the run's max_seq_len`,
            { file: s.name, key: "max_seq_len" },
          );
        }
      });
      const weighted = sources.filter((s) => s.weight !== undefined).length;
      if (weighted !== 0 && weighted !== sources.length) {
        throw new DataError(
          `${weighted} of the mix's ${sources.length} datasets have a weight; give every ` +
            "dataset a weight, or none (each then weighs its number of sequences)",
          { key: "weights" },
        );
      }
      const index = buildWeightedIndex(sources.map((s) => s.provider.numSequences), {
        weights: weighted === 0 ? undefined : sources.map((s) => s.weight!),
        shuffle: options.shuffle,
      });
      return new WeightedDataProvider(sources, index, options);
    } catch (e) {
      await Promise.allSettled(sources.map((s) => s.provider.close()));
      throw e;
    }
  }

  /** The samples `batch.start..batch.end`: one `getSamples` per run of consecutive sequences. */
  async getSamples(batch: BatchId, options: { signal?: AbortSignal } = {}): Promise<TokenBatch> {
    if (this.#closed) throw new Error("WeightedDataProvider is closed");
    const runs = planWeightedReads(this.index, batch);
    const count = batch.end - batch.start + 1;
    const { seqLen } = this;
    const tokens = new Uint32Array(count * seqLen);
    await forEachLimited(runs.length, this.#concurrency, async (i, signal) => {
      const run = runs[i];
      const source = this.#sources[run.dataset];
      const got = await source.provider.getSamples({ start: run.start, end: run.end }, { signal });
      const rows = run.end - run.start + 1;
      if (got.count !== rows || got.seqLen !== seqLen || got.tokens.length !== rows * seqLen) {
        throw new DataError(
          `${source.name ?? `dataset ${run.dataset}`} answered sequences ${run.start}..` +
            `${run.end} with ${got.count} x ${got.seqLen} tokens, expected ${rows} x ${seqLen}`,
          { file: source.name },
        );
      }
      run.rows.forEach((row, k) => {
        tokens.set(got.tokens.subarray(k * seqLen, (k + 1) * seqLen), row * seqLen);
      });
    }, options.signal);
    return { count, seqLen, tokens };
  }

  /** Closes every dataset of the mix. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const results = await Promise.allSettled(this.#sources.map((s) => s.provider.close()));
    const failed = results.find((r) => r.status === "rejected");
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }
}
