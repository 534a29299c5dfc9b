/**
 * Hugging Face model folders: `config.json` + `model.safetensors` (or the shards of
 * `model.safetensors.index.json`, model/shards.ts), mapped onto the flat
 * parameter buffer of params.ts. Loading checks that every expected tensor is present with the
 * expected shape and that nothing unexpected is there; saving writes the same names back.
 *
 * @module
 */
import { type LlamaConfig, llamaConfigToHf, readLlamaConfig } from "./hf_config.ts";
import { llamaParamLayout, type ParamLayout, paramView } from "./params.ts";
import {
  type FloatDtype,
  readSafetensorsHeader,
  SafetensorsError,
  type SafetensorsFile,
  type SafetensorsHeader,
  type StoredTensor,
  tensorByteSize,
  tensorFromFloat32,
  type TensorHeader,
  tensorToFloat32,
} from "./safetensors.ts";
import { encodeBf16, encodeF16 } from "./float_codec.ts";
import {
  SAVE_CHUNK_FLOATS,
  type StreamedTensor,
  writeSafetensorsStreamed,
} from "./safetensors_stream.ts";
import {
  checkShardIndex,
  DEFAULT_MAX_SHARD_BYTES,
  formatShardIndex,
  INDEX_FILE,
  parseShardIndex,
  planShards,
  SHARD_FILE_PATTERN,
  shardFileName,
} from "./shards.ts";

/** Weights file name inside a model folder. */
export const WEIGHTS_FILE = "model.safetensors";
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
    flat.set(tensorToFloat32(e.name, expectedTensor(file.tensors, e, where)), e.offset);
  }
  checkNoUnexpected(layout, file.tensors, where);
  return flat;
}

/** `e`'s tensor of `tensors`; throws naming `where` when it is missing or wrongly shaped. */
function expectedTensor<T extends { shape: readonly number[] }>(
  tensors: ReadonlyMap<string, T>,
  e: ParamLayout["entries"][number],
  where: string,
): T {
  const t = tensors.get(e.name);
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
  return t;
}

/** Throws naming `where` and the tensor when `tensors` holds one `layout` does not expect. */
function checkNoUnexpected(
  layout: ParamLayout,
  tensors: ReadonlyMap<string, unknown>,
  where: string,
): void {
  for (const name of tensors.keys()) {
    if (!layout.byName.has(name) && !IGNORED_TENSOR.test(name)) {
      throw new SafetensorsError(
        name,
        `Cannot load "${where}": unexpected tensor "${name}" (` +
          (name === "lm_head.weight"
            ? "the config ties the LM head to model.embed_tokens.weight: tie_word_embeddings)"
            : "not part of this Llama config)"),
      );
    }
  }
}

/** How far a read of a model's weights got: bytes of tensor data read, of the total. */
export type ReadProgress = (doneBytes: number, totalBytes: number) => void;

/** One tensor of a file: where to find its bytes. */
interface TensorSource {
  path: string;
  dataStart: number;
  tensor: TensorHeader;
}

/**
 * Reads each entry of `layout` from its `sources` one tensor at a time, converted to f32 into a
 * new flat buffer: the host holds one tensor's bytes besides the weights, and `onProgress`
 * hears after each tensor (a 1B model's files take seconds to read and convert).
 */
async function readTensors(
  layout: ParamLayout,
  sources: ReadonlyMap<string, TensorSource>,
  onProgress?: ReadProgress,
): Promise<Float32Array> {
  const flat = new Float32Array(layout.totalSize);
  let total = 0;
  for (const { tensor } of sources.values()) total += tensor.end - tensor.begin;
  let done = 0;
  const open = new Map<string, Deno.FsFile>();
  try {
    for (const e of layout.entries) {
      const { path, dataStart, tensor } = sources.get(e.name)!;
      let file = open.get(path);
      if (file === undefined) {
        // One file open at a time: the next tensor in another shard closes this one.
        for (const f of open.values()) f.close();
        open.clear();
        file = await Deno.open(path, { read: true });
        open.set(path, file);
      }
      await file.seek(dataStart + tensor.begin, Deno.SeekMode.Start);
      const bytes = new Uint8Array(tensor.end - tensor.begin);
      await readFully(file, bytes, path);
      flat.set(
        tensorToFloat32(e.name, { dtype: tensor.dtype, shape: tensor.shape, bytes }),
        e.offset,
      );
      done += bytes.length;
      onProgress?.(done, total);
    }
  } finally {
    for (const f of open.values()) f.close();
  }
  return flat;
}

async function readFully(file: Deno.FsFile, into: Uint8Array, path: string): Promise<void> {
  for (let got = 0; got < into.length;) {
    const n = await file.read(into.subarray(got));
    if (n === null) throw new Deno.errors.UnexpectedEof(`Cannot load "${path}": it ended early`);
    got += n;
  }
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

/** Files in `dir` named like HF shards (`model-0000K-of-0000N.safetensors`). */
async function shardFilesIn(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && SHARD_FILE_PATTERN.test(e.name)) out.push(e.name);
  }
  return out.sort();
}

/** A sharded folder's index and the header of each shard it names, keyed by shard file name. */
interface ShardHeaders {
  index: { weightMap: Map<string, string>; totalSize: number | null };
  headers: Map<string, SafetensorsHeader>;
}

/**
 * Reads `DIR/model.safetensors.index.json` and one header per shard it names. Throws
 * {@link SafetensorsError} naming the index when it is not valid JSON or not an index, and
 * naming a shard (and a tensor the index puts in it) when that file is missing.
 */
async function readShardHeaders(dir: string): Promise<ShardHeaders> {
  const indexPath = `${dir}/${INDEX_FILE}`;
  let raw: unknown;
  try {
    raw = JSON.parse(await Deno.readTextFile(indexPath));
  } catch (e) {
    throw new SafetensorsError(null, `Cannot load "${indexPath}": ${(e as Error).message}`);
  }
  const index = parseShardIndex(raw, indexPath);
  const headers = new Map<string, SafetensorsHeader>();
  for (const [tensor, shard] of index.weightMap) {
    if (headers.has(shard)) continue;
    const path = `${dir}/${shard}`;
    if (!(await exists(path))) {
      throw new SafetensorsError(
        tensor,
        `Cannot load "${path}": the file is missing (${INDEX_FILE} puts "${tensor}" in it)`,
      );
    }
    headers.set(shard, await readSafetensorsHeader(path));
  }
  return { index, headers };
}

/**
 * Reads a sharded checkpoint into a new flat buffer. Every shard's header is read and checked
 * against the index and the layout first (model/shards.ts `checkShardIndex`); then the tensors
 * are read one at a time, so a load holds at most one tensor's bytes besides the f32 weights.
 */
async function readShardedWeights(
  dir: string,
  layout: ParamLayout,
  onProgress?: ReadProgress,
): Promise<Float32Array> {
  const { index, headers } = await readShardHeaders(dir);
  checkShardIndex(index, headers, {
    expected: layout.entries,
    ignored: IGNORED_TENSOR,
    dir,
  });
  // The index maps every expected tensor to a shard whose header holds it (checked above).
  const sources = new Map<string, TensorSource>();
  for (const e of layout.entries) {
    const shard = index.weightMap.get(e.name)!;
    const header = headers.get(shard)!;
    sources.set(e.name, {
      path: `${dir}/${shard}`,
      dataStart: header.dataStart,
      tensor: header.tensors.get(e.name)!,
    });
  }
  return await readTensors(layout, sources, onProgress);
}

/**
 * Reads `DIR/config.json` and the weights: `DIR/model.safetensors`, else the shards listed in
 * `DIR/model.safetensors.index.json` (as Hugging Face looks for them); `weights` is null when
 * the folder has neither. F32, BF16 and F16 tensors load into the f32 layout (exactly).
 */
export async function readModelDir(
  dir: string,
  options: { onProgress?: ReadProgress } = {},
): Promise<{ config: LlamaConfig; layout: ParamLayout; weights: Float32Array | null }> {
  if (!(await exists(dir)) && (await exists(`${dir}${PREVIOUS_SUFFIX}`))) {
    throw new Deno.errors.NotFound(
      `Cannot load "${dir}": it is missing, but "${dir}${PREVIOUS_SUFFIX}" holds the checkpoint ` +
        `it replaced (a save was cut off between its two renames): rename that folder back`,
    );
  }
  const config = await readLlamaConfig(`${dir}/${CONFIG_FILE}`);
  const layout = llamaParamLayout(config);
  const single = `${dir}/${WEIGHTS_FILE}`;
  if (await exists(single)) {
    // Checked whole before any tensor is read, as a decoded file would be.
    const header = await readSafetensorsHeader(single);
    const sources = new Map<string, TensorSource>();
    for (const e of layout.entries) {
      const tensor = expectedTensor(header.tensors, e, single);
      sources.set(e.name, { path: single, dataStart: header.dataStart, tensor });
    }
    checkNoUnexpected(layout, header.tensors, single);
    return { config, layout, weights: await readTensors(layout, sources, options.onProgress) };
  }
  if (await exists(`${dir}/${INDEX_FILE}`)) {
    return { config, layout, weights: await readShardedWeights(dir, layout, options.onProgress) };
  }
  const orphans = await shardFilesIn(dir);
  if (orphans.length > 0) {
    // Shards without their index: an interrupted save, or an incomplete download.
    throw new SafetensorsError(
      null,
      `Cannot load "${dir}": it holds ${orphans[0]} but no ${INDEX_FILE} (an interrupted save ` +
        `or download?); restore the index or remove the shards`,
    );
  }
  return { config, layout, weights: null };
}

/** Writes `bytes` to `path` through a temporary file and a rename. */
async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  const tmp = `${path}.tmp`;
  await Deno.writeFile(tmp, bytes);
  await Deno.rename(tmp, path);
}

/** Suffix of the folder a replaced checkpoint waits in until its successor is in place. */
export const PREVIOUS_SUFFIX = ".previous";

/**
 * Fills a folder atomically: `fill` writes into a fresh temporary folder beside `dir` (same
 * parent, so the renames never cross a file system), which then takes `dir`'s place. A crash
 * before that leaves only the temporary folder (`.DIR.tmp-*`, removed on the next call's
 * failure path or by hand); `dir` is either the old complete folder or the new one. Linux
 * cannot rename a folder over a non-empty one, so an existing `dir` is first moved to
 * `DIR.previous` and removed once the new folder is in place: a crash between those two
 * renames leaves no `dir` but a complete `DIR.previous` ({@link readModelDir}'s error says so).
 */
export async function writeDirAtomically(
  dir: string,
  fill: (tmp: string) => Promise<void>,
): Promise<void> {
  const trimmed = dir.replace(/\/+$/, "");
  const slash = trimmed.lastIndexOf("/");
  const parent = slash < 0 ? "." : slash === 0 ? "/" : trimmed.slice(0, slash);
  const base = trimmed.slice(slash + 1);
  await Deno.mkdir(parent, { recursive: true });
  const tmp = await Deno.makeTempDir({ dir: parent, prefix: `.${base}.tmp-` });
  try {
    await fill(tmp);
    const previous = `${trimmed}${PREVIOUS_SUFFIX}`;
    await Deno.remove(previous, { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
    let moved = false;
    try {
      await Deno.rename(trimmed, previous);
      moved = true;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    await Deno.rename(tmp, trimmed);
    if (moved) await Deno.remove(previous, { recursive: true });
  } catch (e) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    throw e;
  }
}

async function removeIfPresent(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/**
 * Reads flat floats `[start, start + count)` of the weights, a range inside one tensor (a chunk
 * read off the GPU, for a streamed save). The array may be reused once the next range is asked.
 */
export type FloatRangeReader = (start: number, count: number) => Promise<Float32Array>;

/** What {@link writeModelDir} writes. */
export interface ModelDirContents {
  config: LlamaConfig;
  layout: ParamLayout;
  /** `[layout.totalSize]` f32 weights, or a reader of them (the save then streams). */
  weights: Float32Array | FloatRangeReader;
  /** Storage dtype of the weights (default F32); config.json's `torch_dtype` follows it. */
  dtype?: FloatDtype;
  /**
   * Largest shard's tensor bytes (default {@link DEFAULT_MAX_SHARD_BYTES}). Weights over it are
   * split into `model-0000K-of-0000N.safetensors` with `model.safetensors.index.json`.
   */
  maxShardBytes?: number;
  /** Floats read and written at a time (default {@link SAVE_CHUNK_FLOATS}). */
  chunkFloats?: number;
}

/** f32 values as `dtype`'s bytes (f32: a view, no copy). */
function floatBytes(values: Float32Array, dtype: FloatDtype): Uint8Array {
  switch (dtype) {
    case "F32":
      return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    case "F16":
      return new Uint8Array(encodeF16(values).buffer);
    case "BF16":
      return new Uint8Array(encodeBf16(values).buffer);
  }
}

/** The weights' tensors in layout order, each streamed from `read` a chunk at a time. */
function streamedWeights(
  layout: ParamLayout,
  read: FloatRangeReader,
  options: { dtype: FloatDtype; chunkFloats: number },
): StreamedTensor[] {
  const { dtype, chunkFloats } = options;
  if (!Number.isInteger(chunkFloats) || chunkFloats < 1) {
    throw new RangeError(`chunkFloats must be a positive integer, got ${chunkFloats}`);
  }
  return layout.entries.map((e) => ({
    name: e.name,
    dtype,
    shape: e.shape,
    async *chunks() {
      for (let start = 0; start < e.size; start += chunkFloats) {
        const count = Math.min(chunkFloats, e.size - start);
        yield floatBytes(await read(e.offset + start, count), dtype);
      }
    },
  }));
}

/**
 * Writes `DIR/config.json` and the weights (creating DIR): `model.safetensors`, or shards and
 * their index when the weights exceed `maxShardBytes`, as `save_pretrained` lays them out. The
 * tensor files are streamed (model/safetensors_stream.ts): the host holds one chunk of weights
 * besides whatever `weights` itself holds.
 *
 * Every file is written to a temporary name and renamed. A sharded save first removes the old
 * index, renames the shards in, and writes the new index last, so an interrupted save leaves
 * shards without an index (which {@link readModelDir} refuses) rather than a mix of two saves.
 * Weight files of an earlier save in the other form are removed afterwards.
 */
export async function writeModelDir(dir: string, model: ModelDirContents): Promise<void> {
  const dtype = model.dtype ?? "F32";
  const { layout, weights } = model;
  if (weights instanceof Float32Array && weights.length !== layout.totalSize) {
    throw new RangeError(`expected ${layout.totalSize} floats, found ${weights.length}`);
  }
  const read: FloatRangeReader = weights instanceof Float32Array
    ? (start, count) => Promise.resolve(weights.subarray(start, start + count))
    : weights;
  await Deno.mkdir(dir, { recursive: true });
  const hf = llamaConfigToHf(model.config, { torchDtype: TORCH_DTYPES[dtype] });
  await writeAtomically(
    `${dir}/${CONFIG_FILE}`,
    new TextEncoder().encode(JSON.stringify(hf, null, 2) + "\n"),
  );
  const all = streamedWeights(layout, read, {
    dtype,
    chunkFloats: model.chunkFloats ?? SAVE_CHUNK_FLOATS,
  });
  const byName = new Map(all.map((t) => [t.name, t]));
  const plan = planShards(
    all.map((t) => ({ name: t.name, bytes: tensorByteSize(t) })),
    model.maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES,
  );
  const metadata = { format: "pt" };
  const stale = await shardFilesIn(dir);
  if (plan.length === 1) {
    const path = `${dir}/${WEIGHTS_FILE}`;
    await writeSafetensorsStreamed(`${path}.tmp`, { tensors: all, metadata });
    await Deno.rename(`${path}.tmp`, path);
    await removeIfPresent(`${dir}/${INDEX_FILE}`);
    for (const name of stale) await removeIfPresent(`${dir}/${name}`);
    return;
  }
  const weightMap = new Map<string, string>();
  const names = plan.map((_, k) => shardFileName(k + 1, plan.length));
  for (const [k, tensorNames] of plan.entries()) {
    await writeSafetensorsStreamed(`${dir}/${names[k]}.tmp`, {
      tensors: tensorNames.map((n) => byName.get(n)!),
      metadata,
    });
    for (const n of tensorNames) weightMap.set(n, names[k]);
  }
  await removeIfPresent(`${dir}/${INDEX_FILE}`);
  for (const name of names) await Deno.rename(`${dir}/${name}.tmp`, `${dir}/${name}`);
  const totalSize = all.reduce((a, t) => a + tensorByteSize(t), 0);
  await writeAtomically(
    `${dir}/${INDEX_FILE}`,
    new TextEncoder().encode(formatShardIndex({ weightMap, totalSize })),
  );
  await removeIfPresent(`${dir}/${WEIGHTS_FILE}`);
  for (const name of stale) if (!names.includes(name)) await removeIfPresent(`${dir}/${name}`);
}

/** config.json's `torch_dtype` for each storage dtype. */
const TORCH_DTYPES: Record<FloatDtype, "float32" | "bfloat16" | "float16"> = {
  F32: "float32",
  BF16: "bfloat16",
  F16: "float16",
};

/** Where one f32 tensor's bytes lie in a weights file: read a chunk at a time on a resume. */
export interface F32TensorSource {
  /** Absolute byte offset of the tensor's first value in `path`. */
  fileOffset: number;
  path: string;
  /** The tensor's place in the flat layout. */
  offset: number;
  size: number;
}

/**
 * The byte ranges of a model folder's weights when every tensor is F32, from the headers alone
 * (checked against `layout` and, for shards, the index, like {@link readModelDir}); null when
 * a tensor has another dtype or the folder has no weights (the caller reads them whole).
 */
export async function f32WeightSources(
  dir: string,
  layout: ParamLayout,
): Promise<F32TensorSource[] | null> {
  const single = `${dir}/${WEIGHTS_FILE}`;
  let shards: ShardHeaders;
  if (await exists(single)) {
    const header = await readSafetensorsHeader(single);
    shards = {
      index: {
        weightMap: new Map([...header.tensors.keys()].map((n) => [n, WEIGHTS_FILE])),
        totalSize: null,
      },
      headers: new Map([[WEIGHTS_FILE, header]]),
    };
  } else if (await exists(`${dir}/${INDEX_FILE}`)) {
    shards = await readShardHeaders(dir);
  } else {
    return null;
  }
  const { index, headers } = shards;
  checkShardIndex(index, headers, { expected: layout.entries, ignored: IGNORED_TENSOR, dir });
  const sources: F32TensorSource[] = [];
  for (const e of layout.entries) {
    const shard = index.weightMap.get(e.name)!;
    const header = headers.get(shard)!;
    const t = header.tensors.get(e.name)!;
    if (t.dtype !== "F32") return null;
    sources.push({
      path: `${dir}/${shard}`,
      fileOffset: header.dataStart + t.begin,
      offset: e.offset,
      size: e.size,
    });
  }
  return sources;
}
