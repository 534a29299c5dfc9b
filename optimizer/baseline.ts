/**
 * Psyche's result size for the same chunking, the baseline our wire format is compared with
 * (Psyche's shared/network/src/serialized_distro.rs and serializable_tensor.rs): per parameter,
 * `chunks·k` indices of 1, 2 or 4 bytes (by totalk: u8 up to 256, u16 up to 65 536, else u32) and
 * `chunks·k` values as bf16 or bit-packed signs. Postcard framing (a few bytes per tensor) is left
 * out, which flatters the baseline.
 *
 * @module
 */

import type { ChunkLayout } from "./layout.ts";

/** Bytes of one Psyche `TransmittableDistroResult` body (indices and values only). */
export function psycheResultBytes(layouts: readonly ChunkLayout[], quantize1bit: boolean): number {
  let bytes = 0;
  for (const l of layouts) {
    const entries = l.chunks * l.k;
    const width = l.totalk <= 256 ? 1 : l.totalk <= 65536 ? 2 : 4;
    bytes += entries * width + (quantize1bit ? Math.ceil(entries / 8) : 2 * entries);
  }
  return bytes;
}

/** Bytes of the dense bf16 gradient of the same parameters. */
export function denseBf16Bytes(layouts: readonly ChunkLayout[]): number {
  return layouts.reduce((a, l) => a + 2 * l.size, 0);
}

/** Llama parameter shapes from the dimensions (HF names, embeddings untied, no biases). */
export function llamaShapes(dims: {
  hidden: number;
  intermediate: number;
  layers: number;
  vocab: number;
  kvHidden?: number;
}): { name: string; shape: number[] }[] {
  const { hidden: c, intermediate: f, layers, vocab: v } = dims;
  const kv = dims.kvHidden ?? c;
  const out = [{ name: "model.embed_tokens.weight", shape: [v, c] }];
  for (let i = 0; i < layers; i++) {
    const p = `model.layers.${i}.`;
    out.push(
      { name: `${p}input_layernorm.weight`, shape: [c] },
      { name: `${p}self_attn.q_proj.weight`, shape: [c, c] },
      { name: `${p}self_attn.k_proj.weight`, shape: [kv, c] },
      { name: `${p}self_attn.v_proj.weight`, shape: [kv, c] },
      { name: `${p}self_attn.o_proj.weight`, shape: [c, c] },
      { name: `${p}post_attention_layernorm.weight`, shape: [c] },
      { name: `${p}mlp.gate_proj.weight`, shape: [f, c] },
      { name: `${p}mlp.up_proj.weight`, shape: [f, c] },
      { name: `${p}mlp.down_proj.weight`, shape: [c, f] },
    );
  }
  out.push({ name: "model.norm.weight", shape: [c] }, { name: "lm_head.weight", shape: [v, c] });
  return out;
}
