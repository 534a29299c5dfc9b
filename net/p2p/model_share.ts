/**
 * P2P model sharing over the payload protocol: a client that holds the model serves every
 * parameter tensor as a blob and a manifest naming them; a joining client fetches the manifest,
 * then every tensor by its hash, spread across the providers, each verified on arrival.
 *
 * Psyche's `model-sharing/0` asks for the config and then for each parameter by name, trusting
 * whatever ticket a peer returns. Here only the manifest is fetched by name; every tensor is
 * fetched by the sha256 the manifest lists, so a single lying provider cannot slip in a bad
 * tensor. The manifest itself is as trustworthy as its provider: pass `manifestHash` when it is
 * known from elsewhere (e.g. agreed by several peers) to pin it.
 *
 * Every byte fetched is bounded before it is fetched: the manifest by `MAX_MANIFEST_BYTES`,
 * each blob by the size the manifest lists (a longer answer is refused before its content is
 * read). With `sizesFrom`, the listed sizes are themselves checked before any other blob is
 * fetched: one small blob (the model's config) says what every other blob must be, so a
 * manifest listing an oversized, extra or missing tensor is refused (`ManifestSizeError`).
 *
 * The manifest also says which parameters it lists: the run step they belong to and their
 * digest (shaders/digest.ts), so a joiner can ask for exactly the model the coordinator
 * recorded, and checks that claim against the bytes it receives. Each entry names the dtype of
 * its blob (raw bytes, f32 or bf16 little-endian), so the manifest hash covers how every tensor
 * is encoded and a tensor's byte size follows from its element count and its dtype.
 *
 * ```
 * manifest = version u8 (=3) | step u32 | digest [32] | count u32
 *            | count x (name length u16 | UTF-8 name | dtype u8 | hash [32] | size u64)
 * dtype    = 0 raw | 1 f32 | 2 bf16
 * ```
 *
 * @module
 */
import { type ContentHash, hashFromBytes, hashToBytes } from "./content_store.ts";
import type { PayloadService } from "./payload_service.ts";
import { MAX_NAME_BYTES } from "./payload_wire.ts";
import { type PublicKeyBytes, runSteps } from "../../common/mod.ts";

/** The blob name under which a model's manifest is served. */
export const MANIFEST_NAME = "psyche/model-manifest";
/**
 * Manifest format version (2: the step and digest of the parameters it lists; 3: the dtype of
 * every blob).
 */
export const MANIFEST_VERSION = 3;
/** Bytes before the first entry: version, step, digest, count. */
export const MANIFEST_HEADER_BYTES = 1 + 4 + 32 + 4;
/** Most entries a manifest may list. */
export const MAX_MANIFEST_ENTRIES = 65_536;
/** Bytes of an entry besides its name: name length, dtype, hash, size. */
const ENTRY_FIXED_BYTES = 2 + 1 + 32 + 8;
/** Largest manifest accepted: the most entries with the longest names. */
export const MAX_MANIFEST_BYTES = MANIFEST_HEADER_BYTES +
  MAX_MANIFEST_ENTRIES * (MAX_NAME_BYTES + ENTRY_FIXED_BYTES);

/**
 * How a blob's bytes are encoded: `raw` (opaque, e.g. the config), or a tensor's values as
 * `f32` or `bf16` little-endian, row-major.
 */
export type BlobDtype = "raw" | "f32" | "bf16";
/** Wire codes of {@link BlobDtype}, by position. */
export const BLOB_DTYPES: readonly BlobDtype[] = ["raw", "f32", "bf16"];
/** Bytes per element of each tensor dtype. */
export const TENSOR_DTYPE_BYTES: Readonly<Record<"f32" | "bf16", number>> = { f32: 4, bf16: 2 };

/** One blob of a shared model: a parameter tensor, or the config. */
export interface ManifestEntry {
  name: string;
  hash: ContentHash;
  size: number;
  dtype: BlobDtype;
}

/** A blob to share: name, bytes and (default `raw`) how they are encoded. */
export type BlobToShare = readonly [name: string, bytes: Uint8Array, dtype?: BlobDtype];

/** Which parameters a manifest lists: the run step they belong to and their digest. */
export interface ModelLabel {
  /** The step whose parameters these are (docs/protocol.md, "Parameter digests"). */
  step: number;
  /** The parameters' digest, 32 bytes. */
  digest: Uint8Array;
}

/** A decoded manifest: its label and entries. */
export interface Manifest {
  label: ModelLabel;
  entries: ManifestEntry[];
}

/** A manifest's bytes are malformed; `offset` is where decoding stopped. */
export class ManifestDecodeError extends Error {
  /** Byte offset of the problem. */
  readonly offset: number;
  /** Builds the error; the message names the offset. */
  constructor(message: string, offset: number) {
    super(`Malformed model manifest at byte ${offset}: ${message}`);
    this.name = "ManifestDecodeError";
    this.offset = offset;
  }
}

/** A manifest whose entries are not the blobs its `sizesFrom` blob describes; `blob` names one. */
export class ManifestSizeError extends Error {
  /** The entry at fault. */
  readonly blob: string;
  /** Builds the error. */
  constructor(blob: string, message: string) {
    super(`Model manifest refused: ${message}`);
    this.name = "ManifestSizeError";
    this.blob = blob;
  }
}

/**
 * Encodes a manifest. Throws `RangeError` for duplicate, empty or overlong names, or a label
 * that does not fit (a step outside u32, a digest that is not 32 bytes).
 */
export function encodeManifest(manifest: Manifest): Uint8Array {
  const { label, entries } = manifest;
  if (!Number.isInteger(label.step) || label.step < 0 || label.step > 0xffff_ffff) {
    throw new RangeError(`manifest step must be a u32, found ${label.step}`);
  }
  if (!(label.digest instanceof Uint8Array) || label.digest.length !== 32) {
    throw new RangeError("manifest digest must be 32 bytes");
  }
  if (entries.length > MAX_MANIFEST_ENTRIES) {
    throw new RangeError(
      `a manifest lists at most ${MAX_MANIFEST_ENTRIES} entries, found ${entries.length}`,
    );
  }
  const encoder = new TextEncoder();
  const names = entries.map((e) => encoder.encode(e.name));
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    if (names[i].length === 0 || names[i].length > MAX_NAME_BYTES) {
      throw new RangeError(`entry "${entry.name}": name must be 1..${MAX_NAME_BYTES} UTF-8 bytes`);
    }
    if (seen.has(entry.name)) throw new RangeError(`entry "${entry.name}" is listed twice`);
    seen.add(entry.name);
    if (!Number.isSafeInteger(entry.size) || entry.size < 0) {
      throw new RangeError(
        `entry "${entry.name}": size must be a non-negative integer, found ${entry.size}`,
      );
    }
    if (!BLOB_DTYPES.includes(entry.dtype)) {
      throw new RangeError(
        `entry "${entry.name}": dtype must be one of ${BLOB_DTYPES.join(", ")}, found ` +
          `${entry.dtype}`,
      );
    }
  });
  const out = new Uint8Array(
    MANIFEST_HEADER_BYTES + names.reduce((n, name) => n + name.length + ENTRY_FIXED_BYTES, 0),
  );
  const view = new DataView(out.buffer);
  out[0] = MANIFEST_VERSION;
  view.setUint32(1, label.step);
  out.set(label.digest, 5);
  view.setUint32(37, entries.length);
  let at = MANIFEST_HEADER_BYTES;
  entries.forEach((entry, i) => {
    view.setUint16(at, names[i].length);
    out.set(names[i], at + 2);
    at += 2 + names[i].length;
    out[at] = BLOB_DTYPES.indexOf(entry.dtype);
    out.set(hashToBytes(entry.hash), at + 1);
    view.setBigUint64(at + 33, BigInt(entry.size));
    at += 41;
  });
  return out;
}

/** Decodes a manifest, checking every length, name and size. Throws `ManifestDecodeError`. */
export function decodeManifest(bytes: Uint8Array): Manifest {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (at: number, n: number, what: string) => {
    if (at + n > bytes.length) {
      throw new ManifestDecodeError(`${what} needs ${n} bytes, ${bytes.length - at} remain`, at);
    }
  };
  need(0, 1, "version");
  if (bytes[0] !== MANIFEST_VERSION) {
    throw new ManifestDecodeError(`version is ${bytes[0]}, expected ${MANIFEST_VERSION}`, 0);
  }
  need(0, MANIFEST_HEADER_BYTES, "header");
  const label = { step: view.getUint32(1), digest: bytes.slice(5, 37) };
  const count = view.getUint32(37);
  if (count > MAX_MANIFEST_ENTRIES) {
    throw new ManifestDecodeError(`${count} entries, at most ${MAX_MANIFEST_ENTRIES} allowed`, 37);
  }
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const entries: ManifestEntry[] = [];
  const seen = new Set<string>();
  let at = MANIFEST_HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    need(at, 2, `entry ${i} name length`);
    const length = view.getUint16(at);
    if (length === 0 || length > MAX_NAME_BYTES) {
      throw new ManifestDecodeError(
        `entry ${i} name length must be 1..${MAX_NAME_BYTES}, found ${length}`,
        at,
      );
    }
    need(at + 2, length + ENTRY_FIXED_BYTES - 2, `entry ${i}`);
    let name: string;
    try {
      name = decoder.decode(bytes.subarray(at + 2, at + 2 + length));
    } catch {
      throw new ManifestDecodeError(`entry ${i} name is not valid UTF-8`, at + 2);
    }
    if (seen.has(name)) throw new ManifestDecodeError(`entry "${name}" is listed twice`, at);
    seen.add(name);
    at += 2 + length;
    const dtype = BLOB_DTYPES[bytes[at]];
    if (dtype === undefined) {
      throw new ManifestDecodeError(
        `entry "${name}" dtype code ${bytes[at]} is unknown (0..${BLOB_DTYPES.length - 1})`,
        at,
      );
    }
    const size = view.getBigUint64(at + 33);
    if (size > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ManifestDecodeError(`entry "${name}" size ${size} exceeds 2^53-1`, at + 33);
    }
    const hash = hashFromBytes(bytes.subarray(at + 1, at + 33));
    entries.push({ name, hash, size: Number(size), dtype });
    at += 41;
  }
  if (at !== bytes.length) {
    throw new ManifestDecodeError(`${bytes.length - at} bytes after the last entry`, at);
  }
  return { label, entries };
}

/**
 * Serves a model: every blob under its name and a manifest under `MANIFEST_NAME` carrying
 * `label` and each blob's dtype. Returns the manifest's hash. Blobs are not copied (do not
 * change them while they are served). `onProgress` hears the bytes hashed so far and their
 * total (a 1B model's take seconds).
 */
export function shareModel(
  service: PayloadService,
  blobs: Iterable<BlobToShare>,
  label: ModelLabel,
  onProgress?: (doneBytes: number, totalBytes: number) => void,
): ContentHash {
  return runSteps(shareModelSteps(service, blobs, label, { onProgress }));
}

/**
 * {@link shareModel} as steps: each blob hashed `chunkBytes` at a time (default
 * `HASH_STEP_BYTES`), with a pause (a `yield`) after every chunk, so a caller on the event
 * loop can give it a turn while a 1B model's 4.9 GB are hashed. Same blobs, same manifest.
 * `onProgress` hears the bytes hashed so far after every chunk.
 */
export function* shareModelSteps(
  service: PayloadService,
  blobs: Iterable<BlobToShare>,
  label: ModelLabel,
  options: { onProgress?: (doneBytes: number, totalBytes: number) => void; chunkBytes?: number } =
    {},
): Generator<void, ContentHash> {
  const { onProgress, chunkBytes } = options;
  const entries: ManifestEntry[] = [];
  const all = [...blobs];
  const total = all.reduce((n, [, bytes]) => n + bytes.length, 0);
  let done = 0;
  for (const [name, bytes, dtype = "raw"] of all) {
    const hash = yield* service.provideSteps(bytes, {
      name,
      chunkBytes,
      onProgress: (blobDone) => onProgress?.(done + blobDone, total),
    });
    entries.push({ name, hash, size: bytes.length, dtype });
    done += bytes.length;
    if (bytes.length === 0) onProgress?.(done, total);
    yield;
  }
  return service.provide(encodeManifest({ label, entries }), { name: MANIFEST_NAME });
}

/** Options for `fetchModel`. */
export interface FetchModelOptions {
  /** Participants that may hold the model. Tensor requests are spread across them. */
  providers: readonly PublicKeyBytes[];
  /** Aborts everything. */
  signal?: AbortSignal;
  /** Pin the manifest: refuse any other. */
  manifestHash?: ContentHash;
  /** Serve what was fetched too, so later joiners can fetch from us. Default true. */
  reshare?: boolean;
  /**
   * The blob that says what every other blob's size must be (the model's config): fetched
   * first, if the manifest lists it at no more than `maxBytes`; `elements` maps its bytes to
   * each tensor's element count (and may throw for bytes that are not a config). The manifest
   * is refused unless it lists exactly those tensors, each as f32 or bf16 at exactly its
   * element count times the dtype's width.
   */
  sizesFrom?: {
    blob: string;
    maxBytes: number;
    elements: (bytes: Uint8Array) => ReadonlyMap<string, number>;
  };
  /**
   * Hears after every blob the bytes fetched so far and the manifest's total: a 1B model's
   * 4.9 GB take minutes over most links.
   */
  onProgress?: (doneBytes: number, totalBytes: number) => void;
}

/**
 * Checks `entries` (all but the `sizesFrom` blob) against the `elements` of every tensor: the
 * same names, each a tensor dtype (f32 or bf16) at its element count times that dtype's width.
 * Throws {@link ManifestSizeError} naming the first that differs. Pure.
 */
export function checkManifestSizes(
  entries: readonly ManifestEntry[],
  elements: ReadonlyMap<string, number>,
): void {
  for (const entry of entries) {
    const count = elements.get(entry.name);
    if (count === undefined) {
      throw new ManifestSizeError(entry.name, `it lists "${entry.name}", not a blob of the model`);
    }
    if (entry.dtype !== "f32" && entry.dtype !== "bf16") {
      throw new ManifestSizeError(
        entry.name,
        `it lists tensor "${entry.name}" as ${entry.dtype}, expected f32 or bf16`,
      );
    }
    const size = count * TENSOR_DTYPE_BYTES[entry.dtype];
    if (entry.size !== size) {
      throw new ManifestSizeError(
        entry.name,
        `it lists "${entry.name}" at ${entry.size} bytes (${entry.dtype}), the model's config ` +
          `makes it ${size} (${count} elements)`,
      );
    }
  }
  const listed = new Set(entries.map((e) => e.name));
  for (const name of elements.keys()) {
    if (!listed.has(name)) throw new ManifestSizeError(name, `it does not list "${name}"`);
  }
}

/**
 * Which provider each blob (by `sizes`) is asked first, given the providers' relative upload
 * speeds (`weights`, positive): the largest blob to the provider that would finish it soonest
 * (its bytes so far plus this blob, over its speed), and so on, so every uplink is busy for
 * about the same time. With equal weights every provider carries about the same bytes.
 * (Rotating by position put both of a small model's big tensors, its embedding and its head,
 * on one provider: over 20 Mbit/s links two providers delivered 21 Mbit/s.) Ties go to the
 * lower index, so the spread is a pure function of its inputs. Pure.
 */
export function spreadOverProviders(
  sizes: readonly number[],
  weights: readonly number[],
): number[] {
  const n = weights.length;
  if (n === 0) return sizes.map(() => 0);
  const load = new Array<number>(n).fill(0);
  const out = new Array<number>(sizes.length).fill(0);
  const order = sizes.map((_, i) => i).sort((a, b) => sizes[b] - sizes[a] || a - b);
  for (const i of order) {
    const finish = (p: number) => (load[p] + sizes[i]) / weights[p];
    let best = 0;
    for (let p = 1; p < n; p++) if (finish(p) < finish(best)) best = p;
    out[i] = best;
    load[best] += sizes[i];
  }
  return out;
}

/**
 * Fetches a model shared with `shareModel`: the manifest, then every blob by hash (verified),
 * in parallel up to the service's `maxConcurrentDownloads` (and `maxDownloadsPerPeer` from one
 * provider). The blobs are shared out over the providers by their measured speeds (the service's
 * ranking), each blob asked first of its share's provider and then of the others, best first:
 * a stalled provider's blobs move on to the next. Returns the manifest's label, its entries
 * (with each blob's dtype) and the blobs by name.
 */
export async function fetchModel(
  service: PayloadService,
  options: FetchModelOptions,
): Promise<{ label: ModelLabel; entries: ManifestEntry[]; blobs: Map<string, Uint8Array> }> {
  const { providers, signal } = options;
  const limit = { providers, signal, maxBytes: MAX_MANIFEST_BYTES };
  const manifest = options.manifestHash === undefined
    ? (await service.fetchNamed(MANIFEST_NAME, limit)).bytes
    : await service.fetch(options.manifestHash, limit);
  const { label, entries } = decodeManifest(manifest);
  const reshare = options.reshare ?? true;
  const sizes = entries.map((e) => e.size);
  const ranked = service.rankProviders(providers, sizes.reduce((a, b) => a + b, 0));
  const starts = spreadOverProviders(sizes, ranked.providers.length > 0 ? ranked.weights : [1]);
  const position = new Map(entries.map((entry, i) => [entry, i]));
  const totalBytes = sizes.reduce((a, b) => a + b, 0);
  let doneBytes = 0;
  const fetchEntry = async (entry: ManifestEntry) => {
    // Each tensor starts at the provider its share went to; the rest back it up, best first.
    const first = ranked.providers[starts[position.get(entry)!] ?? 0];
    const bytes = await service.fetch(entry.hash, {
      providers: first === undefined ? providers : [first, ...ranked.providers],
      pinned: 1,
      signal,
      expectedSize: entry.size,
      provideAs: reshare ? { name: entry.name } : undefined,
    });
    doneBytes += bytes.byteLength;
    options.onProgress?.(doneBytes, totalBytes);
    return [entry.name, bytes] as const;
  };
  const first: (readonly [string, Uint8Array])[] = [];
  let rest = entries;
  if (options.sizesFrom !== undefined) {
    const { blob, maxBytes, elements } = options.sizesFrom;
    const entry = entries.find((e) => e.name === blob);
    if (entry === undefined) throw new ManifestSizeError(blob, `it does not list "${blob}"`);
    if (entry.size > maxBytes) {
      throw new ManifestSizeError(
        blob,
        `it lists "${blob}" at ${entry.size} bytes, at most ${maxBytes} are accepted`,
      );
    }
    const fetched = await fetchEntry(entry);
    rest = entries.filter((e) => e !== entry);
    checkManifestSizes(rest, elements(fetched[1]));
    first.push(fetched);
  }
  const fetched = await Promise.all(rest.map(fetchEntry));
  if (reshare) service.provide(manifest, { name: MANIFEST_NAME });
  return { label, entries, blobs: new Map([...first, ...fetched]) };
}
