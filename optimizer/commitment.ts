/**
 * Commitments to DisTrO payloads: a SHA-256 hash over the step, the batch range and the
 * whole encoded payload, signed with the trainer's ed25519 identity.
 *
 * Unlike Psyche (whose hash covers only index and value bytes), hashing the whole payload
 * binds the shapes, totalk, k, flags and trainer nonce too, so a relay cannot alter any of
 * them without breaking the commitment. A domain prefix keeps these hashes apart from any
 * other SHA-256 the protocol signs.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { ed25519 } from "@noble/curves/ed25519.js";
import type { BatchId } from "../common/mod.ts";
import { verifySignature } from "../net/mod.ts";

/** Prefix of every commitment hash preimage. */
export const COMMITMENT_DOMAIN = new TextEncoder().encode("psyche-ts distro commitment v1\0");

/** A signed commitment: `signature = ed25519(secret, dataHash)`. */
export interface Commitment {
  /** 32-byte SHA-256 of the preimage described in {@link commitmentHash}. */
  readonly dataHash: Uint8Array;
  /** 64-byte ed25519 signature of `dataHash`. */
  readonly signature: Uint8Array;
}

/** What a commitment covers. */
export interface CommittedPayload {
  readonly step: number;
  readonly batch: BatchId;
  /** The encoded payload (optimizer/wire.ts), exactly as sent. */
  readonly payload: Uint8Array;
}

/**
 * `sha256(domain ‖ step u32 BE ‖ batch.start u64 BE ‖ batch.end u64 BE ‖ payload)`.
 * Throws `RangeError` for a step or batch bound outside its field.
 */
export function commitmentHash(what: CommittedPayload): Uint8Array {
  const { step, batch, payload } = what;
  if (!Number.isInteger(step) || step < 0 || step >= 2 ** 32) {
    throw new RangeError(`commitment step must be a u32, found ${step}`);
  }
  for (const v of [batch.start, batch.end]) {
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new RangeError(`commitment batch bounds must be non-negative integers, found ${v}`);
    }
  }
  const fields = new Uint8Array(20);
  const view = new DataView(fields.buffer);
  view.setUint32(0, step);
  view.setBigUint64(4, BigInt(batch.start));
  view.setBigUint64(12, BigInt(batch.end));
  return new Uint8Array(
    createHash("sha256").update(COMMITMENT_DOMAIN).update(fields).update(payload).digest(),
  );
}

/** Hashes `what` and signs the hash with the 32-byte ed25519 `secretKey`. */
export function commit(what: CommittedPayload, secretKey: Uint8Array): Commitment {
  const dataHash = commitmentHash(what);
  return { dataHash, signature: ed25519.sign(dataHash, secretKey) };
}

/**
 * True when `commitment` is `publicKey`'s signature over exactly `what`: the hash is
 * recomputed from the payload, so a payload that differs in any byte fails. Malformed keys or
 * signatures, and small-order or non-canonical ones (net/ed25519_strict.ts), give false, not an
 * exception.
 */
export function verifyCommitment(
  commitment: Commitment,
  publicKey: Uint8Array,
  what: CommittedPayload,
): boolean {
  const expected = commitmentHash(what);
  if (
    commitment.dataHash.length !== 32 || !expected.every((b, i) => b === commitment.dataHash[i])
  ) {
    return false;
  }
  return verifySignature(commitment.signature, expected, publicKey);
}
