/**
 * The exact aggregate (exact.ts `aggregateFixed`, one per parameter) laid out for upload so that
 * every block of chunk rows (chunk_blocks.ts) finds its per-chunk offsets and its entries in
 * windows of its own, each starting at a multiple of the binding alignment: the apply kernel
 * then binds a block's windows, never the whole aggregate, and each window holds no more than
 * the block's coefficients (at most `chunks·totalk` entries, as many as its elements).
 *
 * Pure: no GPU.
 *
 * @module
 */

import type { ChunkBlock } from "./chunk_blocks.ts";
import type { AggregatedParam } from "./exact.ts";

/** A `[start, size]` range of words of one upload array (start aligned, size ≥ 1). */
export type WordRange = readonly [number, number];

/** The aggregate's three upload arrays and each block's windows into them. */
export interface PackedAggregate {
  /** Per block, its `chunks + 1` offsets into its entries window (the first is 0). */
  readonly offsets: Uint32Array;
  /** Coefficient indices within their chunk. */
  readonly idx: Uint32Array;
  /** Fixed-point coefficients. */
  readonly q: Int32Array;
  /** Per parameter, per block: its window of `offsets` and of `idx`/`q`. */
  readonly windows: readonly (readonly { offsets: WordRange; entries: WordRange }[])[];
}

/** `n` rounded up to a multiple of `align`. */
function roundUp(n: number, align: number): number {
  return Math.ceil(n / align) * align;
}

/**
 * Packs `update` (one validated {@link AggregatedParam} per parameter, offsets covering its
 * chunks) by the `blocks` of each parameter, every window starting at a multiple of
 * `alignWords`.
 *
 * @example
 * ```ts
 * import { packAggregate } from "./aggregate_blocks.ts";
 * import { chunkLayout } from "./layout.ts";
 * const layout = chunkLayout("norm", [64], { chunk: 32, topk: 1 });
 * const aggregate = {
 *   offsets: new Uint32Array([0, 1, 2]), // two chunks of one entry each
 *   indices: new Uint32Array([3, 4]),
 *   coeffs: new Int32Array([5, -6]),
 *   scaleExp: new Int32Array(2),
 * };
 * const packed = packAggregate([aggregate], [[{ offset: 0, firstChunk: 0, layout }]], 64);
 * console.assert(packed.windows[0][0].entries[1] === 2);
 * ```
 */
export function packAggregate(
  update: readonly AggregatedParam[],
  blocks: readonly (readonly ChunkBlock[])[],
  alignWords: number,
): PackedAggregate {
  if (update.length !== blocks.length) {
    throw new RangeError(
      `packAggregate: ${update.length} aggregates for ${blocks.length} parameters`,
    );
  }
  let offsetWords = 0, entryWords = 0;
  const windows = blocks.map((parts, n) =>
    parts.map((b) => {
      const a = update[n];
      const count = a.offsets[b.firstChunk + b.layout.chunks] - a.offsets[b.firstChunk];
      const w = {
        offsets: [offsetWords, b.layout.chunks + 1] as const,
        entries: [entryWords, Math.max(1, count)] as const,
      };
      offsetWords += roundUp(w.offsets[1], alignWords);
      entryWords += roundUp(w.entries[1], alignWords);
      return w;
    })
  );
  const offsets = new Uint32Array(Math.max(1, offsetWords));
  const idx = new Uint32Array(Math.max(1, entryWords));
  const q = new Int32Array(Math.max(1, entryWords));
  blocks.forEach((parts, n) => {
    const a = update[n];
    parts.forEach((b, i) => {
      const { offsets: [o], entries: [e] } = windows[n][i];
      const c0 = b.firstChunk, c1 = c0 + b.layout.chunks;
      const e0 = a.offsets[c0], e1 = a.offsets[c1];
      for (let c = c0; c <= c1; c++) offsets[o + c - c0] = a.offsets[c] - e0;
      idx.set(a.indices.subarray(e0, e1), e);
      q.set(a.coeffs.subarray(e0, e1), e);
    });
  });
  return { offsets, idx, q, windows };
}
