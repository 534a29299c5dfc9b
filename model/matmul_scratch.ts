/**
 * The transpose scratch of the CPU profile's matmul. Its `packed` variant (shaders/matmul.ts)
 * transposes A of every `nn` and `nt` product, and B of every `nt` product, into two scratch
 * buffers that grow to the largest call's. Grown call by call, each outgrown buffer stays alive
 * until the step is submitted, so the first step held the whole chain of sizes. The model
 * reserves both at their largest before its first step instead, and the memory plan counts the
 * same bytes. The GPU profile's tiled kernel reads every layout in place: no scratch. Pure.
 *
 * @module
 */
import type { LlamaConfig } from "./hf_config.ts";

/** What sets the model's matmul shapes. */
export interface TransposeScratchShape {
  readonly config: LlamaConfig;
  /** N = B·T rows of every layer matmul. */
  readonly rows: number;
  /** R: rows of one LM-head logits chunk. */
  readonly chunkRows: number;
  /** Vb: vocabulary rows of the largest LM-head block (V when the head is one block). */
  readonly headBlockRows: number;
  /** Bytes of a stored weight element: 4 (f32 masters) or 2 (f16/bf16 copies). */
  readonly weightBytes: number;
}

/**
 * Bytes of the A and B transpose scratch the model's largest products need (rounded up to 16, as
 * the matmul rounds its scratch): A of the `nn`/`nt` products, the layer inputs `[N, C|F]`, the
 * output gradients `[N, out]`, the head's input `[R, C]` and a logits block `[R, Vb]`; B of the
 * `nt` products, the layer weights `[out, in]` and a head block `[Vb, C]`. A is counted at 4 bytes
 * an element (16-bit activations need less).
 */
export function transposeScratchBytes(s: TransposeScratchShape): { a: number; b: number } {
  const { hiddenSize: C, intermediateSize: F, headDim: D } = s.config;
  const H = s.config.numHeads, KVH = s.config.numKvHeads;
  const N = s.rows, R = s.chunkRows, Vb = s.headBlockRows;
  const a = 4 * Math.max(N * Math.max(C, F, H * D, KVH * D), R * Math.max(C, Vb));
  const b = s.weightBytes * C * Math.max(H * D, KVH * D, F, Vb);
  return { a: Math.ceil(a / 16) * 16, b: Math.ceil(b / 16) * 16 };
}
