/**
 * One key, two roles: the client's 32-byte ed25519 secret key signs its coordinator handshake and
 * is also its libp2p identity, so the coordinator's client list (`NodeIdentity.p2pIdentity`)
 * names every participant's libp2p peer id without any extra exchange.
 *
 * @module
 */
import { generateKeyPairFromSeed, publicKeyFromRaw } from "@libp2p/crypto/keys";
import { peerIdFromPublicKey } from "@libp2p/peer-id";
import type { Ed25519PrivateKey, PeerId } from "@libp2p/interface";
import { ed25519 } from "@noble/curves/ed25519.js";
import type { PublicKeyBytes } from "../../common/mod.ts";

/** Length of an ed25519 secret key (the seed) and of a public key, in bytes. */
export const ED25519_KEY_BYTES = 32;
/** Length of an ed25519 signature, in bytes. */
export const ED25519_SIGNATURE_BYTES = 64;

function checkKey(what: string, key: Uint8Array): void {
  if (!(key instanceof Uint8Array) || key.length !== ED25519_KEY_BYTES) {
    const found = key instanceof Uint8Array ? `${key.length} bytes` : typeof key;
    throw new RangeError(`${what} must be ${ED25519_KEY_BYTES} bytes, found ${found}`);
  }
}

/**
 * The libp2p private key for a client's 32-byte ed25519 secret key (the RFC 8032 seed).
 *
 * @example
 * ```ts
 * import { libp2pPrivateKey } from "./identity.ts";
 * const key = await libp2pPrivateKey(new Uint8Array(32).fill(7));
 * console.assert(key.type === "Ed25519");
 * ```
 */
export async function libp2pPrivateKey(secretKey: Uint8Array): Promise<Ed25519PrivateKey> {
  checkKey("ed25519 secret key", secretKey);
  return await generateKeyPairFromSeed("Ed25519", secretKey);
}

/** The 32-byte ed25519 public key for a secret key (what the coordinator lists for a client). */
export function publicKeyOf(secretKey: Uint8Array): PublicKeyBytes {
  checkKey("ed25519 secret key", secretKey);
  return ed25519.getPublicKey(secretKey);
}

/** The libp2p peer id of a 32-byte ed25519 public key. */
export function peerIdOf(publicKey: PublicKeyBytes): PeerId {
  checkKey("ed25519 public key", publicKey);
  return peerIdFromPublicKey(publicKeyFromRaw(publicKey));
}

/**
 * The 32-byte ed25519 public key inside a peer id, or `undefined` for peer ids that do not embed
 * an ed25519 key (RSA, secp256k1, URL): such peers can never be in a run's allowlist.
 */
export function publicKeyOfPeer(peerId: PeerId): PublicKeyBytes | undefined {
  if (peerId.type !== "Ed25519") return undefined;
  return peerId.publicKey.raw;
}
