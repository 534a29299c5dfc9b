/**
 * Byte strings as every room handles them: lower-case hex (logs, JSON, map keys, content
 * hashes, keys an operator types) and equality of two keys or digests. One implementation, so
 * a key prints, parses and compares the same way in the coordinator, the client and the tools.
 *
 * @example
 * ```ts
 * import { equalBytes, fromHex, toHex } from "./bytes.ts";
 * const key = fromHex("00ff10");
 * if (toHex(key) !== "00ff10" || !equalBytes(key, Uint8Array.of(0, 255, 16))) {
 *   throw new Error("hex round trip");
 * }
 * ```
 *
 * @module
 */

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/** Lower-case hex of `bytes`, two characters per byte (also the map key of a public key). */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
  return out;
}

/**
 * Bytes of a hex string (even length, 0-9a-fA-F only). Throws TypeError naming the
 * first bad character or the odd length.
 */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0) {
    throw new TypeError(`Hex string has odd length ${hex.length}`);
  }
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) {
    const pair = hex.slice(2 * i, 2 * i + 2);
    if (!/^[0-9a-fA-F]{2}$/.test(pair)) {
      throw new TypeError(`Hex string has a non-hex character at offset ${2 * i}: "${pair}"`);
    }
    out[i] = parseInt(pair, 16);
  }
  return out;
}

/**
 * Parses lower-case hex of exactly `length` bytes (a content hash, a topic): the canonical
 * spelling only, so one value has one string. Throws `RangeError` naming `what` and showing
 * what was found.
 */
export function hexToBytes(hex: string, length: number, what: string): Uint8Array {
  if (hex.length !== 2 * length || !/^[0-9a-f]*$/.test(hex)) {
    throw new RangeError(`${what} must be ${2 * length} lowercase hex characters, found "${hex}"`);
  }
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** True when `a` and `b` hold the same bytes (two public keys, two digests). */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** `parts` end to end in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
