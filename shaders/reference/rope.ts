/**
 * Plain TypeScript rotary embedding (f64 angles, HF rotate_half pairs), the reference of
 * `../rope.ts`. Computes its own frequencies and angles, independently of the kernel's table.
 *
 * @module
 */

import type { RopeFrequencies } from "../rope.ts";

/**
 * The inverse frequencies `[D/2]` in f64: `θ^(−2i/D)`, then for llama3 scaling transformers'
 * formula (`_compute_llama3_parameters`): with the wavelength `λ = 2π/f` and the pre-training
 * context L, `f` is kept where `λ < L/high_freq_factor`, divided by `factor` where
 * `λ > L/low_freq_factor`, and in between `(1 − s)·f/factor + s·f` with
 * `s = (L/λ − low_freq_factor) / (high_freq_factor − low_freq_factor)`.
 */
export function ropeInvFreqRef(d: number, rope: RopeFrequencies): Float64Array {
  const inv = Float64Array.from({ length: d / 2 }, (_, i) => rope.theta ** (-(2 * i) / d));
  const s = rope.scaling;
  if (s === null) return inv;
  const l = s.originalMaxPositionEmbeddings;
  return inv.map((f) => {
    const wavelen = (2 * Math.PI) / f;
    if (wavelen < l / s.highFreqFactor) return f;
    if (wavelen > l / s.lowFreqFactor) return f / s.factor;
    const smooth = (l / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
    return (1 - smooth) * (f / s.factor) + smooth * f;
  });
}

/**
 * Rotate `x [N, heads, D]` (token n at position `positions[n]`, or `n mod T` without them) by
 * `direction · position · inv_freq_i` with the frequencies of {@link ropeInvFreqRef}; returns a
 * copy.
 */
export function ropeRef(
  x: ArrayLike<number>,
  o: {
    n: number;
    t: number;
    heads: number;
    d: number;
    rope: RopeFrequencies;
    direction?: 1 | -1;
    positions?: ArrayLike<number>;
  },
): Float64Array {
  const { n, t, heads, d } = o;
  const half = d / 2;
  const inv = ropeInvFreqRef(d, o.rope);
  const y = Float64Array.from(x);
  for (let tok = 0; tok < n; tok++) {
    const pos = o.positions === undefined ? tok % t : o.positions[tok];
    for (let h = 0; h < heads; h++) {
      const base = (tok * heads + h) * d;
      for (let i = 0; i < half; i++) {
        const angle = pos * inv[i];
        const c = Math.cos(angle), s = (o.direction ?? 1) * Math.sin(angle);
        const x0 = x[base + i], x1 = x[base + i + half];
        y[base + i] = x0 * c - x1 * s;
        y[base + i + half] = x1 * c + x0 * s;
      }
    }
  }
  return y;
}
