/**
 * Length-prefixed framing over a byte stream: every frame is a 4-byte big-endian
 * length followed by that many payload bytes (tokio's `LengthDelimitedCodec`, as Psyche uses).
 *
 * The reader checks the length against a maximum before allocating anything, so a
 * peer cannot make us reserve gigabytes with four bytes.
 *
 * @module
 */
import { FrameError } from "./errors.ts";

/** Bytes of the length prefix. */
export const FRAME_HEADER_BYTES = 4;
/** Default largest frame a server accepts (tokio codec default, as Psyche's server). */
export const DEFAULT_SERVER_MAX_FRAME_BYTES = 8 * 1024 * 1024;
/** Default largest frame a client accepts (Psyche's client limit). */
export const DEFAULT_CLIENT_MAX_FRAME_BYTES = 64 * 1024 * 1024;
/** Largest length the 4-byte prefix can express. */
export const MAX_ENCODABLE_FRAME_BYTES = 0xffff_ffff;

/** Anything frames can be read from: a `Deno.Conn`, or a test double over a byte array. */
export interface ByteReader {
  /** Reads up to `p.length` bytes into `p`; `null` at end of stream. */
  read(p: Uint8Array): Promise<number | null>;
}

/** Anything frames can be written to: a `Deno.Conn`. */
export interface ByteWriter {
  /** Writes some prefix of `p`, returning how many bytes were written. */
  write(p: Uint8Array): Promise<number>;
}

/**
 * Prefixes `payload` with its 4-byte big-endian length.
 *
 * @example
 * ```ts
 * import { encodeFrame } from "./frame.ts";
 * const frame = encodeFrame(new Uint8Array([7, 8]));
 * if (frame.join(",") !== "0,0,0,2,7,8") throw new Error("bad frame");
 * ```
 */
export function encodeFrame(payload: Uint8Array): Uint8Array {
  if (payload.length > MAX_ENCODABLE_FRAME_BYTES) {
    throw new RangeError(
      `Frame payload of ${payload.length} bytes exceeds the 4-byte length prefix`,
    );
  }
  const out = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  new DataView(out.buffer).setUint32(0, payload.length, false);
  out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/** Writes all of `bytes`, looping over partial writes. */
export async function writeAll(writer: ByteWriter, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    done += await writer.write(bytes.subarray(done));
  }
}

/** Writes one frame carrying `payload`. */
export async function writeFrame(writer: ByteWriter, payload: Uint8Array): Promise<void> {
  await writeAll(writer, encodeFrame(payload));
}

/** Options for {@linkcode FrameReader}. */
export interface FrameReaderOptions {
  /** Largest payload accepted; a longer length prefix is an error before any allocation. */
  maxFrameBytes: number;
  /** Size of each read from the stream (default 64 KiB). */
  chunkBytes?: number;
}

/**
 * A limit that depends on what a frame carries: the payload's first byte (a message tag)
 * picks it, so a frame too long for its kind is refused from its header and first byte,
 * before the rest is read.
 */
export interface FrameLimit {
  /** Largest payload of this kind, in bytes. */
  maxBytes: number;
  /** The kind, for the error message (e.g. `"HealthCheck"`). */
  name: string;
}

/** Options of {@linkcode FrameReader.next}. */
export interface NextFrameOptions {
  /**
   * The limit for a frame whose payload starts with `firstByte`, or null for only the
   * reader's `maxFrameBytes`. Not called for empty frames.
   */
  limitFor?: (firstByte: number) => FrameLimit | null;
}

/**
 * Reads whole frames from a stream, however the bytes arrive (one byte at a time,
 * several frames per read, a frame split over many reads).
 */
export class FrameReader {
  readonly #source: ByteReader;
  readonly #maxFrameBytes: number;
  readonly #chunk: Uint8Array;
  /** Bytes read from the source but not yet returned. */
  #pending: Uint8Array = new Uint8Array(0);

  /** Wraps `source`; frames longer than `options.maxFrameBytes` are rejected. */
  constructor(source: ByteReader, options: FrameReaderOptions) {
    if (!Number.isInteger(options.maxFrameBytes) || options.maxFrameBytes < 0) {
      throw new RangeError(
        `maxFrameBytes must be a non-negative integer, found ${options.maxFrameBytes}`,
      );
    }
    this.#source = source;
    this.#maxFrameBytes = Math.min(options.maxFrameBytes, MAX_ENCODABLE_FRAME_BYTES);
    this.#chunk = new Uint8Array(options.chunkBytes ?? 64 * 1024);
  }

  /**
   * The next frame's payload, or `null` when the stream ends cleanly between frames.
   * Throws {@linkcode FrameError} if the stream ends inside a frame or a length is too large
   * (for the reader, or for the frame's kind with `options.limitFor`: checked on the first
   * payload byte, before the rest of the payload is read).
   */
  async next(options: NextFrameOptions = {}): Promise<Uint8Array | null> {
    const header = await this.#take(FRAME_HEADER_BYTES, true);
    if (header === null) return null;
    const length = new DataView(header.buffer, header.byteOffset, FRAME_HEADER_BYTES)
      .getUint32(0, false);
    if (length > this.#maxFrameBytes) {
      throw new FrameError(
        `Frame of ${length} bytes exceeds the maximum of ${this.#maxFrameBytes} bytes`,
      );
    }
    if (options.limitFor !== undefined && length > 0) {
      const limit = options.limitFor(await this.#peekByte());
      if (limit !== null && length > limit.maxBytes) {
        throw new FrameError(
          `${limit.name} frame of ${length} bytes exceeds the maximum of ${limit.maxBytes} bytes`,
        );
      }
    }
    const payload = await this.#take(length, false);
    return payload ?? new Uint8Array(0);
  }

  /**
   * The next frame's payload if the whole frame has already been read from the source (a
   * view, left unread), else null. Lets a reader see that a newer frame is waiting behind the
   * one it holds, without waiting for the source.
   */
  peekBuffered(): Uint8Array | null {
    if (this.#pending.length < FRAME_HEADER_BYTES) return null;
    const length = new DataView(this.#pending.buffer, this.#pending.byteOffset, FRAME_HEADER_BYTES)
      .getUint32(0, false);
    if (length > this.#maxFrameBytes) return null; // next() will refuse it
    const end = FRAME_HEADER_BYTES + length;
    return this.#pending.length < end ? null : this.#pending.subarray(FRAME_HEADER_BYTES, end);
  }

  /** The next byte, left unread (at least one byte of the payload is due). */
  async #peekByte(): Promise<number> {
    while (this.#pending.length === 0) {
      const got = await this.#source.read(this.#chunk);
      if (got === null) throw new FrameError("Stream ended inside a frame: expected its payload");
      this.#pending = this.#chunk.slice(0, got);
    }
    return this.#pending[0];
  }

  /** Exactly `n` bytes; `null` only if `allowEof` and the stream ended before any byte. */
  async #take(n: number, allowEof: boolean): Promise<Uint8Array | null> {
    if (this.#pending.length >= n) {
      const out = this.#pending.slice(0, n);
      this.#pending = this.#pending.subarray(n);
      return out;
    }
    // Allocate the target once (n is already checked against the maximum).
    const out = new Uint8Array(n);
    let filled = this.#pending.length;
    out.set(this.#pending, 0);
    this.#pending = new Uint8Array(0);
    while (filled < n) {
      // A large remainder is read straight into the target, skipping the chunk copy.
      const direct = n - filled >= this.#chunk.length;
      const got = await this.#source.read(direct ? out.subarray(filled) : this.#chunk);
      if (got === null) {
        if (allowEof && filled === 0) return null;
        throw new FrameError(
          `Stream ended inside a frame: expected ${n} bytes, received ${filled}`,
        );
      }
      if (direct) {
        filled += got;
        continue;
      }
      const use = Math.min(got, n - filled);
      out.set(this.#chunk.subarray(0, use), filled);
      filled += use;
      if (use < got) this.#pending = this.#chunk.slice(use, got);
    }
    return out;
  }
}
