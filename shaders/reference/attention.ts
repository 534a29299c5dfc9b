/**
 * Plain TypeScript causal grouped-query attention (f64), the reference of `../attention.ts`.
 * Materialises the score matrix and differentiates it directly (no online softmax), so it checks
 * the fused kernels by a different route.
 *
 * @module
 */

/** Dimensions, as in the kernel. */
export interface AttentionRefDims {
  b: number;
  t: number;
  h: number;
  kvh: number;
  d: number;
  scale?: number;
  /**
   * Lengths of the documents packed in each row (`[B][documents]`, each row summing to T): a
   * query sees only the keys of its own document. Absent: one document per row.
   */
  sequenceLengths?: readonly (readonly number[])[];
}

/** Document number of every token `[B·T]` (0 everywhere without `sequenceLengths`). */
function documentOf(o: AttentionRefDims): Int32Array {
  const doc = new Int32Array(o.b * o.t);
  if (o.sequenceLengths === undefined) return doc;
  for (let bb = 0; bb < o.b; bb++) {
    let at = 0;
    o.sequenceLengths[bb].forEach((len, i) => {
      for (let j = 0; j < len; j++) doc[bb * o.t + at + j] = i;
      at += len;
    });
    if (at !== o.t) throw new RangeError(`row ${bb}: documents add up to ${at}, not ${o.t}`);
  }
  return doc;
}

function probs(q: ArrayLike<number>, k: ArrayLike<number>, o: AttentionRefDims) {
  const { b, t, h, kvh, d } = o;
  const scale = o.scale ?? 1 / Math.sqrt(d);
  const rep = h / kvh;
  const qi = (bb: number, tq: number, hh: number) => ((bb * t + tq) * h + hh) * d;
  const ki = (bb: number, s: number, g: number) => ((bb * t + s) * kvh + g) * d;
  const doc = documentOf(o);
  /** Whether query tq of row bb sees key s (s ≤ tq): the same document. */
  const sees = (bb: number, tq: number, s: number) => doc[bb * t + tq] === doc[bb * t + s];
  /** P[bb][hh][tq][s] (0 where masked), plus lse. */
  const P = new Float64Array(b * h * t * t), lse = new Float64Array(b * h * t);
  for (let bb = 0; bb < b; bb++) {
    for (let hh = 0; hh < h; hh++) {
      const g = Math.floor(hh / rep);
      for (let tq = 0; tq < t; tq++) {
        const row = ((bb * h + hh) * t + tq) * t;
        let m = -Infinity;
        for (let s = 0; s <= tq; s++) {
          if (!sees(bb, tq, s)) continue;
          let dot = 0;
          for (let e = 0; e < d; e++) dot += q[qi(bb, tq, hh) + e] * k[ki(bb, s, g) + e];
          P[row + s] = dot * scale;
          m = Math.max(m, P[row + s]);
        }
        let sum = 0;
        for (let s = 0; s <= tq; s++) if (sees(bb, tq, s)) sum += Math.exp(P[row + s] - m);
        for (let s = 0; s <= tq; s++) {
          P[row + s] = sees(bb, tq, s) ? Math.exp(P[row + s] - m) / sum : 0;
        }
        lse[(bb * h + hh) * t + tq] = m + Math.log(sum);
      }
    }
  }
  return { P, lse, scale, qi, ki, rep };
}

/** Forward: `out [B, T, H, D]` and `lse [B, H, T]`. */
export function attentionForwardRef(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  o: AttentionRefDims,
): { out: Float64Array; lse: Float64Array } {
  const { b, t, h, d } = o;
  const { P, lse, qi, ki, rep } = probs(q, k, o);
  const out = new Float64Array(b * t * h * d);
  for (let bb = 0; bb < b; bb++) {
    for (let hh = 0; hh < h; hh++) {
      for (let tq = 0; tq < t; tq++) {
        const row = ((bb * h + hh) * t + tq) * t;
        for (let s = 0; s <= tq; s++) {
          const kv = ki(bb, s, Math.floor(hh / rep));
          for (let e = 0; e < d; e++) out[qi(bb, tq, hh) + e] += P[row + s] * v[kv + e];
        }
      }
    }
  }
  return { out, lse };
}

/** Backward: dq, dk, dv by differentiating softmax(QKᵀ·scale)·V directly. */
export function attentionBackwardRef(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  dOut: ArrayLike<number>,
  o: AttentionRefDims,
): { dq: Float64Array; dk: Float64Array; dv: Float64Array } {
  const { b, t, h, kvh, d } = o;
  const { P, scale, qi, ki, rep } = probs(q, k, o);
  const dq = new Float64Array(b * t * h * d);
  const dk = new Float64Array(b * t * kvh * d), dv = new Float64Array(b * t * kvh * d);
  const dP = new Float64Array(t);
  for (let bb = 0; bb < b; bb++) {
    for (let hh = 0; hh < h; hh++) {
      const g = Math.floor(hh / rep);
      for (let tq = 0; tq < t; tq++) {
        const row = ((bb * h + hh) * t + tq) * t;
        const qo = qi(bb, tq, hh);
        let pdp = 0;
        for (let s = 0; s <= tq; s++) {
          let dot = 0;
          for (let e = 0; e < d; e++) dot += dOut[qo + e] * v[ki(bb, s, g) + e];
          dP[s] = dot;
          pdp += P[row + s] * dot;
        }
        for (let s = 0; s <= tq; s++) {
          const ko = ki(bb, s, g);
          const dS = P[row + s] * (dP[s] - pdp) * scale;
          for (let e = 0; e < d; e++) {
            dq[qo + e] += dS * k[ko + e];
            dk[ko + e] += dS * q[qo + e];
            dv[ko + e] += P[row + s] * dOut[qo + e];
          }
        }
      }
    }
  }
  return { dq, dk, dv };
}

/**
 * Per-element magnitudes that bound the rounding error of a backward computed in f32: for each
 * gradient entry, the sum of the absolute values of the terms that make it up, with each dS
 * replaced by `P·(|dP| + |Δ| + Σ|dO·v| + Σ|dO·O|)` (its value plus the magnitudes its two dot
 * products cancel). An f32 backward is within `(ε + (D + T)·u)·bound` of the exact value, where ε
 * is the relative error of the probabilities.
 */
export function attentionBackwardBounds(
  q: ArrayLike<number>,
  k: ArrayLike<number>,
  v: ArrayLike<number>,
  dOut: ArrayLike<number>,
  o: AttentionRefDims,
): { dq: Float64Array; dk: Float64Array; dv: Float64Array } {
  const { b, t, h, kvh, d } = o;
  const { P, scale, qi, ki, rep } = probs(q, k, o);
  const out = attentionForwardRef(q, k, v, o).out;
  const dq = new Float64Array(b * t * h * d);
  const dk = new Float64Array(b * t * kvh * d), dv = new Float64Array(b * t * kvh * d);
  for (let bb = 0; bb < b; bb++) {
    for (let hh = 0; hh < h; hh++) {
      const g = Math.floor(hh / rep);
      for (let tq = 0; tq < t; tq++) {
        const row = ((bb * h + hh) * t + tq) * t;
        const qo = qi(bb, tq, hh);
        let delta = 0, deltaMag = 0;
        for (let e = 0; e < d; e++) {
          delta += dOut[qo + e] * out[qo + e];
          deltaMag += Math.abs(dOut[qo + e] * out[qo + e]);
        }
        for (let s = 0; s <= tq; s++) {
          const ko = ki(bb, s, g);
          let dp = 0, dpMag = 0;
          for (let e = 0; e < d; e++) {
            dp += dOut[qo + e] * v[ko + e];
            dpMag += Math.abs(dOut[qo + e] * v[ko + e]);
          }
          const p = P[row + s];
          const dS = p * (Math.abs(dp) + Math.abs(delta) + dpMag + deltaMag) * scale;
          for (let e = 0; e < d; e++) {
            dq[qo + e] += dS * Math.abs(k[ko + e]);
            dk[ko + e] += dS * Math.abs(q[qo + e]);
            dv[ko + e] += p * Math.abs(dOut[qo + e]);
          }
        }
      }
    }
  }
  return { dq, dk, dv };
}
