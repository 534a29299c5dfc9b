/**
 * Gossip announcements: the closed set of small messages clients broadcast to their run, their
 * compact binary encoding, and the ed25519 envelope that says who sent them.
 *
 * Psyche's `Broadcast` carries a step, a committee proof, a commitment and a nonce, with data
 * `TrainingResult` ("I trained batch X; its payload is blob H") or `Finished` ("I am done with
 * this round; here is the Merkle root of what I received"). Here the same facts travel as:
 *
 * ```
 * envelope  = version u8 (=1) | from [32] | signature [64] | nonce u32 | message
 * message   = kind u8 | step u32 | committee u8 | position u32 | index u32 | fields
 * TrainingResult (kind 0): batch.start u64 | batch.end u64 | commitment [32] | contentHash [32]
 *                          | payloadSize u64
 * Finished (kind 1):       merkleRoot [32] | warmup u8 (0 or 1)
 * signature = ed25519(sender key, "psyche-ts announcement v1" | topic [32] | nonce | message)
 * ```
 *
 * All integers are big-endian. Binding the topic into the signature stops an announcement from
 * one run being replayed into another. The nonce exists so a rebroadcast is a new gossip message
 * (gossipsub drops byte-identical repeats); receivers deduplicate on `from | message`.
 * Pure: no I/O, no clock, no randomness.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { ed25519 } from "@noble/curves/ed25519.js";
import type {
  BatchId,
  Committee,
  CommitteeProof,
  PublicKeyBytes,
} from "../../coordinator/types.ts";
import { ED25519_KEY_BYTES, ED25519_SIGNATURE_BYTES } from "./identity.ts";
import { hexToBytes } from "./hex.ts";

/** Envelope format version written in the first byte. */
export const ANNOUNCEMENT_VERSION = 1;
/**
 * Largest encoded announcement accepted or produced, in bytes. Far below gossipsub's ~4 MiB
 * silent-drop limit; the largest message today is 203 bytes.
 */
export const MAX_ANNOUNCEMENT_BYTES = 1024;
/** Length of hashes carried in announcements (sha256), in bytes. */
export const HASH_BYTES = 32;

const SIGNING_DOMAIN = new TextEncoder().encode("psyche-ts announcement v1");
const COMMITTEES: readonly Committee[] = ["TieBreaker", "Verifier", "Trainer"];
const KIND_CODES = { TrainingResult: 0, Finished: 1 } as const;
const HEADER_BYTES = 1 + ED25519_KEY_BYTES + ED25519_SIGNATURE_BYTES; // version, from, signature
const NONCE_OFFSET = HEADER_BYTES;
const MESSAGE_OFFSET = NONCE_OFFSET + 4;
const COMMON_BYTES = 1 + 4 + 1 + 4 + 4; // kind, step, committee, position, index
const TRAINING_RESULT_BYTES = COMMON_BYTES + 8 + 8 + HASH_BYTES + HASH_BYTES + 8;
const FINISHED_BYTES = COMMON_BYTES + HASH_BYTES + 1;

/** Fields every announcement carries. */
interface AnnouncementCommon {
  /** The round (coordinator step) this announcement is about; 0 for warmup. */
  step: number;
  /** The sender's committee position for `step` (a default proof for warmup). */
  proof: CommitteeProof;
}

/** "I trained `batch` in round `step`; its payload is `contentHash`, `payloadSize` bytes." */
export interface TrainingResultAnnouncement extends AnnouncementCommon {
  kind: "TrainingResult";
  batch: BatchId;
  /** The commitment hash over the result (what witnesses put in their broadcast bloom). */
  commitment: Uint8Array;
  /** sha256 of the payload bytes, the key to fetch them by over the payload protocol. */
  contentHash: Uint8Array;
  /** Exact payload length in bytes, so a fetcher can refuse anything else. */
  payloadSize: number;
}

/** "I finished round `step` (or warmup)": `merkleRoot` covers the results I received. */
export interface FinishedAnnouncement extends AnnouncementCommon {
  kind: "Finished";
  merkleRoot: Uint8Array;
  warmup: boolean;
}

/** Every message that travels on a run's gossip topic. */
export type Announcement = TrainingResultAnnouncement | FinishedAnnouncement;

/** A decoded envelope; `verifyEnvelope` says whether its signature holds. */
export interface AnnouncementEnvelope {
  /** The sender's 32-byte ed25519 public key, as claimed by the envelope. */
  from: PublicKeyBytes;
  signature: Uint8Array;
  nonce: number;
  message: Announcement;
  /** The encoded message bytes (without nonce): `from | messageBytes` identifies a resend. */
  messageBytes: Uint8Array;
  /** The nonce and message bytes the signature covers (after the domain and topic). */
  signedBytes: Uint8Array;
}

/** Bytes on the wire that are not a well-formed announcement; `offset` is where decoding stopped. */
export class AnnouncementDecodeError extends Error {
  /** Byte offset of the problem. */
  readonly offset: number;
  /** Builds the error; the message names the offset. */
  constructor(message: string, offset: number) {
    super(`Malformed announcement at byte ${offset}: ${message}`);
    this.name = "AnnouncementDecodeError";
    this.offset = offset;
  }
}

/** A run's gossip topic: hex of sha256("psyche gossip" || run id), as in Psyche. */
export function gossipTopic(runId: string): string {
  return createHash("sha256").update("psyche gossip").update(runId, "utf8").digest("hex");
}

function checkU32(what: string, value: number): void {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw new RangeError(`${what} must be an integer in 0..2^32-1, found ${value}`);
  }
}

function checkU53(what: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${what} must be a non-negative safe integer, found ${value}`);
  }
}

function checkHash(what: string, value: Uint8Array): void {
  if (!(value instanceof Uint8Array) || value.length !== HASH_BYTES) {
    const found = value instanceof Uint8Array ? `${value.length} bytes` : typeof value;
    throw new RangeError(`${what} must be ${HASH_BYTES} bytes, found ${found}`);
  }
}

/** Encodes a message (no envelope). Throws `RangeError` naming the field that is out of range. */
export function encodeMessage(message: Announcement): Uint8Array {
  checkU32("step", message.step);
  checkU32("proof.position", message.proof.position);
  checkU32("proof.index", message.proof.index);
  const committee = COMMITTEES.indexOf(message.proof.committee);
  if (committee < 0) throw new RangeError(`unknown committee "${message.proof.committee}"`);
  const size = message.kind === "TrainingResult" ? TRAINING_RESULT_BYTES : FINISHED_BYTES;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint8(0, KIND_CODES[message.kind]);
  view.setUint32(1, message.step);
  view.setUint8(5, committee);
  view.setUint32(6, message.proof.position);
  view.setUint32(10, message.proof.index);
  switch (message.kind) {
    case "TrainingResult": {
      checkU53("batch.start", message.batch.start);
      checkU53("batch.end", message.batch.end);
      if (message.batch.start > message.batch.end) {
        throw new RangeError(
          `batch.start must be <= batch.end, found ${message.batch.start} > ${message.batch.end}`,
        );
      }
      checkHash("commitment", message.commitment);
      checkHash("contentHash", message.contentHash);
      checkU53("payloadSize", message.payloadSize);
      view.setBigUint64(COMMON_BYTES, BigInt(message.batch.start));
      view.setBigUint64(COMMON_BYTES + 8, BigInt(message.batch.end));
      out.set(message.commitment, COMMON_BYTES + 16);
      out.set(message.contentHash, COMMON_BYTES + 16 + HASH_BYTES);
      view.setBigUint64(COMMON_BYTES + 16 + 2 * HASH_BYTES, BigInt(message.payloadSize));
      return out;
    }
    case "Finished":
      checkHash("merkleRoot", message.merkleRoot);
      out.set(message.merkleRoot, COMMON_BYTES);
      view.setUint8(COMMON_BYTES + HASH_BYTES, message.warmup ? 1 : 0);
      return out;
    default: {
      const never: never = message;
      const kind = (never as { kind?: unknown }).kind;
      throw new RangeError(`unknown announcement kind ${JSON.stringify(kind)}`);
    }
  }
}

function readU53(view: DataView, offset: number, base: number, what: string): number {
  const value = view.getBigUint64(offset);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new AnnouncementDecodeError(`${what} ${value} exceeds 2^53-1`, base + offset);
  }
  return Number(value);
}

/** Decodes a message (no envelope), checking its exact length and every field. */
export function decodeMessage(bytes: Uint8Array, base = 0): Announcement {
  if (bytes.length < COMMON_BYTES) {
    throw new AnnouncementDecodeError(
      `message is ${bytes.length} bytes, expected at least ${COMMON_BYTES}`,
      base,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kindCode = view.getUint8(0);
  const committeeCode = view.getUint8(5);
  const committee = COMMITTEES[committeeCode];
  if (committee === undefined) {
    throw new AnnouncementDecodeError(`unknown committee code ${committeeCode}`, base + 5);
  }
  const step = view.getUint32(1);
  const proof: CommitteeProof = {
    committee,
    position: view.getUint32(6),
    index: view.getUint32(10),
  };
  const expectLength = (expected: number, kind: string) => {
    if (bytes.length !== expected) {
      throw new AnnouncementDecodeError(
        `${kind} message is ${bytes.length} bytes, expected ${expected}`,
        base,
      );
    }
  };
  if (kindCode === KIND_CODES.TrainingResult) {
    expectLength(TRAINING_RESULT_BYTES, "TrainingResult");
    const start = readU53(view, COMMON_BYTES, base, "batch.start");
    const end = readU53(view, COMMON_BYTES + 8, base, "batch.end");
    if (start > end) {
      throw new AnnouncementDecodeError(
        `batch.start ${start} > batch.end ${end}`,
        base + COMMON_BYTES,
      );
    }
    const hashesAt = COMMON_BYTES + 16;
    return {
      kind: "TrainingResult",
      step,
      proof,
      batch: { start, end },
      commitment: copyOf(bytes, hashesAt, hashesAt + HASH_BYTES),
      contentHash: copyOf(bytes, hashesAt + HASH_BYTES, hashesAt + 2 * HASH_BYTES),
      payloadSize: readU53(view, hashesAt + 2 * HASH_BYTES, base, "payloadSize"),
    };
  }
  if (kindCode === KIND_CODES.Finished) {
    expectLength(FINISHED_BYTES, "Finished");
    const warmup = view.getUint8(COMMON_BYTES + HASH_BYTES);
    if (warmup > 1) {
      throw new AnnouncementDecodeError(
        `warmup flag must be 0 or 1, found ${warmup}`,
        base + COMMON_BYTES + HASH_BYTES,
      );
    }
    return {
      kind: "Finished",
      step,
      proof,
      merkleRoot: copyOf(bytes, COMMON_BYTES, COMMON_BYTES + HASH_BYTES),
      warmup: warmup === 1,
    };
  }
  throw new AnnouncementDecodeError(`unknown announcement kind code ${kindCode}`, base);
}

/**
 * A fresh plain `Uint8Array` holding `bytes[start, end)`. Gossip hands us Node `Buffer`s, whose
 * `slice` is a view, not a copy; decoded fields must not alias the receive buffer.
 */
function copyOf(bytes: Uint8Array, start: number, end = bytes.length): Uint8Array {
  return new Uint8Array(bytes.subarray(start, end));
}

function signingInput(topic: string, signedBytes: Uint8Array): Uint8Array {
  const topicBytes = hexToBytes(topic, 32, "topic");
  const out = new Uint8Array(SIGNING_DOMAIN.length + topicBytes.length + signedBytes.length);
  out.set(SIGNING_DOMAIN, 0);
  out.set(topicBytes, SIGNING_DOMAIN.length);
  out.set(signedBytes, SIGNING_DOMAIN.length + topicBytes.length);
  return out;
}

/** Options for `signAnnouncement`. */
export interface SignOptions {
  /** The sender's 32-byte ed25519 secret key. */
  secretKey: Uint8Array;
  /** The run's gossip topic (`gossipTopic(runId)`). */
  topic: string;
  /** Resend counter; any u32. A rebroadcast uses a different nonce than the first send. */
  nonce: number;
}

/**
 * Encodes and signs a message into a complete envelope.
 *
 * @example
 * ```ts
 * import { decodeEnvelope, gossipTopic, signAnnouncement, verifyEnvelope } from "./announcement.ts";
 * const topic = gossipTopic("run-1");
 * const bytes = signAnnouncement({
 *   kind: "Finished", step: 3, proof: { committee: "Trainer", position: 0, index: 0 },
 *   merkleRoot: new Uint8Array(32), warmup: false,
 * }, { secretKey: new Uint8Array(32).fill(1), topic, nonce: 0 });
 * console.assert(verifyEnvelope(decodeEnvelope(bytes), topic));
 * ```
 */
export function signAnnouncement(message: Announcement, options: SignOptions): Uint8Array {
  checkU32("nonce", options.nonce);
  const body = encodeMessage(message);
  const out = new Uint8Array(MESSAGE_OFFSET + body.length);
  out[0] = ANNOUNCEMENT_VERSION;
  out.set(ed25519.getPublicKey(options.secretKey), 1);
  new DataView(out.buffer).setUint32(NONCE_OFFSET, options.nonce);
  out.set(body, MESSAGE_OFFSET);
  const signature = ed25519.sign(
    signingInput(options.topic, out.subarray(NONCE_OFFSET)),
    options.secretKey,
  );
  out.set(signature, 1 + ED25519_KEY_BYTES);
  return out;
}

/**
 * The single entry point for bytes received from gossip: checks the size limit, version and
 * every length, and decodes. Does not check the signature (see `verifyEnvelope`).
 * Throws `AnnouncementDecodeError`.
 */
export function decodeEnvelope(bytes: Uint8Array): AnnouncementEnvelope {
  if (bytes.length > MAX_ANNOUNCEMENT_BYTES) {
    throw new AnnouncementDecodeError(
      `announcement is ${bytes.length} bytes, the limit is ${MAX_ANNOUNCEMENT_BYTES}`,
      MAX_ANNOUNCEMENT_BYTES,
    );
  }
  if (bytes.length < MESSAGE_OFFSET) {
    throw new AnnouncementDecodeError(
      `announcement is ${bytes.length} bytes, expected at least ${MESSAGE_OFFSET}`,
      bytes.length,
    );
  }
  if (bytes[0] !== ANNOUNCEMENT_VERSION) {
    throw new AnnouncementDecodeError(
      `version is ${bytes[0]}, expected ${ANNOUNCEMENT_VERSION}`,
      0,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const messageBytes = copyOf(bytes, MESSAGE_OFFSET);
  return {
    from: copyOf(bytes, 1, 1 + ED25519_KEY_BYTES),
    signature: copyOf(bytes, 1 + ED25519_KEY_BYTES, HEADER_BYTES),
    nonce: view.getUint32(NONCE_OFFSET),
    message: decodeMessage(messageBytes, MESSAGE_OFFSET),
    messageBytes,
    signedBytes: copyOf(bytes, NONCE_OFFSET),
  };
}

/** Whether the envelope's signature was made by `envelope.from` for this topic. */
export function verifyEnvelope(envelope: AnnouncementEnvelope, topic: string): boolean {
  try {
    return ed25519.verify(
      envelope.signature,
      signingInput(topic, envelope.signedBytes),
      envelope.from,
    );
  } catch {
    return false; // a malformed public key or signature point is simply not a valid signature
  }
}
