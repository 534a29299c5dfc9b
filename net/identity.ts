/**
 * Node identity files: a 32-byte raw ed25519 secret key (Psyche's
 * `--identity-secret-key-path` format) or the same bytes as hex
 * (`RAW_IDENTITY_SECRET_KEY`). The public key, in hex, is what operators list
 * and what the coordinator knows a client by.
 *
 * @module
 */
import { ed25519 } from "@noble/curves/ed25519.js";
import { pointProblem } from "./ed25519_strict.ts";
import { fromHex, toHex } from "../common/mod.ts";

/** Bytes of an ed25519 secret key file. */
export const SECRET_KEY_BYTES = 32;

/** An ed25519 key pair. */
export interface Identity {
  /** 32-byte secret seed. */
  secretKey: Uint8Array;
  /** 32-byte public key. */
  publicKey: Uint8Array;
}

/** Raised when an identity file or hex string is malformed. */
export class IdentityError extends Error {
  /** Always `"IdentityError"`. */
  override name = "IdentityError";
}

/** Derives the key pair from a 32-byte secret key. */
export function identityFromSecretKey(secretKey: Uint8Array): Identity {
  if (secretKey.length !== SECRET_KEY_BYTES) {
    throw new IdentityError(
      `Secret key must be ${SECRET_KEY_BYTES} bytes, found ${secretKey.length}`,
    );
  }
  return { secretKey: secretKey.slice(), publicKey: ed25519.getPublicKey(secretKey) };
}

/** A fresh identity from the system's secure random source. */
export function generateIdentity(): Identity {
  return identityFromSecretKey(crypto.getRandomValues(new Uint8Array(SECRET_KEY_BYTES)));
}

/** Reads a 32-byte raw secret key file. Throws {@linkcode IdentityError} naming the file. */
export async function loadIdentity(path: string): Promise<Identity> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (cause) {
    throw new IdentityError(`Cannot read identity file "${path}": ${(cause as Error).message}`, {
      cause,
    });
  }
  if (bytes.length !== SECRET_KEY_BYTES) {
    throw new IdentityError(
      `Identity file "${path}" is ${bytes.length} bytes, expected ${SECRET_KEY_BYTES} raw bytes`,
    );
  }
  return identityFromSecretKey(bytes);
}

/** Writes the 32 raw secret key bytes to `path`, readable by the owner only. */
export async function saveIdentity(path: string, identity: Identity): Promise<void> {
  await Deno.writeFile(path, identity.secretKey, { mode: 0o600 });
}

/**
 * The bytes of a hex key as an operator or an environment variable gives it (surrounding
 * whitespace ignored). Throws {@linkcode IdentityError} naming the odd length or the bad
 * character.
 */
function keyFromHex(hex: string): Uint8Array {
  try {
    return fromHex(hex.trim());
  } catch (e) {
    throw new IdentityError((e as Error).message);
  }
}

/**
 * A peer's public key from 64 hex digits (an operator's allow list). Throws
 * {@linkcode IdentityError} for bad hex, a length other than 32 bytes, or a key no secret key
 * stands behind (small-order or non-canonical: net/ed25519_strict.ts), since anyone could
 * authenticate as such a key.
 *
 * @example
 * ```ts
 * import { publicKeyFromHex } from "./identity.ts";
 * try {
 *   publicKeyFromHex("00".repeat(32));
 *   throw new Error("accepted");
 * } catch (e) {
 *   if (!(e as Error).message.includes("small-order")) throw e;
 * }
 * ```
 */
export function publicKeyFromHex(hex: string): Uint8Array {
  const key = keyFromHex(hex);
  const problem = pointProblem(key);
  if (problem !== null) {
    throw new IdentityError(`Public key "${hex.trim()}" ${problem}`);
  }
  return key;
}

/** The identity in a hex secret key string (`RAW_IDENTITY_SECRET_KEY`). */
export function identityFromHex(hex: string): Identity {
  return identityFromSecretKey(keyFromHex(hex));
}

/** Hex of the identity's public key. */
export function publicKeyHex(identity: Identity): string {
  return toHex(identity.publicKey);
}
