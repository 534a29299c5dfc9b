/**
 * The one ed25519 signature check every verifier of the project calls (the TCP handshake of the
 * coordinator and the data server, gossip announcements, result commitments), and the one test
 * of whether a peer's public key may be accepted at all (allowlists, the coordinator's Join,
 * operator key lists).
 *
 * `ed25519.verify` of @noble/curves defaults to ZIP-215 rules, made for consensus: it decodes
 * non-canonical encodings (y ≥ p, or x = 0 with the sign bit set) and accepts public keys of
 * small order. With A = R = the identity point and S = 0, the cofactored equation
 * [8][S]B = [8]R + [8][k]A holds for every message, so anyone could authenticate as the
 * identity (or the all-zero key, a point of order 4) without a secret key. Here the rules are
 * RFC 8032's strict decoding plus the small-order checks libsodium makes:
 *
 * - A, the public key: 32 bytes, a canonical encoding (y < p; x = 0 only with the sign bit
 *   clear), a point on the curve, and not of small order ([8]A ≠ identity);
 * - R, the first half of the signature: the same;
 * - S: below the group order L (noble refuses S ≥ L);
 * - then the cofactored equation, with noble's strict decoding (`zip215: false`).
 *
 * The small-order R check matters on its own: a key holder can sign with R a torsion point
 * (S = k·a), which the cofactored equation accepts, giving a second valid signature for a
 * message (malleability). A key of mixed order (a prime-order point plus a torsion point) is
 * not refused, as in libsodium: only the holder of the prime-order part's secret can sign for
 * it, so it grants nothing a fresh key would not.
 *
 * @module
 */
import { ed25519 } from "@noble/curves/ed25519.js";

/** Bytes of an ed25519 public key. */
export const ED25519_PUBLIC_KEY_BYTES = 32;
/** Bytes of an ed25519 signature (R ‖ S). */
export const ED25519_SIGNATURE_BYTES = 64;

/**
 * Why `bytes` is not a point a peer may use as a public key or as R, or `null` when it is
 * one: wrong length, not a canonical encoding of a curve point, or of small order.
 *
 * @example
 * ```ts
 * import { pointProblem } from "./ed25519_strict.ts";
 * if (pointProblem(new Uint8Array(32)) !== "is a small-order point") throw new Error();
 * ```
 */
export function pointProblem(bytes: Uint8Array): string | null {
  if (bytes.length !== ED25519_PUBLIC_KEY_BYTES) {
    return `is ${bytes.length} bytes, expected ${ED25519_PUBLIC_KEY_BYTES}`;
  }
  let point;
  try {
    point = ed25519.Point.fromBytes(bytes, false);
  } catch {
    return "is not a canonical encoding of a curve point";
  }
  return point.isSmallOrder() ? "is a small-order point" : null;
}

/**
 * Whether `bytes` encodes a point of small order, canonically or not: the keys anyone can "sign"
 * for without a secret key. Bytes that are no point at all give false (they fail every signature
 * check anyway); use {@linkcode pointProblem} to refuse those too.
 */
export function isSmallOrderEncoding(bytes: Uint8Array): boolean {
  if (bytes.length !== ED25519_PUBLIC_KEY_BYTES) return false;
  try {
    return ed25519.Point.fromBytes(bytes, true).isSmallOrder();
  } catch {
    return false;
  }
}

/** Whether `publicKey` is a key a peer may hold: see {@linkcode pointProblem}. */
export function isAcceptablePublicKey(publicKey: Uint8Array): boolean {
  return pointProblem(publicKey) === null;
}

/**
 * Whether `signature` is `publicKey`'s ed25519 signature of `message` under the strict rules
 * above. Never throws: any malformed input is simply not a valid signature.
 *
 * @example
 * ```ts
 * import { ed25519 } from "@noble/curves/ed25519.js";
 * import { verifySignature } from "./ed25519_strict.ts";
 * const secret = new Uint8Array(32).fill(1);
 * const message = new TextEncoder().encode("hello");
 * const signature = ed25519.sign(message, secret);
 * if (!verifySignature(signature, message, ed25519.getPublicKey(secret))) throw new Error();
 * const identity = new Uint8Array(32);
 * identity[0] = 1;
 * const forged = new Uint8Array(64);
 * forged[0] = 1; // R = identity, S = 0
 * if (verifySignature(forged, message, identity)) throw new Error("forgery accepted");
 * ```
 */
export function verifySignature(
  signature: Uint8Array,
  message: Uint8Array,
  publicKey: Uint8Array,
): boolean {
  if (signature.length !== ED25519_SIGNATURE_BYTES) return false;
  if (pointProblem(publicKey) !== null) return false;
  if (pointProblem(signature.subarray(0, ED25519_PUBLIC_KEY_BYTES)) !== null) return false;
  try {
    return ed25519.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}
