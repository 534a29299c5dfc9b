/**
 * LSB-first bit streams for the DisTrO payload: a growable writer and a bounds-checked
 * reader that reports where it ran out.
 *
 * @module
 */

/** Appends bits LSB-first into bytes (bit `i` of the stream is bit `i % 8` of byte `i / 8`). */
export class BitWriter {
  #bytes = new Uint8Array(256);
  #bitLength = 0;

  /** Bits written so far. */
  get bitLength(): number {
    return this.#bitLength;
  }

  /**
   * Writes the low `width` bits of `value` (an integer, 0 <= width <= 32), least significant
   * first.
   */
  write(value: number, width: number): void {
    // 3 spare bytes: a field of up to 24 bits is or-ed into the 4 bytes from its first one.
    this.#reserve(this.#bitLength + width + 24);
    if (width <= 24) {
      const at = this.#bitLength;
      const field = (value & ((1 << width) - 1)) << (at & 7); // below 2^31
      const b = this.#bytes, i = at >>> 3;
      b[i] |= field;
      b[i + 1] |= field >>> 8;
      b[i + 2] |= field >>> 16;
      b[i + 3] |= field >>> 24;
      this.#bitLength += width;
      return;
    }
    let done = 0;
    while (done < width) {
      const off = this.#bitLength & 7;
      const take = Math.min(8 - off, width - done);
      const part = Math.floor(value / 2 ** done) & ((1 << take) - 1);
      this.#bytes[this.#bitLength >>> 3] |= part << off;
      done += take;
      this.#bitLength += take;
    }
  }

  /** Writes one bit. */
  bit(set: boolean): void {
    this.#reserve(this.#bitLength + 1);
    if (set) this.#bytes[this.#bitLength >>> 3] |= 1 << (this.#bitLength & 7);
    this.#bitLength++;
  }

  /** Sets bit `at` of the stream, one already written (`at < bitLength`). */
  set(at: number): void {
    if (!(at >= 0 && at < this.#bitLength)) {
      throw new RangeError(`BitWriter.set: bit ${at} of ${this.#bitLength} written`);
    }
    this.#bytes[at >>> 3] |= 1 << (at & 7);
  }

  /** Skips `count` zero bits. */
  zeros(count: number): void {
    this.#reserve(this.#bitLength + count);
    this.#bitLength += count;
  }

  /** The bytes written, the last one zero-padded. */
  finish(): Uint8Array {
    return this.#bytes.slice(0, Math.ceil(this.#bitLength / 8));
  }

  #reserve(bits: number): void {
    const need = Math.ceil(bits / 8);
    if (need <= this.#bytes.length) return;
    const grown = new Uint8Array(Math.max(need, this.#bytes.length * 2));
    grown.set(this.#bytes);
    this.#bytes = grown;
  }
}

/** Thrown by {@link BitReader} when a read would pass the end of its bytes. */
export class BitStreamEndError extends Error {
  constructor(readonly bitOffset: number) {
    super(`bit stream ends at bit ${bitOffset}`);
    this.name = "BitStreamEndError";
  }
}

/** Reads an LSB-first bit stream from `bytes`; every read is bounds-checked. */
export class BitReader {
  #bytes: Uint8Array;
  #bit = 0;
  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  /** Bits consumed so far. */
  get bitOffset(): number {
    return this.#bit;
  }

  /** Reads `width` bits (0..32) as an unsigned number. */
  read(width: number): number {
    if (this.#bit + width > this.#bytes.length * 8) throw new BitStreamEndError(this.#bit);
    if (width <= 25) {
      // The bits lie within 4 bytes (offset <= 7); bytes past the end read as 0 (`undefined | 0`).
      const b = this.#bytes, i = this.#bit >>> 3;
      const word = b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24);
      const v = (word >>> (this.#bit & 7)) & ((1 << width) - 1);
      this.#bit += width;
      return v;
    }
    let v = 0;
    let got = 0;
    while (got < width) {
      const off = this.#bit & 7;
      const take = Math.min(8 - off, width - got);
      v += ((this.#bytes[this.#bit >>> 3] >>> off) & ((1 << take) - 1)) * 2 ** got;
      got += take;
      this.#bit += take;
    }
    return v;
  }

  /** Reads one bit. */
  bit(): boolean {
    if (this.#bit >= this.#bytes.length * 8) throw new BitStreamEndError(this.#bit);
    const set = ((this.#bytes[this.#bit >>> 3] >>> (this.#bit & 7)) & 1) === 1;
    this.#bit++;
    return set;
  }

  /** True when every bit from the current position to the end of the bytes is zero. */
  restIsZero(): boolean {
    return bitsZeroFrom(this.#bytes, this.#bit);
  }
}

/** True when every bit of `bytes` from bit `from` (LSB-first) to the end is zero. */
export function bitsZeroFrom(bytes: Uint8Array, from: number): boolean {
  let i = Math.floor(from / 8);
  if (i >= bytes.length) return true;
  // The partial first byte, then whole bytes.
  if (bytes[i] >>> (from & 7) !== 0) return false;
  for (i++; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

/**
 * Bits `[at, at + width)` of `bytes` (LSB-first) as an unsigned number, `0 <= width <= 24`.
 * Unchecked: `bytes` must hold 3 readable bytes past the last byte the field touches (the
 * caller pads), so the hot loops of the payload decoder need no bounds checks per read.
 */
export function bitsAt(bytes: Uint8Array, at: number, width: number): number {
  // A 24-bit field at bit offset <= 7 lies within the 4 bytes from `at / 8`.
  const i = at >>> 3;
  const word = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
  return (word >>> (at & 7)) & ((1 << width) - 1);
}
