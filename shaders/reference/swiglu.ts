/**
 * Plain TypeScript SwiGLU forward and backward (f64), the reference of `../swiglu.ts`.
 *
 * @module
 */

const sigmoid = (g: number) => 1 / (1 + Math.exp(-g));

/** `silu(gate) · up`. */
export function swigluForwardRef(gate: ArrayLike<number>, up: ArrayLike<number>): Float64Array {
  return Float64Array.from({ length: gate.length }, (_, i) => gate[i] * sigmoid(gate[i]) * up[i]);
}

/** Gradients of {@link swigluForwardRef} given `dOut`. */
export function swigluBackwardRef(
  gate: ArrayLike<number>,
  up: ArrayLike<number>,
  dOut: ArrayLike<number>,
): { dGate: Float64Array; dUp: Float64Array } {
  const n = gate.length;
  const dGate = new Float64Array(n), dUp = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const s = sigmoid(gate[i]);
    dGate[i] = dOut[i] * up[i] * s * (1 + gate[i] * (1 - s));
    dUp[i] = dOut[i] * gate[i] * s;
  }
  return { dGate, dUp };
}
