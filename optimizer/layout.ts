/**
 * How one parameter is cut into DCT chunks, and the shape of its encoded form.
 *
 * Shapes (row-major throughout):
 * - 1-D parameter `[a]`: chunk length `n1 = chunkSize(a)`, `n2 = 1`; encoded shape
 *   `[a/n1, n1]`; `chunks = a/n1`, `totalk = n1`.
 * - 2-D parameter `[a, b]`: `n1 = chunkSize(a)`, `n2 = chunkSize(b)`; encoded shape
 *   `[a/n1, b/n2, n1, n2]`; `chunks = (a/n1)(b/n2)`, `totalk = n1·n2`.
 *
 * Encoded coefficients are stored chunk-major: chunk `c` occupies
 * `[c·totalk, (c+1)·totalk)` and coefficient `(u, v)` of a chunk sits at `u·n2 + v`,
 * exactly Psyche's `(.., a/n1, b/n2, n1·n2)` view.
 *
 * @module
 */

import { chunkSize } from "./chunking.ts";

/** Largest `compression_chunk` accepted; bounds the exact integer decode (docs/protocol.md). */
export const MAX_COMPRESSION_CHUNK = 256;

/** The chunking of one parameter; see the module doc for the shapes. */
export interface ChunkLayout {
  /** Parameter name (e.g. `model.layers.0.mlp.up_proj.weight`). */
  readonly name: string;
  /** The parameter's own shape: `[a]` or `[a, b]`. */
  readonly shape: readonly number[];
  /** Encoded shape: `[a/n1, n1]` (1-D) or `[a/n1, b/n2, n1, n2]` (2-D). */
  readonly encodedShape: readonly number[];
  /** Chunk length along the first dimension. */
  readonly n1: number;
  /** Chunk length along the second dimension (1 for 1-D parameters). */
  readonly n2: number;
  /** Chunks along the second dimension (`b/n2`; 1 for 1-D parameters). */
  readonly colChunks: number;
  /** Number of chunks. */
  readonly chunks: number;
  /** Coefficients per chunk (`n1·n2`). */
  readonly totalk: number;
  /** Coefficients kept per chunk: `clamp(topk, 1, totalk)`. */
  readonly k: number;
  /** Elements in the parameter (`chunks·totalk`). */
  readonly size: number;
}

/** Settings that decide the chunking and how many coefficients each chunk keeps. */
export interface ChunkingOptions {
  /** `compression_chunk`: upper bound on a chunk's length per dimension, 1..256. */
  chunk: number;
  /** `compression_topk`: coefficients kept per chunk, >= 1 (clamped to the chunk size). */
  topk: number;
}

/**
 * The layout of a parameter of `shape` under `options`.
 * Throws `RangeError` naming the parameter for unsupported ranks or bad sizes.
 */
export function chunkLayout(name: string, shape: readonly number[], options: ChunkingOptions) {
  const { chunk, topk } = options;
  if (!Number.isInteger(chunk) || chunk < 1 || chunk > MAX_COMPRESSION_CHUNK) {
    throw new RangeError(
      `compression_chunk must be an integer in 1..${MAX_COMPRESSION_CHUNK}, found ${chunk}`,
    );
  }
  if (!Number.isInteger(topk) || topk < 1) {
    throw new RangeError(`compression_topk must be a positive integer, found ${topk}`);
  }
  if (shape.length !== 1 && shape.length !== 2) {
    throw new RangeError(
      `parameter "${name}" has rank ${shape.length} (shape [${shape}]); DisTrO supports 1-D and 2-D`,
    );
  }
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 1 || d >= 2 ** 32) {
      throw new RangeError(`parameter "${name}" has an invalid dimension in shape [${shape}]`);
    }
  }
  const n1 = chunkSize(shape[0], chunk);
  const n2 = shape.length === 2 ? chunkSize(shape[1], chunk) : 1;
  const rowChunks = shape[0] / n1;
  const colChunks = shape.length === 2 ? shape[1] / n2 : 1;
  const totalk = n1 * n2;
  const layout: ChunkLayout = {
    name,
    shape: [...shape],
    encodedShape: shape.length === 2 ? [rowChunks, colChunks, n1, n2] : [rowChunks, n1],
    n1,
    n2,
    colChunks,
    chunks: rowChunks * colChunks,
    totalk,
    k: Math.min(topk, totalk),
    size: rowChunks * colChunks * totalk,
  };
  return layout;
}

/** Layouts for a list of named parameters, in order. */
export function chunkLayouts(
  params: readonly { name: string; shape: readonly number[] }[],
  options: ChunkingOptions,
): ChunkLayout[] {
  return params.map((p) => chunkLayout(p.name, p.shape, options));
}
