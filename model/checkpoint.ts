/**
 * Hugging Face model folders: `config.json` + `model.safetensors`, mapped onto the flat
 * parameter buffer of params.ts. Loading checks that every expected tensor is present with the
 * expected shape and that nothing unexpected is there; saving writes the same names back.
 *
 * @module
 */
import { type LlamaConfig, llamaConfigToHf, readLlamaConfig } from "./hf_config.ts";
import { llamaParamLayout, type ParamLayout, paramView } from "./params.ts";
import {
  type FloatDtype,
  readSafetensors,
  SafetensorsError,
  type SafetensorsFile,
  type StoredTensor,
  tensorFromFloat32,
  tensorToFloat32,
  writeSafetensors,
} from "./safetensors.ts";

/** Weights file name inside a model folder. */
export const WEIGHTS_FILE = "model.safetensors";
/** Index of a sharded checkpoint (tensor name → shard file). */
export const INDEX_FILE = "model.safetensors.index.json";
/** Config file name inside a model folder. */
export const CONFIG_FILE = "config.json";

/** Tensors HF checkpoints may carry that are buffers, not parameters (ignored on load). */
const IGNORED_TENSOR = /^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$/;

/**
 * Copies the tensors of a decoded safetensors file into a new flat buffer laid out by `layout`.
 * Throws {@link SafetensorsError} naming the file and tensor on a missing, unexpected or
 * wrongly shaped tensor.
 */
export function weightsFromSafetensors(
  layout: ParamLayout,
  file: SafetensorsFile,
  options?: { file?: string },
): Float32Array {
  const where = options?.file ?? WEIGHTS_FILE;
  const flat = new Float32Array(layout.totalSize);
  for (const e of layout.entries) {
    const t = file.tensors.get(e.name);
    if (t === undefined) {
      throw new SafetensorsError(e.name, `Cannot load "${where}": tensor "${e.name}" is missing`);
    }
    if (t.shape.length !== e.shape.length || t.shape.some((d, i) => d !== e.shape[i])) {
      throw new SafetensorsError(
        e.name,
        `Cannot load "${where}": tensor "${e.name}" has shape [${t.shape.join(", ")}], ` +
          `expected [${e.shape.join(", ")}]`,
      );
    }
    flat.set(tensorToFloat32(e.name, t), e.offset);
  }
  for (const name of file.tensors.keys()) {
    if (!layout.byName.has(name) && !IGNORED_TENSOR.test(name)) {
      throw new SafetensorsError(
        name,
        `Cannot load "${where}": unexpected tensor "${name}" (not part of this Llama config)`,
      );
    }
  }
  return flat;
}

/** The tensors of a flat buffer as a safetensors file, stored as `dtype`. */
export function weightsToSafetensors(
  layout: ParamLayout,
  flat: Float32Array,
  dtype: FloatDtype,
): SafetensorsFile {
  if (flat.length !== layout.totalSize) {
    throw new RangeError(`expected ${layout.totalSize} floats, found ${flat.length}`);
  }
  const tensors = new Map<string, StoredTensor>();
  for (const e of layout.entries) {
    tensors.set(e.name, tensorFromFloat32(paramView(layout, flat, e.name), e.shape, dtype));
  }
  return { tensors, metadata: { format: "pt" } };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/**
 * The shard file of every tensor from a parsed `model.safetensors.index.json`
 * (`{"weight_map": {tensor: file}}`). Shard names must be plain file names in the same folder.
 */
export function parseShardIndex(raw: unknown, file = INDEX_FILE): Map<string, string> {
  const map = (raw as { weight_map?: unknown } | null)?.weight_map;
  if (typeof map !== "object" || map === null || Array.isArray(map)) {
    throw new SafetensorsError(null, `Cannot load "${file}": "weight_map" is not an object`);
  }
  const out = new Map<string, string>();
  for (const [tensor, shard] of Object.entries(map)) {
    if (
      typeof shard !== "string" || !/^[\w.-]+\.safetensors$/.test(shard) || shard.startsWith(".")
    ) {
      throw new SafetensorsError(
        tensor,
        `Cannot load "${file}": tensor "${tensor}" maps to ${JSON.stringify(shard)}, ` +
          `expected a .safetensors file name in the same folder`,
      );
    }
    out.set(tensor, shard);
  }
  return out;
}

/** Reads a sharded checkpoint: every shard named by the index, each tensor from its own shard. */
async function readShards(dir: string): Promise<SafetensorsFile> {
  const indexPath = `${dir}/${INDEX_FILE}`;
  let raw: unknown;
  try {
    raw = JSON.parse(await Deno.readTextFile(indexPath));
  } catch (e) {
    throw new SafetensorsError(null, `Cannot load "${indexPath}": ${(e as Error).message}`);
  }
  const index = parseShardIndex(raw, indexPath);
  const tensors = new Map<string, StoredTensor>();
  for (const shard of new Set(index.values())) {
    const path = `${dir}/${shard}`;
    const file = await readSafetensors(path);
    for (const [name, t] of file.tensors) {
      if (index.get(name) !== shard) {
        throw new SafetensorsError(
          name,
          `Cannot load "${path}": tensor "${name}" is not assigned to this shard by ${INDEX_FILE}`,
        );
      }
      tensors.set(name, t);
    }
  }
  for (const [name, shard] of index) {
    if (!tensors.has(name)) {
      throw new SafetensorsError(
        name,
        `Cannot load "${dir}/${shard}": tensor "${name}" is missing`,
      );
    }
  }
  return { tensors, metadata: null };
}

/**
 * Reads `DIR/config.json` and the weights: `DIR/model.safetensors`, or the shards listed in
 * `DIR/model.safetensors.index.json`; `weights` is null when the folder has neither.
 */
export async function readModelDir(
  dir: string,
): Promise<{ config: LlamaConfig; layout: ParamLayout; weights: Float32Array | null }> {
  const config = await readLlamaConfig(`${dir}/${CONFIG_FILE}`);
  const layout = llamaParamLayout(config);
  const single = `${dir}/${WEIGHTS_FILE}`;
  if (await exists(single)) {
    const weights = weightsFromSafetensors(layout, await readSafetensors(single), { file: single });
    return { config, layout, weights };
  }
  if (await exists(`${dir}/${INDEX_FILE}`)) {
    const weights = weightsFromSafetensors(layout, await readShards(dir), { file: dir });
    return { config, layout, weights };
  }
  return { config, layout, weights: null };
}

/** Writes `DIR/config.json` and `DIR/model.safetensors` (creating DIR). */
export async function writeModelDir(
  dir: string,
  model: { config: LlamaConfig; layout: ParamLayout; weights: Float32Array; dtype?: FloatDtype },
): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/${CONFIG_FILE}`,
    JSON.stringify(llamaConfigToHf(model.config), null, 2) + "\n",
  );
  await writeSafetensors(
    `${dir}/${WEIGHTS_FILE}`,
    weightsToSafetensors(model.layout, model.weights, model.dtype ?? "F32"),
  );
}
