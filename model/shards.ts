/**
 * Sharded Hugging Face checkpoints, the pure half: how tensors are split into
 * `model-0000K-of-0000N.safetensors` files, the `model.safetensors.index.json` that maps each
 * tensor to its file, and the checks a loaded index must pass against the shards' headers
 * before any tensor data is read. The file I/O is model/checkpoint.ts.
 *
 * The index is what `transformers`' `save_pretrained` writes
 * (`json.dumps(index, indent=2, sort_keys=True) + "\n"`):
 * ```json
 * {
 *   "metadata": {
 *     "total_size": 2471645184
 *   },
 *   "weight_map": {
 *     "lm_head.weight": "model-00002-of-00002.safetensors",
 *     "model.embed_tokens.weight": "model-00001-of-00002.safetensors"
 *   }
 * }
 * ```
 * `total_size` is the sum of the tensors' bytes (headers not counted).
 *
 * @module
 */
import { SafetensorsError, type SafetensorsHeader } from "./safetensors.ts";

/** Index of a sharded checkpoint (tensor name → shard file). */
export const INDEX_FILE = "model.safetensors.index.json";

/**
 * Default largest shard: 2 GB (HF counts in powers of ten). HF's own default is 5 GB; 2 GB keeps
 * every shard under 2 GiB, so one shard is one ordinary ArrayBuffer read and converting a shard
 * at a time bounds the extra host memory of a load.
 */
export const DEFAULT_MAX_SHARD_BYTES = 2_000_000_000;

/** A shard file name as HF writes it: `model-00002-of-00005.safetensors` (1-based). */
export function shardFileName(k: number, n: number): string {
  const pad = (x: number) => String(x).padStart(5, "0");
  return `model-${pad(k)}-of-${pad(n)}.safetensors`;
}

/** Names {@link shardFileName} produces (any shard count), for finding stale shards. */
export const SHARD_FILE_PATTERN = /^model-\d{5}-of-\d{5}\.safetensors$/;

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  KIB: 2 ** 10,
  MIB: 2 ** 20,
  GIB: 2 ** 30,
};

/**
 * Bytes of a size written as HF's `max_shard_size` accepts it: a byte count or a number with
 * KB/MB/GB (powers of ten) or KiB/MiB/GiB (powers of two), case-insensitive.
 *
 * @example
 * ```ts
 * import { parseByteSize } from "./shards.ts";
 * if (parseByteSize("5GB") !== 5e9 || parseByteSize("64KiB") !== 65536) throw new Error();
 * ```
 */
export function parseByteSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = m ? SIZE_UNITS[m[2].toUpperCase()] : undefined;
  const bytes = m && unit !== undefined ? Math.floor(Number(m[1]) * unit) : NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 1) {
    throw new RangeError(
      `size ${JSON.stringify(text)} is not a positive byte count such as 2GB, 500MB or 1GiB`,
    );
  }
  return bytes;
}

/**
 * Splits tensors (in order) into shards of at most `maxBytes` data bytes, as huggingface_hub's
 * `split_state_dict_into_shards_factory` does: a tensor larger than the limit gets a shard of
 * its own at once; otherwise a tensor that would overflow the current shard starts the next.
 * Returns the tensor names of each shard.
 */
export function planShards(
  tensors: readonly { name: string; bytes: number }[],
  maxBytes: number,
): string[][] {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
    throw new RangeError(`max shard size must be a positive byte count, got ${maxBytes}`);
  }
  const shards: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const t of tensors) {
    if (t.bytes > maxBytes) {
      shards.push([t.name]);
      continue;
    }
    if (size + t.bytes > maxBytes && current.length > 0) {
      shards.push(current);
      current = [];
      size = 0;
    }
    current.push(t.name);
    size += t.bytes;
  }
  if (current.length > 0) shards.push(current);
  return shards;
}

/** A parsed `model.safetensors.index.json`. */
export interface ShardIndex {
  /** Tensor name → shard file name (a plain file name in the same folder). */
  weightMap: Map<string, string>;
  /** `metadata.total_size`, or null when the index does not give it. */
  totalSize: number | null;
}

/** The index file's text, byte for byte as `save_pretrained` writes it. */
export function formatShardIndex(index: ShardIndex): string {
  const names = [...index.weightMap.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const json = {
    metadata: index.totalSize === null ? {} : { total_size: index.totalSize },
    weight_map: Object.fromEntries(names.map((n) => [n, index.weightMap.get(n)!])),
  };
  return JSON.stringify(json, null, 2) + "\n";
}

/**
 * Validates a parsed `model.safetensors.index.json`: `weight_map` an object of tensor name →
 * `.safetensors` file name in the same folder (no paths), `metadata.total_size` (when given) a
 * byte count. Throws {@link SafetensorsError} naming the file and tensor.
 */
export function parseShardIndex(raw: unknown, file = INDEX_FILE): ShardIndex {
  const fail = (tensor: string | null, msg: string): never => {
    throw new SafetensorsError(tensor, `Cannot load "${file}": ${msg}`);
  };
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    fail(null, "the index is not a JSON object");
  }
  const { weight_map: map, metadata } = raw as { weight_map?: unknown; metadata?: unknown };
  if (typeof map !== "object" || map === null || Array.isArray(map)) {
    fail(null, `"weight_map" is not an object`);
  }
  let totalSize: number | null = null;
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== "object" || Array.isArray(metadata)) {
      fail(null, `"metadata" is not an object`);
    }
    const t = (metadata as Record<string, unknown>).total_size;
    if (t !== undefined) {
      if (typeof t !== "number" || !Number.isSafeInteger(t) || t < 0) {
        fail(null, `"metadata.total_size" must be a byte count, found ${JSON.stringify(t)}`);
      }
      totalSize = t as number;
    }
  }
  const weightMap = new Map<string, string>();
  for (const [tensor, shard] of Object.entries(map as Record<string, unknown>)) {
    if (
      typeof shard !== "string" || !/^[\w.-]+\.safetensors$/.test(shard) || shard.startsWith(".")
    ) {
      fail(
        tensor,
        `tensor "${tensor}" maps to ${JSON.stringify(shard)}, ` +
          `expected a .safetensors file name in the same folder`,
      );
    }
    weightMap.set(tensor, shard as string);
  }
  if (weightMap.size === 0) fail(null, `"weight_map" names no tensor`);
  return { weightMap, totalSize };
}

/** One tensor the model needs: its name, shape, and whether a missing one may be skipped. */
export interface ExpectedTensor {
  name: string;
  shape: readonly number[];
}

/**
 * Checks an index against the headers of its shards, before any tensor data is read:
 * every tensor in `expected` is mapped, every mapped tensor is in the header of its own shard
 * (and in no other), the shapes match, no shard holds a tensor the index does not assign to it,
 * and `metadata.total_size` equals the tensors' bytes. `ignored` names tensors that may be
 * present but are not parameters. Throws {@link SafetensorsError} naming the file and tensor.
 */
export function checkShardIndex(
  index: ShardIndex,
  headers: ReadonlyMap<string, SafetensorsHeader>,
  options: { expected: readonly ExpectedTensor[]; ignored?: RegExp; dir?: string },
): void {
  const path = (file: string) => options.dir === undefined ? file : `${options.dir}/${file}`;
  const indexFile = INDEX_FILE;
  const fail = (file: string, tensor: string | null, msg: string): never => {
    throw new SafetensorsError(tensor, `Cannot load "${path(file)}": ${msg}`);
  };
  for (const shard of new Set(index.weightMap.values())) {
    if (!headers.has(shard)) fail(shard, null, `shard named by ${indexFile} was not read`);
  }
  // Every tensor of every shard is assigned to that shard, so none is in two files.
  let tensorBytes = 0;
  for (const [shard, header] of headers) {
    for (const [name, t] of header.tensors) {
      const assigned = index.weightMap.get(name);
      if (assigned === undefined) {
        fail(shard, name, `tensor "${name}" is not listed in ${indexFile}`);
      }
      if (assigned !== shard) {
        fail(
          shard,
          name,
          `tensor "${name}" is also stored here, but ${indexFile} assigns it to "${assigned}"`,
        );
      }
      tensorBytes += t.end - t.begin;
    }
  }
  for (const [name, shard] of index.weightMap) {
    if (!headers.get(shard)!.tensors.has(name)) {
      fail(shard, name, `tensor "${name}" is missing (${indexFile} says it is in this shard)`);
    }
  }
  for (const e of options.expected) {
    const shard = index.weightMap.get(e.name);
    if (shard === undefined) {
      fail(indexFile, e.name, `tensor "${e.name}" is missing from "weight_map"`);
    }
    const t = headers.get(shard!)!.tensors.get(e.name)!;
    if (t.shape.length !== e.shape.length || t.shape.some((d, i) => d !== e.shape[i])) {
      fail(
        shard!,
        e.name,
        `tensor "${e.name}" has shape [${t.shape.join(", ")}], expected [${e.shape.join(", ")}]`,
      );
    }
  }
  const wanted = new Set(options.expected.map((e) => e.name));
  for (const [name, shard] of index.weightMap) {
    if (!wanted.has(name) && !options.ignored?.test(name)) {
      fail(shard, name, `unexpected tensor "${name}" (not part of this Llama config)`);
    }
  }
  if (index.totalSize !== null && index.totalSize !== tensorBytes) {
    // Some hand-written indexes sum the shards' file sizes; accept that reading too.
    let fileBytes = 0;
    for (const h of headers.values()) fileBytes += h.dataStart + h.dataBytes;
    if (index.totalSize !== fileBytes) {
      fail(
        indexFile,
        null,
        `"metadata.total_size" is ${index.totalSize}, but the shards' tensors hold ` +
          `${tensorBytes} bytes`,
      );
    }
  }
}
