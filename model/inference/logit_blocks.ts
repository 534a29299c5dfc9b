/**
 * Where a logits buffer keeps each vocabulary block, and the host-side gather back into rows. An
 * LM head over one storage binding is multiplied one vocabulary block `[Vb, C]` at a time
 * (model/memory_plan.ts `lmHeadBlocks`); block b's logits `[R, Vb]` sit at their own aligned
 * offset of one buffer, so a single readback brings every block home. Pure.
 *
 * @module
 */

/** One vocabulary block: head rows `[start, start + rows)`, its logits at `offset` bytes. */
export interface LogitBlock {
  readonly start: number;
  readonly rows: number;
  /** Byte offset of the block's `[R, rows]` logits in the buffer (a multiple of the alignment). */
  readonly offset: number;
}

/**
 * Offsets for `blocks` holding `maxRows` logit rows each, every block starting at a multiple of
 * `alignBytes`, and the buffer's total bytes.
 *
 * @example
 * ```ts
 * import { logitBlockLayout } from "./logit_blocks.ts";
 * const { blocks, bytes } = logitBlockLayout([{ start: 0, rows: 6 }, { start: 6, rows: 4 }], 1, 32);
 * if (blocks[1].offset !== 32 || bytes !== 64) throw new Error("aligned block offsets");
 * ```
 */
export function logitBlockLayout(
  blocks: readonly { start: number; rows: number }[],
  maxRows: number,
  alignBytes: number,
): { blocks: LogitBlock[]; bytes: number } {
  let bytes = 0;
  const out: LogitBlock[] = [];
  for (const b of blocks) {
    out.push({ start: b.start, rows: b.rows, offset: bytes });
    bytes += Math.ceil((maxRows * b.rows * 4) / alignBytes) * alignBytes;
  }
  return { blocks: out, bytes };
}

/**
 * Logits `[rows, vocab]` from a readback of the buffer (`data`, floats) whose blocks hold
 * `[rows, b.rows]` each at their offsets.
 */
export function gatherLogits(
  data: Float32Array,
  blocks: readonly LogitBlock[],
  rows: number,
  vocab: number,
): Float32Array {
  const covered = blocks.reduce((n, b) => n + b.rows, 0);
  if (covered !== vocab) {
    throw new RangeError(`logit blocks cover ${covered} vocabulary rows, expected ${vocab}`);
  }
  const out = new Float32Array(rows * vocab);
  for (const b of blocks) {
    const at = b.offset / 4;
    if (at + rows * b.rows > data.length) {
      throw new RangeError(
        `logit block at vocabulary row ${b.start} needs floats [${at}, ${at + rows * b.rows}), ` +
          `the readback holds ${data.length}`,
      );
    }
    for (let r = 0; r < rows; r++) {
      out.set(data.subarray(at + r * b.rows, at + (r + 1) * b.rows), r * vocab + b.start);
    }
  }
  return out;
}
