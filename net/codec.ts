/**
 * Byte-level helpers for the wire messages: a growable writer and a bounds-checked
 * reader whose every failure is a {@linkcode ProtocolError} naming the field.
 * Integers are big-endian (network order), like the frame length prefix.
 *
 * @module
 */
import { ProtocolError } from "./errors.ts";

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8", { fatal: true });

/** Builds a message by appending fields. */
export class MessageWriter {
  #buf = new Uint8Array(64);
  #view = new DataView(this.#buf.buffer);
  #len = 0;

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
    this.#view = new DataView(next.buffer);
  }

  /** Appends one byte. */
  u8(value: number): this {
    this.#reserve(1);
    this.#view.setUint8(this.#len, value);
    this.#len += 1;
    return this;
  }

  /** Appends a big-endian u16. */
  u16(value: number): this {
    this.#reserve(2);
    this.#view.setUint16(this.#len, value, false);
    this.#len += 2;
    return this;
  }

  /** Appends a big-endian u32. */
  u32(value: number): this {
    this.#reserve(4);
    this.#view.setUint32(this.#len, value, false);
    this.#len += 4;
    return this;
  }

  /** Appends a non-negative integer up to 2^53 as a big-endian u64. */
  u64(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`u64 field must be a safe non-negative integer, found ${value}`);
    }
    this.#reserve(8);
    this.#view.setBigUint64(this.#len, BigInt(value), false);
    this.#len += 8;
    return this;
  }

  /** Appends raw bytes with no length (fixed-size fields). */
  bytes(value: Uint8Array): this {
    this.#reserve(value.length);
    this.#buf.set(value, this.#len);
    this.#len += value.length;
    return this;
  }

  /** Appends a u16 length then UTF-8 bytes. */
  string(value: string): this {
    const encoded = utf8Encoder.encode(value);
    if (encoded.length > 0xffff) {
      throw new RangeError(`String of ${encoded.length} UTF-8 bytes exceeds 65535`);
    }
    return this.u16(encoded.length).bytes(encoded);
  }

  /** The message so far (a copy). */
  finish(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

/** Reads fields from a message, checking every length against what remains. */
export class MessageReader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #what: string;
  #pos = 0;

  /** `what` names the message in error texts, e.g. `"Challenge"`. */
  constructor(bytes: Uint8Array, what: string) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#what = what;
  }

  /** Renames the message for later errors (after the tag is known). */
  rename(what: string): MessageReader {
    const next = new MessageReader(this.#bytes, what);
    next.#pos = this.#pos;
    return next;
  }

  #need(n: number, field: string): void {
    if (this.#pos + n > this.#bytes.length) {
      throw new ProtocolError(
        `${this.#what}: field "${field}" needs ${n} bytes at offset ${this.#pos}, ` +
          `only ${this.#bytes.length - this.#pos} remain`,
      );
    }
  }

  /** One byte. */
  u8(field: string): number {
    this.#need(1, field);
    return this.#view.getUint8(this.#pos++);
  }

  /** A big-endian u16. */
  u16(field: string): number {
    this.#need(2, field);
    const v = this.#view.getUint16(this.#pos, false);
    this.#pos += 2;
    return v;
  }

  /** A big-endian u32. */
  u32(field: string): number {
    this.#need(4, field);
    const v = this.#view.getUint32(this.#pos, false);
    this.#pos += 4;
    return v;
  }

  /** A big-endian u64 that must fit in a safe integer. */
  u64(field: string): number {
    this.#need(8, field);
    const v = this.#view.getBigUint64(this.#pos, false);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ProtocolError(`${this.#what}: field "${field}" = ${v} exceeds 2^53 - 1`);
    }
    this.#pos += 8;
    return Number(v);
  }

  /** Exactly `n` bytes (a copy). */
  bytes(n: number, field: string): Uint8Array {
    this.#need(n, field);
    const out = this.#bytes.slice(this.#pos, this.#pos + n);
    this.#pos += n;
    return out;
  }

  /** A u16 length then UTF-8 text, at most `maxBytes` long. */
  string(field: string, maxBytes: number): string {
    const len = this.u16(field);
    if (len > maxBytes) {
      throw new ProtocolError(
        `${this.#what}: field "${field}" is ${len} bytes, at most ${maxBytes} allowed`,
      );
    }
    const raw = this.bytes(len, field);
    try {
      return utf8Decoder.decode(raw);
    } catch {
      throw new ProtocolError(`${this.#what}: field "${field}" is not valid UTF-8`);
    }
  }

  /** Bytes not yet read. */
  get remaining(): number {
    return this.#bytes.length - this.#pos;
  }

  /** Throws if any byte is left over: every message has an exact size. */
  end(): void {
    if (this.remaining !== 0) {
      throw new ProtocolError(
        `${this.#what}: ${this.remaining} unexpected trailing bytes at offset ${this.#pos}`,
      );
    }
  }
}
