/**
 * How the GPU DisTrO kernels cut one parameter that is larger than a storage binding: into
 * blocks of whole chunk rows. A chunk row (the `colChunks` chunks that share `n1` parameter
 * rows) is contiguous three times over: its `n1·cols` elements in the parameter (row-major),
 * its `colChunks·totalk` coefficients in the chunk-major DCT output, and its `colChunks·k`
 * entries in the result buffers. So a block of chunk rows is a parameter of its own, of shape
 * `[rows·n1, cols]`, that every per-chunk kernel (feedback, DCT, top-k, apply) handles as it
 * handles a whole one, and no chunk is ever cut.
 *
 * Pure: no GPU. optimizer/gpu/distro_gpu.ts binds the blocks.
 *
 * @module
 */

import type { ChunkLayout } from "./layout.ts";
import { rowBlocks } from "../shaders/mod.ts";

/** One block of {@link chunkBlocks}: whole chunk rows of a parameter. */
export interface ChunkBlock {
  /** First element, counted from the parameter's start (a multiple of the alignment). */
  readonly offset: number;
  /** First chunk of the block (chunks are numbered row-major over the chunk grid). */
  readonly firstChunk: number;
  /** The block as a parameter of its own: `[rows·n1, cols]` (1-D: `[rows·n1]`). */
  readonly layout: ChunkLayout;
}

/** Limits the blocks must respect, in bytes. */
export interface ChunkBlockLimits {
  /** Most bytes one storage binding may hold (`maxStorageBufferBindingSize`). */
  readonly maxBytes: number;
  /** Binding offsets must be multiples of this (`minStorageBufferOffsetAlignment`). */
  readonly alignBytes: number;
}

/**
 * Cuts a parameter (starting at a multiple of `alignBytes`) into blocks of whole chunk rows such
 * that each block's elements fit one binding and start at a multiple of `alignBytes`, and its
 * `chunks·k` result entries fit one binding even when their window starts up to `alignBytes − 4`
 * bytes earlier ({@link entryWindow}). One block when the parameter fits. Throws a RangeError
 * naming the parameter when not even one aligned group of chunk rows fits.
 *
 * @example
 * ```ts
 * import { chunkBlocks } from "./chunk_blocks.ts";
 * import { chunkLayout } from "./layout.ts";
 * const l = chunkLayout("embed", [512, 64], { chunk: 32, topk: 8 });
 * const blocks = chunkBlocks(l, { maxBytes: 32768, alignBytes: 256 });
 * console.assert(blocks.length === 4 && blocks[1].offset === 128 * 64);
 * ```
 */
export function chunkBlocks(layout: ChunkLayout, limits: ChunkBlockLimits): ChunkBlock[] {
  const { maxBytes, alignBytes } = limits;
  const cols = layout.shape.length === 2 ? layout.shape[1] : 1;
  const rowFloats = layout.n1 * cols;
  const rowEntries = layout.colChunks * layout.k;
  const chunkRows = layout.shape[0] / layout.n1;
  // The entry window may start alignBytes − 4 bytes before the block's first entry.
  const entryRows = Math.floor((maxBytes - alignBytes + 4) / (4 * rowEntries));
  const limit = Math.min(maxBytes, entryRows * rowFloats * 4);
  let blocks;
  try {
    blocks = rowBlocks(chunkRows, rowFloats * 4, { maxBytes: limit, alignBytes });
  } catch (cause) {
    throw new RangeError(
      `DisTrO: parameter "${layout.name}" cannot be cut into blocks of whole ${layout.n1}-row ` +
        `chunk rows (${rowFloats * 4} bytes each) that fit storage bindings of ${maxBytes} bytes`,
      { cause },
    );
  }
  if (blocks.length === 1) return [{ offset: 0, firstChunk: 0, layout }];
  return blocks.map((b) => {
    const rows = b.rows * layout.n1;
    const chunks = b.rows * layout.colChunks;
    return {
      offset: b.start * rowFloats,
      firstChunk: b.start * layout.colChunks,
      layout: {
        ...layout,
        shape: layout.shape.length === 2 ? [rows, cols] : [rows],
        encodedShape: layout.shape.length === 2
          ? [b.rows, layout.colChunks, layout.n1, layout.n2]
          : [b.rows, layout.n1],
        chunks,
        size: chunks * layout.totalk,
      },
    };
  });
}

/** A window of a result buffer that a binding can start at: `[start, start + size)` words. */
export interface EntryWindow {
  /** First word of the binding, a multiple of `alignWords`. */
  readonly start: number;
  /** Words in the binding (at least 1). */
  readonly size: number;
  /** Where the wanted first entry lies inside the binding. */
  readonly first: number;
}

/**
 * The binding of entries `[first, first + count)` of a result buffer: it starts at the
 * multiple of `alignWords` at or below `first` (binding offsets must be aligned) and holds at
 * least one word (an empty binding is invalid).
 *
 * @example
 * ```ts
 * import { entryWindow } from "./chunk_blocks.ts";
 * const w = entryWindow(100, 40, 64);
 * console.assert(w.start === 64 && w.first === 36 && w.size === 76);
 * ```
 */
export function entryWindow(first: number, count: number, alignWords: number): EntryWindow {
  const start = first - first % alignWords;
  return { start, size: Math.max(1, first - start + count), first: first - start };
}
