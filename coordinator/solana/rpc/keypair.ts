/**
 * Solana keypair files as `solana-keygen` writes them: a JSON array of 64 numbers, the
 * 32-byte ed25519 secret seed followed by the 32-byte public key. The same key is a
 * `@solana/kit` signer (wallet, fee payer) and a net/identity.ts Identity.
 *
 * @module
 */

import { createKeyPairSignerFromBytes, type KeyPairSigner } from "@solana/kit";
import { type Identity, identityFromSecretKey } from "../../../net/mod.ts";

/** A keypair file is missing, malformed or inconsistent; the message names the file. */
export class KeypairFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KeypairFileError";
  }
}

/** A loaded wallet. */
export interface Wallet {
  /** Signs transactions. */
  signer: KeyPairSigner;
  /** The same key as a node identity (secret seed + public key). */
  identity: Identity;
}

/** The 64 bytes of a keypair file's JSON text; KeypairFileError naming `path` otherwise. */
export function parseKeypairJson(text: string, path: string): Uint8Array {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new KeypairFileError(`Keypair file "${path}" is not JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(value) || value.length !== 64) {
    const found = Array.isArray(value) ? `${value.length} numbers` : typeof value;
    throw new KeypairFileError(
      `Keypair file "${path}" must hold a JSON array of 64 byte values, found ${found}`,
    );
  }
  const bad = value.findIndex((b) => !Number.isInteger(b) || b < 0 || b > 255);
  if (bad >= 0) {
    throw new KeypairFileError(
      `Keypair file "${path}": entry ${bad} is ${JSON.stringify(value[bad])}, expected 0..255`,
    );
  }
  const bytes = Uint8Array.from(value as number[]);
  const derived = identityFromSecretKey(bytes.subarray(0, 32)).publicKey;
  if (!derived.every((b, i) => b === bytes[32 + i])) {
    throw new KeypairFileError(
      `Keypair file "${path}": the last 32 bytes are not the public key of the first 32`,
    );
  }
  return bytes;
}

/** Loads a wallet from a keypair file. */
export async function loadWallet(path: string): Promise<Wallet> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    throw new KeypairFileError(`Cannot read keypair file "${path}": ${(e as Error).message}`);
  }
  return await walletFromBytes(parseKeypairJson(text, path));
}

/** A wallet from the 64 keypair bytes. */
export async function walletFromBytes(bytes: Uint8Array): Promise<Wallet> {
  return {
    signer: await createKeyPairSignerFromBytes(bytes),
    identity: identityFromSecretKey(bytes.subarray(0, 32)),
  };
}

/** The keypair-file JSON text for `identity` (what `solana-keygen new` writes). */
export function keypairJson(identity: Identity): string {
  return JSON.stringify([...identity.secretKey, ...identity.publicKey]);
}
