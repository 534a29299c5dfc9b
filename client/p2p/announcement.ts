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
 * message   = kind u8 | fields
 * round     = step u32 | committee u8 | position u32 | index u32
 * TrainingResult (kind 0): round | batch.start u64 | batch.end u64 | commitment [32]
 *                          | contentHash [32] | payloadSize u64
 * Finished (kind 1):       round | merkleRoot [32] | warmup u8 (0 or 1)
 * PeerAddresses (kind 2):  count u8 (1..8) | count x (length u8 (1..128) | multiaddr bytes)
 * signature = ed25519(sender key, "psyche-ts announcement v1" | topic [32] | nonce | message)
 * ```
 *
 * `PeerAddresses` is not in Psyche (iroh has its own discovery): it tells the run where the
 * sender listens, so payloads can be fetched from participants we are not connected to.
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
import { ED25519_KEY_BYTES, ED25519_SIGNATURE_BYTES } from "../../net/p2p/mod.ts";
import { type BatchId, hexToBytes, type PublicKeyBytes } from "../../common/mod.ts";
import type { Committee, CommitteeProof } from "../../coordinator/core/mod.ts";
import { verifySignature } from "../../net/mod.ts";

/** Envelope format version written in the first byte. */
export const ANNOUNCEMENT_VERSION = 1;
/**
 * Largest encoded announcement accepted, in bytes. Far below gossipsub's ~4 MiB silent-drop
 * limit (Psyche: 4096). The largest envelope `signAnnouncement` can produce is 1135 bytes
 * (`PeerAddresses` with 8 addresses of 128 bytes); round announcements are at most 203.
 */
export const MAX_ANNOUNCEMENT_BYTES = 2048;
/** Length of hashes carried in announcements (sha256), in bytes. */
export const HASH_BYTES = 32;

const SIGNING_DOMAIN = new TextEncoder().encode("psyche-ts announcement v1");
const COMMITTEES: readonly Committee[] = ["TieBreaker", "Verifier", "Trainer"];
const KIND_CODES = { TrainingResult: 0, Finished: 1, PeerAddresses: 2 } as const;
const HEADER_BYTES = 1 + ED25519_KEY_BYTES + ED25519_SIGNATURE_BYTES; // version, from, signature
const NONCE_OFFSET = HEADER_BYTES;
const MESSAGE_OFFSET = NONCE_OFFSET + 4;
const COMMON_BYTES = 1 + 4 + 1 + 4 + 4; // kind, step, committee, position, index
const TRAINING_RESULT_BYTES = COMMON_BYTES + 8 + 8 + HASH_BYTES + HASH_BYTES + 8;
const FINISHED_BYTES = COMMON_BYTES + HASH_BYTES + 1;
/** Most addresses in one `PeerAddresses` announcement. */
export const MAX_PEER_ADDRESSES = 8;
/** Longest binary multiaddr in a `PeerAddresses` announcement, in bytes. */
export const MAX_ADDRESS_BYTES = 128;

/** Fields every round announcement carries. */
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

/** "You can reach me here": binary multiaddrs (without `/p2p/...`; the sender is `from`). */
export interface PeerAddressesAnnouncement {
  kind: "PeerAddresses";
  addresses: Uint8Array[];
}

/** Announcements about a round: these are the ones resent by `rebroadcast`. */
export type RoundAnnouncement = TrainingResultAnnouncement | FinishedAnnouncement;

/** Every message that travels on a run's gossip topic. */
export type Announcement = RoundAnnouncement | PeerAddressesAnnouncement;

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
      const out = new Uint8Array(TRAINING_RESULT_BYTES);
      const view = writeRound(out, message);
      view.setBigUint64(COMMON_BYTES, BigInt(message.batch.start));
      view.setBigUint64(COMMON_BYTES + 8, BigInt(message.batch.end));
      out.set(message.commitment, COMMON_BYTES + 16);
      out.set(message.contentHash, COMMON_BYTES + 16 + HASH_BYTES);
      view.setBigUint64(COMMON_BYTES + 16 + 2 * HASH_BYTES, BigInt(message.payloadSize));
      return out;
    }
    case "Finished": {
      checkHash("merkleRoot", message.merkleRoot);
      const out = new Uint8Array(FINISHED_BYTES);
      writeRound(out, message);
      out.set(message.merkleRoot, COMMON_BYTES);
      out[COMMON_BYTES + HASH_BYTES] = message.warmup ? 1 : 0;
      return out;
    }
    case "PeerAddresses": {
      const { addresses } = message;
      if (addresses.length < 1 || addresses.length > MAX_PEER_ADDRESSES) {
        throw new RangeError(
          `addresses must hold 1..${MAX_PEER_ADDRESSES} entries, found ${addresses.length}`,
        );
      }
      addresses.forEach((a, i) => {
        if (a.length < 1 || a.length > MAX_ADDRESS_BYTES) {
          throw new RangeError(
            `addresses[${i}] must be 1..${MAX_ADDRESS_BYTES} bytes, found ${a.length}`,
          );
        }
      });
      const out = new Uint8Array(2 + addresses.reduce((n, a) => n + 1 + a.length, 0));
      out[0] = KIND_CODES.PeerAddresses;
      out[1] = addresses.length;
      let at = 2;
      for (const address of addresses) {
        out[at] = address.length;
        out.set(address, at + 1);
        at += 1 + address.length;
      }
      return out;
    }
    default: {
      const never: never = message;
      const kind = (never as { kind?: unknown }).kind;
      throw new RangeError(`unknown announcement kind ${JSON.stringify(kind)}`);
    }
  }
}

/** Writes kind, step and committee proof; returns a view for the fields after them. */
function writeRound(out: Uint8Array, message: RoundAnnouncement): DataView {
  checkU32("step", message.step);
  checkU32("proof.position", message.proof.position);
  checkU32("proof.index", message.proof.index);
  const committee = COMMITTEES.indexOf(message.proof.committee);
  if (committee < 0) throw new RangeError(`unknown committee "${message.proof.committee}"`);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  view.setUint8(0, KIND_CODES[message.kind]);
  view.setUint32(1, message.step);
  view.setUint8(5, committee);
  view.setUint32(6, message.proof.position);
  view.setUint32(10, message.proof.index);
  return view;
}

function readU53(view: DataView, offset: number, base: number, what: string): number {
  const value = view.getBigUint64(offset);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new AnnouncementDecodeError(`${what} ${value} exceeds 2^53-1`, base + offset);
  }
  return Number(value);
}

function expectLength(bytes: Uint8Array, expected: number, kind: string, base: number): void {
  if (bytes.length !== expected) {
    throw new AnnouncementDecodeError(
      `${kind} message is ${bytes.length} bytes, expected ${expected}`,
      base,
    );
  }
}

/** Reads step and committee proof of a round announcement whose length was checked. */
function readRound(bytes: Uint8Array, base: number): { step: number; proof: CommitteeProof } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const committeeCode = view.getUint8(5);
  const committee = COMMITTEES[committeeCode];
  if (committee === undefined) {
    throw new AnnouncementDecodeError(`unknown committee code ${committeeCode}`, base + 5);
  }
  return {
    step: view.getUint32(1),
    proof: { committee, position: view.getUint32(6), index: view.getUint32(10) },
  };
}

/** Decodes a message (no envelope), checking its exact length and every field. */
export function decodeMessage(bytes: Uint8Array, base = 0): Announcement {
  if (bytes.length === 0) throw new AnnouncementDecodeError("message is empty", base);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kindCode = bytes[0];
  switch (kindCode) {
    case KIND_CODES.TrainingResult: {
      expectLength(bytes, TRAINING_RESULT_BYTES, "TrainingResult", base);
      const { step, proof } = readRound(bytes, base);
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
    case KIND_CODES.Finished: {
      expectLength(bytes, FINISHED_BYTES, "Finished", base);
      const { step, proof } = readRound(bytes, base);
      const warmup = bytes[COMMON_BYTES + HASH_BYTES];
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
    case KIND_CODES.PeerAddresses:
      return decodePeerAddresses(bytes, base);
    default:
      throw new AnnouncementDecodeError(`unknown announcement kind code ${kindCode}`, base);
  }
}

function decodePeerAddresses(bytes: Uint8Array, base: number): PeerAddressesAnnouncement {
  if (bytes.length < 2) {
    throw new AnnouncementDecodeError("PeerAddresses message has no address count", base);
  }
  const count = bytes[1];
  if (count < 1 || count > MAX_PEER_ADDRESSES) {
    throw new AnnouncementDecodeError(
      `address count must be 1..${MAX_PEER_ADDRESSES}, found ${count}`,
      base + 1,
    );
  }
  const addresses: Uint8Array[] = [];
  let at = 2;
  for (let i = 0; i < count; i++) {
    if (at >= bytes.length) {
      throw new AnnouncementDecodeError(`message ends before address ${i} of ${count}`, base + at);
    }
    const length = bytes[at];
    if (length < 1 || length > MAX_ADDRESS_BYTES) {
      throw new AnnouncementDecodeError(
        `address ${i} length must be 1..${MAX_ADDRESS_BYTES}, found ${length}`,
        base + at,
      );
    }
    if (at + 1 + length > bytes.length) {
      throw new AnnouncementDecodeError(
        `address ${i} needs ${length} bytes, ${bytes.length - at - 1} remain`,
        base + at,
      );
    }
    addresses.push(copyOf(bytes, at + 1, at + 1 + length));
    at += 1 + length;
  }
  if (at !== bytes.length) {
    throw new AnnouncementDecodeError(
      `${bytes.length - at} bytes after the last address`,
      base + at,
    );
  }
  return { kind: "PeerAddresses", addresses };
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

/**
 * Whether the envelope's signature was made by `envelope.from` for this topic, under the strict
 * rules of net/ed25519_strict.ts (a small-order or non-canonical key or R is never valid).
 */
export function verifyEnvelope(envelope: AnnouncementEnvelope, topic: string): boolean {
  let signed: Uint8Array;
  try {
    signed = signingInput(topic, envelope.signedBytes);
  } catch {
    return false; // not a topic of ours
  }
  return verifySignature(envelope.signature, signed, envelope.from);
}
