/**
 * Before a client trains, it checks that its model can read the run's data: the token ids of
 * the data's first sequences must lie below the model's `vocab_size`. A 512-token model paired
 * with LLaMA-2 token ids (up to 31,999) would otherwise join, load, and fail on every batch;
 * with this check it stops at load with one line naming both numbers.
 *
 * Providers opened with the vocabulary (local folders, HTTP) refuse such a token themselves
 * (a `DataError` with key `vocab_size`, naming the file and offset); the TCP data server's
 * tokens arrive unchecked and are compared here. A coordinator-hosted data server serves only
 * the batch the round assigns (it refuses these sequences, a `DataError` with key `batch`): the
 * check is then left to the first batch ({@linkcode checkTokens}, which the trainer runs on every
 * batch it reads).
 *
 * @module
 */
import { DataError, type DataProvider } from "../data/mod.ts";

/** Sequences read for the check (or fewer, when the data holds fewer). */
export const VOCABULARY_CHECK_SEQUENCES = 16;

/** The model cannot read the run's data. Fatal: every batch would fail the same way. */
export class DataVocabularyError extends Error {
  /** Always `"DataVocabularyError"`. */
  override name = "DataVocabularyError";
}

/** Options of {@linkcode checkDataVocabulary}. */
export interface DataVocabularyOptions {
  /** Where the vocabulary comes from, for the message (e.g. the model folder). */
  readonly model?: string;
  /** Sequences to read (default {@linkcode VOCABULARY_CHECK_SEQUENCES}). */
  readonly sequences?: number;
  readonly signal?: AbortSignal;
}

/**
 * Reads the first sequences of `provider` and throws {@linkcode DataVocabularyError} when one
 * holds a token id `>= vocabSize`. Other failures (a read that times out) propagate as they are.
 *
 * @example
 * ```ts
 * import { checkDataVocabulary } from "./data_check.ts";
 * import { DummyDataProvider } from "../data/dummy.ts";
 * await checkDataVocabulary(new DummyDataProvider(8), 512); // zero tokens fit any vocabulary
 * ```
 */
export async function checkDataVocabulary(
  provider: DataProvider,
  vocabSize: number,
  options: DataVocabularyOptions = {},
): Promise<void> {
  const count = Math.min(provider.numSequences, options.sequences ?? VOCABULARY_CHECK_SEQUENCES);
  if (count < 1) return;
  const from = options.model === undefined ? "" : ` (${options.model})`;
  const prefix =
    `The model's vocabulary (vocab_size ${vocabSize}${from}) cannot read the run's data`;
  let tokens: Uint32Array;
  let seqLen: number;
  try {
    ({ tokens, seqLen } = await provider.getSamples({ start: 0, end: count - 1 }, {
      signal: options.signal,
    }));
  } catch (e) {
    if (e instanceof DataError && e.key === "vocab_size") {
      throw new DataVocabularyError(`${prefix}: ${e.message}`, { cause: e });
    }
    // A server that serves only the round's batches: the first batch is checked instead.
    if (e instanceof DataError && e.key === "batch") return;
    throw e;
  }
  checkTokens(tokens, seqLen, vocabSize, options.model);
}

/**
 * Throws {@linkcode DataVocabularyError} when `tokens` (rows of `seqLen`) hold an id
 * `>= vocabSize`; `model` names the vocabulary's source in the message.
 */
export function checkTokens(
  tokens: Uint32Array,
  seqLen: number,
  vocabSize: number,
  model?: string,
): void {
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i] >= vocabSize) {
      const from = model === undefined ? "" : ` (${model})`;
      throw new DataVocabularyError(
        `The model's vocabulary (vocab_size ${vocabSize}${from}) cannot read the run's data: ` +
          `sequence ${Math.floor(i / seqLen)} holds token id ${tokens[i]} at position ` +
          `${i % seqLen}`,
      );
    }
  }
}
