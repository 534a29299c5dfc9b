/**
 * Plain TypeScript reference (f64) of `../cached_attention.ts`: the new tokens' rows of the
 * causal attention of the whole sequence held in the cache, by `./attention.ts` (scores
 * materialised, no online softmax).
 *
 * @module
 */
import { attentionForwardRef } from "./attention.ts";

/**
 * Output `[n, H, D]` of queries `q [n, H, D]` at positions `start..start+n−1` over the cache's
 * keys and values `[S, KVH, D]` (only rows `0..start+n−1` are read).
 */
export function cachedAttentionRef(
  q: ArrayLike<number>,
  kCache: ArrayLike<number>,
  vCache: ArrayLike<number>,
  o: { n: number; start: number; h: number; kvh: number; d: number; scale?: number },
): Float64Array {
  const { n, start, h, kvh, d } = o;
  const t = start + n;
  // The earlier positions' queries do not change the new rows: zeros stand in for them.
  const qAll = new Float64Array(t * h * d);
  qAll.set(Array.from(q).slice(0, n * h * d), start * h * d);
  const rows = (x: ArrayLike<number>) => Array.from(x).slice(0, t * kvh * d);
  const { out } = attentionForwardRef(qAll, rows(kCache), rows(vCache), {
    b: 1,
    t,
    h,
    kvh,
    d,
    scale: o.scale,
  });
  return out.slice(start * h * d);
}
