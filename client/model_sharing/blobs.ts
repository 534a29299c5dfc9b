/**
 * A model as the named blobs P2P model sharing serves: `config.json` (the HF config, UTF-8
 * JSON) and one blob per parameter tensor under its Hugging Face name, holding the tensor's
 * values as **f32 little-endian**, row-major (shape from the config).
 *
 * Why f32 and not bf16 as in Psyche: every honest client must hold bit-identical parameters
 * (results are applied to the same bits everywhere, and the run compares parameter hashes).
 * A joiner that received bf16-truncated weights would start from different bits and drift;
 * f32 blobs make the joiner's parameters exactly the others'. The cost is 2x the bytes of
 * bf16, once per joiner per epoch.
 *
 * Pure: no I/O. Decoding checks that the config parses, that every tensor of that config is
 * present with exactly the right byte length, and that nothing else is there.
 *
 * @example
 * ```ts
 * import { modelFromBlobs, modelToBlobs } from "./blobs.ts";
 * import { parseLlamaConfig } from "../../model/hf_config.ts";
 * import { initParams, llamaParamLayout } from "../../model/params.ts";
 * const config = parseLlamaConfig({
 *   hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2,
 *   num_key_value_heads: 2, vocab_size: 32, max_position_embeddings: 16, rms_norm_eps: 1e-5,
 * });
 * const layout = llamaParamLayout(config);
 * const weights = initParams(layout, config, 7);
 * const back = modelFromBlobs(new Map(modelToBlobs({ config, layout, weights })));
 * if (!back.weights.every((w, i) => w === weights[i])) throw new Error("not bit-identical");
 * ```
 *
 * @module
 */
import {
  HfConfigError,
  type LlamaConfig,
  llamaConfigToHf,
  llamaParamLayout,
  type ParamLayout,
  parseLlamaConfig,
} from "../../model/mod.ts";

/** The blob name of the HF config. */
export const CONFIG_BLOB = "config.json";
/** Largest `config.json` blob accepted (an HF Llama config is about 1 KB). */
export const MAX_CONFIG_BLOB_BYTES = 64 * 1024;

/** A model in memory: config, flat layout and the flat f32 parameter buffer. */
export interface SharedModel {
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  /** `layout.totalSize` floats; alignment padding is zero. */
  readonly weights: Float32Array;
}

/** Blobs that do not make a model; the message names the blob and what is wrong. */
export class ModelBlobError extends Error {
  /** The blob at fault, or null when the set as a whole is wrong. */
  readonly blob: string | null;
  /** Builds the error. */
  constructor(blob: string | null, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ModelBlobError";
    this.blob = blob;
  }
}

/**
 * The byte size of every tensor blob of the model a `config.json` blob describes, by name:
 * what a manifest must list before any tensor is fetched. Throws {@link ModelBlobError} for
 * bytes that are not a valid config.
 */
export function tensorBlobSizes(configBytes: Uint8Array): Map<string, number> {
  const layout = llamaParamLayout(parseConfigBlob(configBytes));
  return new Map(layout.entries.map((e) => [e.name, e.size * 4]));
}

function parseConfigBlob(bytes: Uint8Array): LlamaConfig {
  try {
    return parseLlamaConfig(JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)));
  } catch (cause) {
    const why = cause instanceof HfConfigError || cause instanceof SyntaxError
      ? cause.message
      : String(cause);
    throw new ModelBlobError(CONFIG_BLOB, `shared "${CONFIG_BLOB}" is not a valid config: ${why}`, {
      cause,
    });
  }
}

const littleEndian = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

function requireLittleEndian(): void {
  if (!littleEndian) {
    throw new Error("P2P model blobs are f32 little-endian; this platform is big-endian");
  }
}

/**
 * The blobs of `model`: `config.json` first, then every tensor in layout order. Each tensor
 * blob is a fresh copy, so later changes to `weights` do not change what is served.
 */
export function modelToBlobs(model: SharedModel): [name: string, bytes: Uint8Array][] {
  requireLittleEndian();
  const { config, layout, weights } = model;
  if (weights.length !== layout.totalSize) {
    throw new RangeError(`expected ${layout.totalSize} floats, found ${weights.length}`);
  }
  const json = JSON.stringify(llamaConfigToHf(config));
  const out: [string, Uint8Array][] = [[CONFIG_BLOB, new TextEncoder().encode(json)]];
  for (const e of layout.entries) {
    const copy = weights.slice(e.offset, e.offset + e.size);
    out.push([e.name, new Uint8Array(copy.buffer)]);
  }
  return out;
}

/**
 * Rebuilds a model from its blobs. Throws {@link ModelBlobError} when `config.json` is missing
 * or invalid, a tensor is missing or has the wrong byte length, or a blob is not part of the
 * config's model.
 */
export function modelFromBlobs(blobs: ReadonlyMap<string, Uint8Array>): SharedModel {
  requireLittleEndian();
  const configBytes = blobs.get(CONFIG_BLOB);
  if (configBytes === undefined) {
    throw new ModelBlobError(CONFIG_BLOB, `the shared model has no "${CONFIG_BLOB}" blob`);
  }
  const config = parseConfigBlob(configBytes);
  const layout = llamaParamLayout(config);
  const weights = new Float32Array(layout.totalSize);
  for (const e of layout.entries) {
    const bytes = blobs.get(e.name);
    if (bytes === undefined) {
      throw new ModelBlobError(e.name, `the shared model has no tensor "${e.name}"`);
    }
    if (bytes.length !== e.size * 4) {
      throw new ModelBlobError(
        e.name,
        `tensor "${e.name}" has ${bytes.length} bytes, expected ${e.size * 4} ` +
          `(f32, shape [${e.shape.join(", ")}])`,
      );
    }
    // View the bytes as floats where they are 4-byte aligned; otherwise copy them first.
    const aligned = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
    weights.set(new Float32Array(aligned.buffer, aligned.byteOffset, e.size), e.offset);
  }
  for (const name of blobs.keys()) {
    if (name !== CONFIG_BLOB && !layout.byName.has(name)) {
      throw new ModelBlobError(name, `blob "${name}" is not a tensor of this Llama config`);
    }
  }
  return { config, layout, weights };
}
