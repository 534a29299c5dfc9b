/**
 * Content this node serves over the payload protocol, addressed by sha256 and optionally by name.
 *
 * DisTrO results are stored with the step they belong to and dropped with `forgetBefore` once
 * no peer can still need them (Psyche deletes results older than current step - 2); model
 * parameters for P2P model sharing are stored under names ("config", a tensor's name) and
 * replaced or forgotten explicitly. No I/O; hashing is synchronous `node:crypto`, whole or (for
 * large blobs) as steps a chunk at a time that the caller may pause between.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { hexToBytes, toHex } from "../../common/mod.ts";

/** A sha256 content hash as 64 lowercase hex characters (the key used throughout the store). */
export type ContentHash = string;

/** sha256 of `bytes` as lowercase hex. */
export function contentHash(bytes: Uint8Array): ContentHash {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Bytes {@link contentHashSteps} hashes between two pauses by default: 64 MiB. */
export const HASH_STEP_BYTES = 64 * 2 ** 20;

/**
 * {@link contentHash} as steps: the bytes are hashed `chunkBytes` at a time, with a pause (a
 * `yield`) after every chunk but the last, and `onProgress` hearing the bytes hashed so far.
 * Returns the same hash as {@link contentHash}. A 1 GB tensor takes seconds to hash; a caller on
 * the event loop gives it a turn at every pause.
 */
export function* contentHashSteps(
  bytes: Uint8Array,
  options: { chunkBytes?: number; onProgress?: (doneBytes: number) => void } = {},
): Generator<void, ContentHash> {
  const chunk = Math.max(1, options.chunkBytes ?? HASH_STEP_BYTES);
  const hash = createHash("sha256");
  for (let start = 0; start < bytes.length; start += chunk) {
    const end = Math.min(bytes.length, start + chunk);
    hash.update(bytes.subarray(start, end));
    options.onProgress?.(end);
    if (end < bytes.length) yield;
  }
  return hash.digest("hex");
}

/** Hex content hash to its 32 bytes. Throws `RangeError` unless given 64 hex characters. */
export function hashToBytes(hash: ContentHash): Uint8Array {
  return hexToBytes(hash, 32, "content hash");
}

/** 32 bytes to a hex content hash. */
export function hashFromBytes(bytes: Uint8Array): ContentHash {
  if (bytes.length !== 32) {
    throw new RangeError(`content hash must be 32 bytes, found ${bytes.length}`);
  }
  return toHex(bytes);
}

/** Where a stored item came from and when it may go. */
export interface ProvideOptions {
  /** Also serve it under this name (replacing what the name pointed to before). */
  name?: string;
  /** The training step it belongs to, for `forgetBefore`. Omit for content kept until forgotten. */
  step?: number;
}

function checkStep(options: ProvideOptions): void {
  if (options.step !== undefined && (!Number.isSafeInteger(options.step) || options.step < 0)) {
    throw new RangeError(`step must be a non-negative integer, found ${options.step}`);
  }
}

interface Entry {
  bytes: Uint8Array;
  step?: number;
}

/** Hash-addressed bytes with an optional name index. */
export class ContentStore {
  #byHash = new Map<ContentHash, Entry>();
  #byName = new Map<string, ContentHash>();
  #totalBytes = 0;

  /**
   * Stores `bytes` (without copying: the caller must not change them afterwards) and returns
   * their hash. Storing the same bytes again keeps one copy; a given `step` replaces the old one.
   */
  put(bytes: Uint8Array, options: ProvideOptions = {}): ContentHash {
    checkStep(options);
    return this.#putHashed(bytes, contentHash(bytes), options);
  }

  /**
   * {@link ContentStore.put} as steps ({@link contentHashSteps}): the bytes are stored once
   * they are all hashed, at the last step.
   */
  *putSteps(
    bytes: Uint8Array,
    options: ProvideOptions & Parameters<typeof contentHashSteps>[1] = {},
  ): Generator<void, ContentHash> {
    checkStep(options);
    const hash = yield* contentHashSteps(bytes, options);
    return this.#putHashed(bytes, hash, options);
  }

  #putHashed(bytes: Uint8Array, hash: ContentHash, options: ProvideOptions): ContentHash {
    const existing = this.#byHash.get(hash);
    if (existing === undefined) {
      this.#byHash.set(hash, { bytes, step: options.step });
      this.#totalBytes += bytes.length;
    } else if (options.step !== undefined) {
      existing.step = options.step;
    }
    if (options.name !== undefined) this.#byName.set(options.name, hash);
    return hash;
  }

  /** The bytes for `hash`, if stored. */
  get(hash: ContentHash): Uint8Array | undefined {
    return this.#byHash.get(hash)?.bytes;
  }

  /** The hash a name points to, if any. */
  hashOfName(name: string): ContentHash | undefined {
    return this.#byName.get(name);
  }

  /** Whether `hash` is stored. */
  has(hash: ContentHash): boolean {
    return this.#byHash.has(hash);
  }

  /** Number of distinct items stored. */
  get size(): number {
    return this.#byHash.size;
  }

  /** Total bytes stored. */
  get totalBytes(): number {
    return this.#totalBytes;
  }

  /** Drops the given hashes (and any names pointing to them). Returns how many were stored. */
  forget(hashes: Iterable<ContentHash>): number {
    let removed = 0;
    const gone = new Set<ContentHash>();
    for (const hash of hashes) {
      const entry = this.#byHash.get(hash);
      if (entry === undefined) continue;
      this.#byHash.delete(hash);
      this.#totalBytes -= entry.bytes.length;
      gone.add(hash);
      removed++;
    }
    if (gone.size > 0) {
      for (const [name, hash] of this.#byName) if (gone.has(hash)) this.#byName.delete(name);
    }
    return removed;
  }

  /** Drops every item stored with a step below `step`. Returns how many were dropped. */
  forgetBefore(step: number): number {
    const old: ContentHash[] = [];
    for (const [hash, entry] of this.#byHash) {
      if (entry.step !== undefined && entry.step < step) old.push(hash);
    }
    return this.forget(old);
  }
}
