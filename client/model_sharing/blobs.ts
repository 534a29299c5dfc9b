/**
 * A model as the named blobs P2P model sharing serves: `config.json` (the HF config, UTF-8
 * JSON, dtype `raw`) and one blob per parameter tensor under its Hugging Face name, holding the
 * tensor's values row-major (shape from the config) as **bf16** little-endian when every value
 * of the tensor is exactly a bf16 value, else as **f32** little-endian. The manifest records
 * each blob's dtype.
 *
 * Why bf16 only where it is exact (Psyche always sends bf16): every honest client must hold
 * bit-identical parameters (results are applied to the same bits everywhere, and the run
 * compares parameter digests). A joiner that received rounded weights would start from
 * different bits than the f32 masters of the others and drift. Sharing a tensor in bf16 only
 * when its f32 values have zero low halves makes the encoding lossless, so the joiner's f32
 * expansion is the others' parameters bit for bit, and it halves the bytes of every such
 * tensor: a model just loaded from a bf16 checkpoint, RMSNorm weights still at 1, or a run
 * whose clients round their masters to bf16 at the epoch boundary (docs/testnet.md). The rule
 * is a function of the parameters alone, so every honest client of an epoch still serves the
 * same manifest bytes.
 *
 * For a bf16-exact f32 the bf16 bits are its high half, which is what round-to-nearest-even
 * (`encodeBf16`, model/float_codec.ts) gives; expanding is `decodeBf16` (exact).
 *
 * Pure: no I/O. Decoding checks that the config parses, that every tensor of that config is
 * present as f32 or bf16 with exactly the right byte length, and that nothing else is there.
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
 * const back = modelFromBlobs(modelToBlobs({ config, layout, weights }));
 * if (!back.weights.every((w, i) => w === weights[i])) throw new Error("not bit-identical");
 * ```
 *
 * @module
 */
import {
  decodeBf16,
  HfConfigError,
  type LlamaConfig,
  llamaConfigToHf,
  llamaParamLayout,
  type ParamLayout,
  parseLlamaConfig,
} from "../../model/mod.ts";
import { type BlobDtype, type BlobToShare, TENSOR_DTYPE_BYTES } from "../../net/p2p/mod.ts";
import { runSteps } from "../../common/mod.ts";

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
 * The element count of every tensor blob of the model a `config.json` blob describes, by name:
 * with each blob's dtype, what a manifest must list before any tensor is fetched. Throws
 * {@link ModelBlobError} for bytes that are not a valid config.
 */
export function tensorElements(configBytes: Uint8Array): Map<string, number> {
  const layout = llamaParamLayout(parseConfigBlob(configBytes));
  return new Map(layout.entries.map((e) => [e.name, e.size]));
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
 * True when every value of `values` is exactly a bf16 value (the low 16 bits of each f32 are
 * zero), so sharing it as bf16 loses nothing.
 */
export function isBf16Exact(values: Float32Array): boolean {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < bits.length; i++) {
    if ((bits[i] & 0xffff) !== 0) return false;
  }
  return true;
}

/** Floats {@link modelToBlobSteps} encodes between two pauses by default: 16 MiB of f32. */
export const ENCODE_STEP_FLOATS = 4 * 2 ** 20;

/**
 * The blobs of `model`: `config.json` first, then every tensor in layout order, each as bf16
 * when that is exact and as f32 otherwise. Each tensor blob is a fresh copy, so later changes
 * to `weights` do not change what is served. `onProgress` hears the f32 bytes encoded so far.
 */
export function modelToBlobs(
  model: SharedModel,
  onProgress?: (doneBytes: number, totalBytes: number) => void,
): [name: string, bytes: Uint8Array, BlobDtype][] {
  return runSteps(modelToBlobSteps(model, { onProgress }));
}

/**
 * {@link modelToBlobs} as steps: a tensor is checked and copied `chunkFloats` at a time (default
 * {@link ENCODE_STEP_FLOATS}), with a pause (a `yield`) after every chunk and every tensor, so
 * a caller on the event loop can give it a turn while a 1B model is encoded. Same blobs.
 */
export function* modelToBlobSteps(
  model: SharedModel,
  options: { onProgress?: (doneBytes: number, totalBytes: number) => void; chunkFloats?: number } =
    {},
): Generator<void, [name: string, bytes: Uint8Array, BlobDtype][]> {
  requireLittleEndian();
  const { config, layout, weights } = model;
  if (weights.length !== layout.totalSize) {
    throw new RangeError(`expected ${layout.totalSize} floats, found ${weights.length}`);
  }
  const chunk = Math.max(1, options.chunkFloats ?? ENCODE_STEP_FLOATS);
  const json = JSON.stringify(llamaConfigToHf(config));
  const out: [string, Uint8Array, BlobDtype][] = [
    [CONFIG_BLOB, new TextEncoder().encode(json), "raw"],
  ];
  let done = 0;
  for (const e of layout.entries) {
    const values = weights.subarray(e.offset, e.offset + e.size);
    const bf16 = yield* isBf16ExactSteps(values, chunk);
    const blob = bf16 ? new Uint16Array(e.size) : new Float32Array(e.size);
    for (let start = 0; start < e.size; start += chunk) {
      const end = Math.min(e.size, start + chunk);
      if (bf16) putBf16Halves(values.subarray(start, end), blob as Uint16Array, start);
      else blob.set(values.subarray(start, end), start);
      options.onProgress?.(4 * (done + end), 4 * layout.paramCount);
      yield;
    }
    done += e.size;
    out.push([e.name, new Uint8Array(blob.buffer), bf16 ? "bf16" : "f32"]);
  }
  return out;
}

/** {@link isBf16Exact}, `chunk` floats at a time with a pause after each but the last. */
function* isBf16ExactSteps(values: Float32Array, chunk: number): Generator<void, boolean> {
  for (let start = 0; start < values.length; start += chunk) {
    const end = Math.min(values.length, start + chunk);
    if (!isBf16Exact(values.subarray(start, end))) return false;
    if (end < values.length) yield;
  }
  return true;
}

/** Writes the high halves of bf16-exact f32 `values` (their bf16 bits) into `out` from `at`. */
function putBf16Halves(values: Float32Array, out: Uint16Array, at: number): void {
  const halves = new Uint16Array(values.buffer, values.byteOffset, values.length * 2);
  for (let i = 0; i < values.length; i++) out[at + i] = halves[2 * i + 1];
}

/**
 * Rebuilds a model from its blobs (name, bytes, dtype, as a manifest lists them). Throws
 * {@link ModelBlobError} when `config.json` is missing or invalid, a blob is listed twice, a
 * tensor is missing, is not f32 or bf16, or has the wrong byte length for its dtype, or a blob
 * is not part of the config's model.
 */
export function modelFromBlobs(blobs: Iterable<BlobToShare>): SharedModel {
  requireLittleEndian();
  const byName = new Map<string, { bytes: Uint8Array; dtype: BlobDtype }>();
  for (const [name, bytes, dtype = "raw"] of blobs) {
    if (byName.has(name)) throw new ModelBlobError(name, `blob "${name}" is given twice`);
    byName.set(name, { bytes, dtype });
  }
  const configBytes = byName.get(CONFIG_BLOB)?.bytes;
  if (configBytes === undefined) {
    throw new ModelBlobError(CONFIG_BLOB, `the shared model has no "${CONFIG_BLOB}" blob`);
  }
  const config = parseConfigBlob(configBytes);
  const layout = llamaParamLayout(config);
  const weights = new Float32Array(layout.totalSize);
  for (const e of layout.entries) {
    const blob = byName.get(e.name);
    if (blob === undefined) {
      throw new ModelBlobError(e.name, `the shared model has no tensor "${e.name}"`);
    }
    const { bytes, dtype } = blob;
    if (dtype !== "f32" && dtype !== "bf16") {
      throw new ModelBlobError(e.name, `tensor "${e.name}" is ${dtype}, expected f32 or bf16`);
    }
    const width = TENSOR_DTYPE_BYTES[dtype];
    if (bytes.length !== e.size * width) {
      throw new ModelBlobError(
        e.name,
        `tensor "${e.name}" has ${bytes.length} bytes, expected ${e.size * width} ` +
          `(${dtype}, shape [${e.shape.join(", ")}])`,
      );
    }
    // View the bytes as numbers where they are aligned; otherwise copy them first.
    const aligned = bytes.byteOffset % width === 0 ? bytes : bytes.slice();
    const values = dtype === "f32"
      ? new Float32Array(aligned.buffer, aligned.byteOffset, e.size)
      : decodeBf16(new Uint16Array(aligned.buffer, aligned.byteOffset, e.size));
    weights.set(values, e.offset);
  }
  for (const name of byName.keys()) {
    if (name !== CONFIG_BLOB && !layout.byName.has(name)) {
      throw new ModelBlobError(name, `blob "${name}" is not a tensor of this Llama config`);
    }
  }
  return { config, layout, weights };
}
