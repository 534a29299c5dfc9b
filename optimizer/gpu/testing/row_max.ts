/**
 * Host references for the optimizer kernels' tests.
 *
 * @module
 */
import type { ChunkLayout } from "../../layout.ts";

/**
 * Largest top-k key (`bits & 0x7fffffff`) of each coefficient row `u` of each chunk, `[c·n1 + u]`:
 * what the DCT's row pass writes for the row-skipping top-k.
 */
export function rowMaxKeys(layout: ChunkLayout, y: Float32Array): Uint32Array {
  const keys = new Uint32Array(y.buffer, y.byteOffset, y.length);
  const out = new Uint32Array(layout.chunks * layout.n1);
  for (let r = 0; r < out.length; r++) {
    for (let v = 0; v < layout.n2; v++) {
      out[r] = Math.max(out[r], keys[r * layout.n2 + v] & 0x7fffffff);
    }
  }
  return out;
}
