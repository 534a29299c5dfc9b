/**
 * SHA-256 over concatenated parts and fixed-width integer encoders.
 *
 * Every hash in the coordinator protocol (committee seeds, swap-or-not rounds,
 * Merkle nodes, participant ids) goes through {@linkcode sha256}, so all backends
 * agree on one definition. Integer encoders are explicit about width and byte order
 * because the protocol mixes little-endian (seeds, shuffle blocks) and big-endian
 * (commitments) encodings.
 *
 * @module
 */

import { createHash } from "node:crypto";

/**
 * SHA-256 of the concatenation of `parts`, as a fresh 32-byte array.
 *
 * @example
 * ```ts
 * import { sha256 } from "./hash.ts";
 * const digest = sha256(new TextEncoder().encode("Hello, "), new TextEncoder().encode("world!"));
 * if (digest.length !== 32) throw new Error("sha256 must return 32 bytes");
 * ```
 */
export function sha256(...parts: Uint8Array[]): Uint8Array {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  // Copy: node's Buffer may be a view into a shared pool, and callers may use `.buffer`.
  return new Uint8Array(hash.digest());
}

const U64_MAX = (1n << 64n) - 1n;
const U32_MAX = 0xffff_ffff;

function checkU64(x: bigint): void {
  if (typeof x !== "bigint" || x < 0n || x > U64_MAX) {
    throw new RangeError(`Expected an unsigned 64-bit integer, found ${String(x)}`);
  }
}

function checkU32(x: number): void {
  if (!Number.isInteger(x) || x < 0 || x > U32_MAX) {
    throw new RangeError(`Expected an unsigned 32-bit integer, found ${String(x)}`);
  }
}

/** `x` as 8 little-endian bytes (Rust's `u64::to_le_bytes`). Throws RangeError outside [0, 2^64). */
export function u64le(x: bigint): Uint8Array {
  checkU64(x);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, x, true);
  return out;
}

/** `x` as 8 big-endian bytes (Rust's `u64::to_be_bytes`). Throws RangeError outside [0, 2^64). */
export function u64be(x: bigint): Uint8Array {
  checkU64(x);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, x, false);
  return out;
}

/** `x` as 4 little-endian bytes (Rust's `u32::to_le_bytes`). Throws RangeError outside [0, 2^32). */
export function u32le(x: number): Uint8Array {
  checkU32(x);
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, x, true);
  return out;
}

/** `x` as 4 big-endian bytes (Rust's `u32::to_be_bytes`). Throws RangeError outside [0, 2^32). */
export function u32be(x: number): Uint8Array {
  checkU32(x);
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, x, false);
  return out;
}
