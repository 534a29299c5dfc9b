/**
 * Plain TypeScript rotary embedding (f64 angles, HF rotate_half pairs), the reference of
 * `../rope.ts`. Computes its own angles, independently of the kernel's table.
 *
 * @module
 */

/**
 * Rotate `x [N, heads, D]` (position `n mod T`) by `direction · t · θ^(−2i/D)`; returns a copy.
 */
export function ropeRef(
  x: ArrayLike<number>,
  o: { n: number; t: number; heads: number; d: number; theta: number; direction?: 1 | -1 },
): Float64Array {
  const { n, t, heads, d, theta } = o;
  const half = d / 2;
  const y = Float64Array.from(x);
  for (let tok = 0; tok < n; tok++) {
    const pos = tok % t;
    for (let h = 0; h < heads; h++) {
      const base = (tok * heads + h) * d;
      for (let i = 0; i < half; i++) {
        const angle = pos * theta ** (-(2 * i) / d);
        const c = Math.cos(angle), s = (o.direction ?? 1) * Math.sin(angle);
        const x0 = x[base + i], x1 = x[base + i + half];
        y[base + i] = x0 * c - x1 * s;
        y[base + i + half] = x1 * c + x0 * s;
      }
    }
  }
  return y;
}
