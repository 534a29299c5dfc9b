/**
 * Groups the blocks of a per-chunk DisTrO kernel into table dispatches: one dispatch runs the
 * kernel over every block of its group, each workgroup finding its block in a small table
 * (optimizer/gpu/distro_wgsl.ts `tableSpecWgsl`). Blocks share a dispatch when they take the
 * same pipeline, lie in the same parameter buffer (segment), and every buffer the dispatch
 * binds still fits one storage binding over all of them; so a model that fits one binding gets
 * one dispatch per pipeline, and the parameters larger than a binding (chunk_blocks.ts) get as
 * few as the binding size allows.
 *
 * Pure: no GPU. optimizer/gpu/distro_gpu.ts builds the tables and binds the windows.
 *
 * @module
 */

/** A `[start, size]` range of words of one buffer. */
export type WordWindow = readonly [number, number];

/** One block as {@link tableGroups} sees it. */
export interface TableBlock {
  /** The pipeline the block takes: only blocks of one key share a dispatch. */
  readonly key: string;
  /** The segment (buffer) its parameter-shaped views lie in. */
  readonly segment: number;
  /**
   * The words it reads, `[start, end)`, in each buffer the dispatch binds, in the same order
   * for every block of one key (e.g. θ, then the result entries).
   */
  readonly ranges: readonly (readonly [number, number])[];
}

/** One table dispatch of {@link tableGroups}. */
export interface TableGroup {
  readonly key: string;
  readonly segment: number;
  /** Indices of its blocks, ascending: the table's rows. */
  readonly members: readonly number[];
  /** Per bound buffer, the window bound: starts at a multiple of `alignWords`, ≥ 1 word. */
  readonly windows: readonly WordWindow[];
}

/** Limits of {@link tableGroups}. */
export interface TableLimits {
  /** Most words one storage binding holds (`maxStorageBufferBindingSize / 4`). */
  readonly maxWords: number;
  /** Binding offsets must be multiples of this many words. */
  readonly alignWords: number;
  /** Most rows one table holds. */
  readonly maxRows: number;
}

interface Open {
  key: string;
  segment: number;
  members: number[];
  spans: [number, number][];
}

/** `[aligned start, size]` of a span `[start, end)`. */
function window([start, end]: readonly [number, number], alignWords: number): WordWindow {
  const from = start - start % alignWords;
  return [from, Math.max(1, end - from)];
}

/**
 * Table dispatches of `blocks`, in the order their first blocks come: each block joins the open
 * group of its key and segment unless that would make a bound window larger than a binding or
 * the table longer than `maxRows`; then that group is closed and the block opens a new one.
 * Throws a RangeError when one block alone does not fit (chunk_blocks.ts cuts them to fit).
 *
 * @example
 * ```ts
 * import { tableGroups } from "./dispatch_table.ts";
 * const block = (key: string, at: number) =>
 *   ({ key, segment: 0, ranges: [[at, at + 64]] as const });
 * const groups = tableGroups([block("a", 0), block("b", 64), block("a", 128)], {
 *   maxWords: 1 << 20,
 *   alignWords: 64,
 *   maxRows: 512,
 * });
 * console.assert(groups.length === 2 && groups[0].members.join() === "0,2");
 * console.assert(groups[0].windows[0][1] === 192);
 * ```
 */
export function tableGroups(blocks: readonly TableBlock[], limits: TableLimits): TableGroup[] {
  const { maxWords, alignWords, maxRows } = limits;
  const done: Open[] = [];
  const open = new Map<string, Open>();
  const fits = (spans: readonly (readonly [number, number])[]) =>
    spans.every((s) => window(s, alignWords)[1] <= maxWords);
  blocks.forEach((b, n) => {
    if (!fits(b.ranges)) {
      throw new RangeError(`tableGroups: block ${n} (${b.key}) does not fit one binding`);
    }
    const id = `${b.key}\u0000${b.segment}`;
    const g = open.get(id);
    if (g !== undefined && g.members.length < maxRows) {
      const spans = g.spans.map(([s, e], i): [number, number] => [
        Math.min(s, b.ranges[i][0]),
        Math.max(e, b.ranges[i][1]),
      ]);
      if (fits(spans)) {
        g.members.push(n);
        g.spans = spans;
        return;
      }
    }
    const fresh = {
      key: b.key,
      segment: b.segment,
      members: [n],
      spans: b.ranges.map(([s, e]): [number, number] => [s, e]),
    };
    done.push(fresh);
    open.set(id, fresh);
  });
  return done.map((g) => ({
    key: g.key,
    segment: g.segment,
    members: g.members,
    windows: g.spans.map((s) => window(s, alignWords)),
  }));
}
