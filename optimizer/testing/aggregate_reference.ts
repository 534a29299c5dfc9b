/**
 * The exact aggregate (exact.ts `aggregateFixed`) stated as plainly as possible, for tests of the
 * fast one: per chunk, a map from coefficient to its values in the order given, then the
 * definition in exact.ts's module doc.
 *
 * @module
 */

import type { SparseParam } from "../compress.ts";
import type { AggregatedParam } from "../exact.ts";
import type { ChunkLayout } from "../layout.ts";

/**
 * `aggregateFixed` by its definition. Throws `RangeError` where it does (a result of the wrong
 * length, an index >= totalk, a non-finite value); messages are not compared.
 */
export function aggregateReference(
  layout: ChunkLayout,
  results: readonly SparseParam[],
): AggregatedParam {
  const { chunks, totalk, k } = layout;
  if (results.some((r) => r.indices.length !== chunks * k || r.values.length !== chunks * k)) {
    throw new RangeError("a result of the wrong length");
  }
  const offsets = [0], indices: number[] = [], coeffs: number[] = [], scaleExp: number[] = [];
  for (let c = 0; c < chunks; c++) {
    const chosen = new Map<number, number[]>();
    for (const r of results) {
      for (let e = c * k; e < (c + 1) * k; e++) {
        if (r.indices[e] >= totalk || !Number.isFinite(r.values[e])) {
          throw new RangeError("a bad entry");
        }
        chosen.set(r.indices[e], [...(chosen.get(r.indices[e]) ?? []), r.values[e]]);
      }
    }
    // Each coefficient's mean, its values summed in f64 in the order given.
    const means = [...chosen.keys()].sort((a, b) => a - b).map((i) => {
      const values = chosen.get(i)!;
      return [i, values.reduce((sum, v) => sum + v, 0) / values.length];
    });
    const max = Math.max(0, ...means.map(([, m]) => Math.abs(m)));
    let e = 0;
    if (max > 0) {
      // The smallest power of two >= max.
      while (2 ** e < max) e++;
      while (2 ** (e - 1) >= max) e--;
      for (const [i, m] of means) {
        const v = (m / 2 ** e) * 2 ** 15;
        const q = Math.sign(v) * Math.round(Math.abs(v)); // half away from zero
        if (q !== 0) {
          indices.push(i);
          coeffs.push(q);
        }
      }
    }
    scaleExp.push(e);
    offsets.push(indices.length);
  }
  return {
    offsets: Uint32Array.from(offsets),
    indices: Uint32Array.from(indices),
    coeffs: Int32Array.from(coeffs),
    scaleExp: Int32Array.from(scaleExp),
  };
}
