/**
 * Lowercase hex for byte strings (hashes, topics, keys in logs and map keys). Pure.
 *
 * @module
 */

/** `bytes` as lowercase hex, two characters per byte. */
export function bytesToHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/**
 * Parses lowercase hex of exactly `length` bytes. Throws `RangeError` naming `what` and showing
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
