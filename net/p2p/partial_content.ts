/**
 * What one fetch has received of its content so far, kept across its attempts (other providers,
 * later retry rounds) so that a provider that stalls half-way costs only the bytes it did not
 * send: the next attempt asks for the rest from `offset`, in-band (`payload_wire.ts`, `OkFrom`)
 * or over a bulk connection (`bulk_wire.ts`, `OkFrom`); both feed the same buffer, so either
 * path can go on from bytes the other received.
 *
 * The bytes go straight into one buffer allocated from the first declared length (a socket can
 * read into `unfilled()` in place) and are hashed as they arrive; the hash state runs on across
 * attempts, so the whole content is verified with no extra pass at the end. A rest is only
 * accepted for the same content: same declared hash and length as the prefix held, from exactly
 * the offset held. Otherwise `begin` (or `check`, before asking) throws `PrefixConflict` and the
 * caller starts over from 0.
 *
 * Blame: `sources` says who sent the bytes held: providers over their authenticated streams,
 * and, under names of their own, bulk connections (plain TCP, which anyone on the path could
 * have changed). When content assembled from two or more of them does not match its hash, nobody
 * can tell who lied; `verify` discards it with resuming off and the caller fetches it whole, so
 * the provider of that whole copy alone answers for it.
 *
 * Pure: no I/O, no clock (hashing is computation).
 *
 * @example
 * ```ts
 * import { PartialContent } from "./partial_content.ts";
 * const hash = new Uint8Array(32); // the declared sha256 (`verify` checks the bytes against it)
 * const partial = new PartialContent();
 * partial.begin("A", { hash, length: 5, offset: 0 });
 * partial.append("A", Uint8Array.of(1, 2)); // then A stalls
 * console.assert(partial.offset === 2);
 * partial.begin("B", { hash, length: 5, offset: 2 });
 * partial.append("B", Uint8Array.of(3, 4, 5));
 * console.assert(partial.complete && partial.sources.size === 2);
 * ```
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import { PayloadAttemptError } from "./fallback.ts";
import { equalBytes, toHex } from "../../common/mod.ts";

/** Received bytes hashed per `update` call: fewer, larger calls than one per network chunk. */
const HASH_BATCH_BYTES = 1024 * 1024;

/** What a provider's response header declared: the whole content, and where its bytes start. */
export interface DeclaredContent {
  /** sha256 of the whole content (32 bytes). */
  readonly hash: Uint8Array;
  /** Length of the whole content. */
  readonly length: number;
  /** Offset of the first byte the provider sends. */
  readonly offset: number;
}

/** A provider's rest does not continue the prefix held (other content, or another length). */
export class PrefixConflict extends Error {
  /** Builds the error; the message says what differs. */
  constructor(message: string) {
    super(message);
    this.name = "PrefixConflict";
  }
}

/** The bytes of one fetch received so far, across attempts. */
export class PartialContent {
  #hash: Uint8Array | undefined;
  #bytes: Uint8Array | undefined;
  #filled = 0;
  #hashed = 0;
  #hasher: Hash = createHash("sha256");
  #sources = new Set<string>();
  #resumable = true;
  #resumes = 0;

  /** Where the next request starts: the bytes held, or 0 once resuming is off. */
  get offset(): number {
    return this.#resumable ? this.#filled : 0;
  }

  /** Whether the whole declared content is held. */
  get complete(): boolean {
    return this.#bytes !== undefined && this.#filled === this.#bytes.length;
  }

  /** Providers that sent the bytes held. */
  get sources(): ReadonlySet<string> {
    return this.#sources;
  }

  /** How many times a provider went on from bytes an earlier attempt left, since offset 0. */
  get resumes(): number {
    return this.#resumes;
  }

  /**
   * Begins taking `provider`'s bytes per its header. Offset 0 starts over (anything held is
   * dropped) and allocates the declared length, which the caller has checked against its limits.
   * A non-zero offset must be the one held (`PayloadAttemptError` "protocol" otherwise: the
   * provider did not answer what was asked) and the content the one the prefix belongs to
   * (`PrefixConflict` otherwise; nothing is changed).
   */
  begin(provider: string, declared: DeclaredContent): void {
    this.check(provider, declared);
    const { hash, length, offset } = declared;
    if (offset === 0) {
      this.#reset(this.#resumable);
      this.#hash = new Uint8Array(hash);
      this.#bytes = new Uint8Array(length);
      return;
    }
    this.#resumes++;
  }

  /**
   * Throws as `begin` would for `declared`, changing nothing: whether a provider's offer of the
   * content from `offset` goes with what is held, before any of its bytes are asked for.
   */
  check(provider: string, declared: DeclaredContent): void {
    const { hash, length, offset } = declared;
    if (offset !== this.offset) {
      throw new PayloadAttemptError(
        "protocol",
        `provider ${provider} serves from byte ${offset}, we asked from ${this.offset}`,
      );
    }
    if (offset === 0) return;
    if (length !== this.#bytes!.length) {
      throw new PrefixConflict(
        `provider ${provider} declares ${length} bytes, the ${offset} bytes held are of ` +
          `${this.#bytes!.length}`,
      );
    }
    if (!equalBytes(hash, this.#hash!)) {
      throw new PrefixConflict(
        `provider ${provider} declares hash ${toHex(hash)}, the ${offset} bytes held are of ` +
          `${toHex(this.#hash!)}`,
      );
    }
  }

  /**
   * Adds `provider`'s next bytes. Throws `PayloadAttemptError` ("protocol") for bytes past the
   * declared length, keeping none of them.
   */
  append(provider: string, chunk: Uint8Array): void {
    const bytes = this.#bytes;
    if (bytes === undefined) throw new Error("append before begin");
    if (this.#filled + chunk.length > bytes.length) {
      throw new PayloadAttemptError(
        "protocol",
        `provider sent more than the ${bytes.length} bytes it declared`,
      );
    }
    bytes.set(chunk, this.#filled);
    this.commit(provider, chunk.length);
  }

  /**
   * The part of the buffer not yet received, for a reader that writes into it in place (a TCP
   * read) and then `commit`s what it wrote: no copy, and never room past the declared length.
   */
  unfilled(): Uint8Array {
    if (this.#bytes === undefined) throw new Error("unfilled before begin");
    return this.#bytes.subarray(this.#filled);
  }

  /** Takes the next `n` bytes `provider` wrote at the start of `unfilled()` as received. */
  commit(provider: string, n: number): void {
    const bytes = this.#bytes;
    if (bytes === undefined) throw new Error("commit before begin");
    if (!Number.isSafeInteger(n) || n < 0 || this.#filled + n > bytes.length) {
      throw new RangeError(
        `cannot commit ${n} bytes: ${bytes.length - this.#filled} of ${bytes.length} are unfilled`,
      );
    }
    if (n === 0) return;
    this.#filled += n;
    this.#sources.add(provider);
    if (this.#filled - this.#hashed >= HASH_BATCH_BYTES) {
      this.#hasher.update(bytes.subarray(this.#hashed, this.#filled));
      this.#hashed = this.#filled;
    }
  }

  /** Bytes held, and the declared length (0 before the first `begin`). */
  progress(): { held: number; length: number } {
    return { held: this.#filled, length: this.#bytes?.length ?? 0 };
  }

  /**
   * The whole content, its sha256 (hex) and the declared one; throws unless `complete`. The
   * caller compares the two and decides whom to blame by `sources`.
   */
  finish(): { bytes: Uint8Array; hash: string; declared: string } {
    if (!this.complete) {
      throw new Error(`content incomplete: ${this.#filled} of ${this.#bytes?.length} bytes`);
    }
    this.#hasher.update(this.#bytes!.subarray(this.#hashed, this.#filled));
    this.#hashed = this.#filled;
    const hash = this.#hasher.digest("hex");
    return { bytes: this.#bytes!, hash, declared: toHex(this.#hash!) };
  }

  /**
   * Finishes the content and checks it against the declared hash: the bytes when they match.
   * When they do not, everything held is discarded, with resuming off if the bytes came from two
   * or more sources (nobody can tell who lied; see the module's "Blame"), and the answer says
   * how many sent them, for the caller to blame a single one. Throws unless `complete`.
   */
  verify():
    | { ok: true; bytes: Uint8Array; hash: string }
    | { ok: false; hash: string; declared: string; sources: number } {
    const { bytes, hash, declared } = this.finish();
    if (hash === declared) return { ok: true, bytes, hash };
    const sources = this.#sources.size;
    this.discard({ resume: sources < 2 });
    return { ok: false, hash, declared, sources };
  }

  /**
   * Drops everything held; with `resume: false`, later attempts start from 0 whatever they
   * receive (after mixed content failed its hash: no second chance to mix).
   */
  discard(options: { resume: boolean }): void {
    this.#reset(options.resume);
  }

  #reset(resume: boolean): void {
    this.#hash = undefined;
    this.#bytes = undefined;
    this.#filled = 0;
    this.#hashed = 0;
    this.#hasher = createHash("sha256");
    this.#sources = new Set();
    this.#resumes = 0;
    this.#resumable = resume;
  }
}
