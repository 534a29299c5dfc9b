/**
 * Hostile ed25519 inputs for the tests of every signature check: the 32-byte encodings of the
 * eight small-order (torsion) points, canonical and not, and signatures an attacker can make
 * with them.
 *
 * - {@linkcode forgeWithSmallOrderKey}: R = a small-order point, S = 0. With a small-order public
 *   key the cofactored equation [8][S]B = [8]R + [8][k]A holds for any message: no secret key
 *   is needed. ZIP-215 verification (noble's default) accepts it.
 * - {@linkcode signWithSmallOrderR}: an honest key signing with R = a small-order point and
 *   S = k·a. The cofactored equation holds too, so only an explicit small-order check on R
 *   refuses it.
 *
 * @module
 */
import { ed25519, ED25519_TORSION_SUBGROUP } from "@noble/curves/ed25519.js";
import { sha512 } from "@noble/hashes/sha2.js";
import { fromHex } from "../../common/mod.ts";

/** One hostile point encoding. */
export interface WeakPoint {
  /** What it is, for test names. */
  readonly name: string;
  /** The 32 bytes. */
  readonly bytes: Uint8Array;
  /** Whether the encoding is canonical (y < p, no sign bit on x = 0). */
  readonly canonical: boolean;
}

/** `value` as 32 little-endian bytes, with bit 255 (a point's x sign bit) set when `sign`. */
function littleEndian32(value: bigint, sign = false): Uint8Array {
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number((value >> BigInt(8 * i)) & 0xffn);
  if (sign) out[31] |= 0x80;
  return out;
}

const P = 2n ** 255n - 19n;

/**
 * Every 32-byte encoding of a small-order point: the eight canonical ones (the identity, the
 * point of order 2, two of order 4 — among them the all-zero key — and four of order 8), and
 * the six non-canonical ones (y = p or p + 1, and x = 0 with the sign bit set).
 */
export const WEAK_POINTS: readonly WeakPoint[] = [
  ...ED25519_TORSION_SUBGROUP.map((hex) => ({
    name: `torsion ${hex.slice(0, 8)}…${hex.slice(-2)}`,
    bytes: fromHex(hex),
    canonical: true,
  })),
  { name: "order 4, y = p (non-canonical 0)", bytes: littleEndian32(P, false), canonical: false },
  { name: "order 4, y = p, sign set", bytes: littleEndian32(P, true), canonical: false },
  { name: "identity, y = p + 1", bytes: littleEndian32(P + 1n, false), canonical: false },
  { name: "identity, y = p + 1, sign set", bytes: littleEndian32(P + 1n, true), canonical: false },
  { name: "identity, x = 0 with sign set", bytes: littleEndian32(1n, true), canonical: false },
  { name: "order 2, x = 0 with sign set", bytes: littleEndian32(P - 1n, true), canonical: false },
];

/** The canonical encoding of the identity point (y = 1). */
export const IDENTITY_POINT: Uint8Array = littleEndian32(1n);

/** The all-zero public key (a point of order 4). */
export const ZERO_KEY: Uint8Array = new Uint8Array(32);

/** `R ‖ S = 0`: with any small-order public key this verifies under ZIP-215 for any message. */
export function forgeWithSmallOrderKey(r: Uint8Array = IDENTITY_POINT): Uint8Array {
  const signature = new Uint8Array(64);
  signature.set(r, 0);
  return signature;
}

const L = 2n ** 252n + 27742317777372353535851937790883648493n;

function bytesToNumberLE(bytes: Uint8Array): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]);
  return n;
}

/**
 * `secretKey`'s signature of `message` with R = `r` (a small-order point) and S = k·a mod L,
 * k = SHA-512(R ‖ A ‖ M) mod L: it passes the cofactored equation, since [8]R = 0.
 */
export function signWithSmallOrderR(
  secretKey: Uint8Array,
  message: Uint8Array,
  r: Uint8Array,
): Uint8Array {
  const { scalar, pointBytes } = ed25519.utils.getExtendedPublicKey(secretKey);
  const preimage = new Uint8Array(64 + message.length);
  preimage.set(r, 0);
  preimage.set(pointBytes, 32);
  preimage.set(message, 64);
  const k = bytesToNumberLE(sha512(preimage)) % L;
  const signature = new Uint8Array(64);
  signature.set(r, 0);
  signature.set(littleEndian32((k * scalar) % L), 32);
  return signature;
}
