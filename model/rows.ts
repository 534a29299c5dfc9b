/**
 * What a micro-batch's rows carry besides their tokens, as Psyche's `TokenizedData` does
 * (`labels`, `position_ids`, `sequence_lengths`), and the per-token arrays the GPU model reads
 * from them. Pure; model/llama.ts writes the results into its slot buffers.
 *
 * Semantics (Psyche's `causal_language_model.rs`, HF Llama):
 * - labels default to the tokens; the model shifts them, so position t (< T−1) predicts
 *   `labels[t+1]`, and a label of {@link IGNORE_TARGET} (-100) is no prediction. The loss is the
 *   mean over the predictions made.
 * - position_ids set each token's RoPE position (default `t`).
 * - sequence_lengths are the documents packed in a row: a token attends only to the earlier
 *   tokens of its own document.
 *
 * @module
 */
import { IGNORE_TARGET } from "./llama_kernels.ts";

/** Optional columns of `[B, T]` rows (absent or null: the default). */
export interface RowExtras {
  /** `[B, T]` labels, each in `[0, V)` or -100 (masked). Default: the tokens. */
  readonly labels?: Int32Array | null;
  /** `[B, T]` RoPE position of each token, each in `[0, T)`. Default: `t`. */
  readonly positionIds?: Int32Array | null;
  /** `[B][documents]` lengths (> 0) of the documents packed in each row, summing to T. */
  readonly sequenceLengths?: readonly (readonly number[])[] | null;
}

/** A micro-batch: `[B, T]` token ids and their optional columns. */
export interface TrainingRows extends RowExtras {
  readonly tokens: Uint32Array;
}

/**
 * The targets `[B·T]` (i32) of rows of `seqLen` tokens: `labels[t+1]` (the tokens without labels)
 * at t < T−1, {@link IGNORE_TARGET} at T−1; and how many are predictions (not ignored).
 *
 * @example
 * ```ts
 * import { rowTargets } from "./rows.ts";
 * const tokens = Uint32Array.from([5, 6, 7, 8]);
 * const labels = Int32Array.from([-100, -100, 7, 8]);
 * const { targets, predictions } = rowTargets(tokens, { seqLen: 4, vocabSize: 10, labels });
 * // [-100, 7, 8, -100]: the prompt's tokens 5 and 6 predict nothing, 6 predicts 7.
 * if (predictions !== 2 || targets[0] !== -100 || targets[1] !== 7) throw new Error();
 * ```
 */
export function rowTargets(
  tokens: Uint32Array,
  options: { seqLen: number; vocabSize: number; labels?: Int32Array | null },
): { targets: Int32Array; predictions: number } {
  const { seqLen: T, vocabSize: V } = options;
  const labels = options.labels ?? null;
  const n = tokens.length;
  if (labels !== null && labels.length !== n) {
    throw new RangeError(`expected ${n} labels (one per token), found ${labels.length}`);
  }
  const targets = new Int32Array(n);
  let predictions = 0;
  for (let i = 0; i < n; i++) {
    if (tokens[i] >= V) {
      throw new RangeError(`token ${tokens[i]} at position ${i} is outside the vocabulary (${V})`);
    }
    if (labels !== null) {
      const l = labels[i];
      if (l !== IGNORE_TARGET && (l < 0 || l >= V)) {
        throw new RangeError(
          `label ${l} at position ${i} is neither in [0, ${V}) nor ${IGNORE_TARGET}`,
        );
      }
    }
    const next = i % T === T - 1 ? IGNORE_TARGET : labels === null ? tokens[i + 1] : labels[i + 1];
    targets[i] = next;
    if (next !== IGNORE_TARGET) predictions++;
  }
  return { targets, predictions };
}

/** The RoPE positions `[B·T]` (u32) of `positionIds`, each checked to lie in `[0, T)`. */
export function rowPositions(positionIds: Int32Array, options: { seqLen: number }): Uint32Array {
  const T = options.seqLen;
  const out = new Uint32Array(positionIds.length);
  for (let i = 0; i < positionIds.length; i++) {
    const p = positionIds[i];
    if (!Number.isInteger(p) || p < 0 || p >= T) {
      throw new RangeError(`position id ${p} at position ${i} is outside [0, ${T})`);
    }
    out[i] = p;
  }
  return out;
}

/**
 * Each token's document as the row positions `[start, end)`, `[B, T, 2]` u32, from the lengths
 * of the documents packed in each of the `rows` rows (each positive, summing to `seqLen`).
 *
 * @example
 * ```ts
 * import { documentSpans } from "./rows.ts";
 * const spans = documentSpans([[2, 1]], { rows: 1, seqLen: 3 });
 * // [0, 2,  0, 2,  2, 3]
 * if (spans[4] !== 2 || spans[5] !== 3) throw new Error();
 * ```
 */
export function documentSpans(
  sequenceLengths: readonly (readonly number[])[],
  options: { rows: number; seqLen: number },
): Uint32Array {
  const { rows, seqLen: T } = options;
  if (sequenceLengths.length !== rows) {
    throw new RangeError(
      `expected the document lengths of ${rows} rows, found ${sequenceLengths.length}`,
    );
  }
  const out = new Uint32Array(rows * T * 2);
  for (let r = 0; r < rows; r++) {
    let start = 0;
    for (const len of sequenceLengths[r]) {
      if (!Number.isInteger(len) || len <= 0 || start + len > T) {
        throw new RangeError(
          `row ${r}: document lengths ${JSON.stringify(sequenceLengths[r])} must be positive ` +
            `integers adding up to ${T}`,
        );
      }
      for (let t = start; t < start + len; t++) out.set([start, start + len], (r * T + t) * 2);
      start += len;
    }
    if (start !== T) {
      throw new RangeError(
        `row ${r}: document lengths ${JSON.stringify(sequenceLengths[r])} add up to ${start}, ` +
          `not ${T}`,
      );
    }
  }
  return out;
}

/**
 * Row sets one after another as one `[Σ rows, T]` set. A column any part has is kept, filled with
 * its default (labels = tokens, positions `0..T−1`, one document per row) for the parts without.
 */
export function concatRows(
  parts: readonly TrainingRows[],
  options: { seqLen: number },
): TrainingRows {
  const T = options.seqLen;
  const total = parts.reduce((a, p) => a + p.tokens.length, 0);
  const tokens = new Uint32Array(total);
  const withLabels = parts.some((p) => p.labels != null);
  const withPositions = parts.some((p) => p.positionIds != null);
  const withDocuments = parts.some((p) => p.sequenceLengths != null);
  const labels = withLabels ? new Int32Array(total) : null;
  const positionIds = withPositions ? new Int32Array(total) : null;
  const sequenceLengths: number[][] | null = withDocuments ? [] : null;
  let at = 0;
  for (const p of parts) {
    const n = p.tokens.length;
    tokens.set(p.tokens, at);
    labels?.set(p.labels ?? p.tokens, at);
    if (positionIds !== null) {
      if (p.positionIds != null) positionIds.set(p.positionIds, at);
      else for (let i = 0; i < n; i++) positionIds[at + i] = i % T;
    }
    if (sequenceLengths !== null) {
      if (p.sequenceLengths != null) sequenceLengths.push(...p.sequenceLengths.map((r) => [...r]));
      else for (let r = 0; r < n / T; r++) sequenceLengths.push([T]);
    }
    at += n;
  }
  return { tokens, labels, positionIds, sequenceLengths };
}

/** Rows `from..to−1` of `rows` (views of its arrays, not copies). */
export function sliceRows(
  rows: TrainingRows,
  options: { seqLen: number; from: number; to: number },
): TrainingRows {
  const { seqLen: T, from, to } = options;
  return {
    tokens: rows.tokens.subarray(from * T, to * T),
    labels: rows.labels?.subarray(from * T, to * T) ?? null,
    positionIds: rows.positionIds?.subarray(from * T, to * T) ?? null,
    sequenceLengths: rows.sequenceLengths?.slice(from, to) ?? null,
  };
}
