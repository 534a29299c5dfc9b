/**
 * The announcement-sync protocol's two messages: "send me what you hold for step S" and the
 * answer, the signed envelopes exactly as gossip carried them. Pure codecs; the streams live in
 * `announcement_sync.ts`.
 *
 * ```
 * request  = version u8 (=1) | step u32
 * response = version u8 (=1) | count u16 | count × (length u16 | envelope [length])
 * ```
 *
 * Integers are big-endian. The requester half-closes after its request; the provider answers
 * and closes. The envelopes carry their senders' signatures, so the requester trusts none of
 * them until it has checked each as if gossip had brought it.
 *
 * @module
 */
import { MAX_ANNOUNCEMENT_BYTES } from "./announcement.ts";

/** libp2p protocol id of announcement pulls. */
export const SYNC_PROTOCOL = "/psyche/announcements/1";
/** Format version of both messages. */
export const SYNC_VERSION = 1;
/** Length of a request, in bytes. */
export const SYNC_REQUEST_BYTES = 5;
/** Length of a response's header (version and count), in bytes. */
export const SYNC_HEADER_BYTES = 3;
/** Most envelopes one response may carry (a u16 count). */
export const MAX_SYNC_ENVELOPES = 0xffff;

/** A message that does not follow the format; the text names the byte and what is wrong. */
export class SyncWireError extends Error {
  /** Builds the error; the message names the offset. */
  constructor(what: string, message: string, offset: number) {
    super(`Malformed announcement-sync ${what} at byte ${offset}: ${message}`);
    this.name = "SyncWireError";
  }
}

/** The request for `step`'s announcements. */
export function encodeSyncRequest(step: number): Uint8Array {
  if (!Number.isInteger(step) || step < 0 || step > 0xffff_ffff) {
    throw new RangeError(`step must be a u32, found ${step}`);
  }
  const out = new Uint8Array(SYNC_REQUEST_BYTES);
  out[0] = SYNC_VERSION;
  new DataView(out.buffer).setUint32(1, step);
  return out;
}

/** The step a request asks for. Throws {@link SyncWireError}. */
export function decodeSyncRequest(bytes: Uint8Array): number {
  if (bytes.length !== SYNC_REQUEST_BYTES) {
    throw new SyncWireError(
      "request",
      `${bytes.length} bytes, expected ${SYNC_REQUEST_BYTES}`,
      Math.min(bytes.length, SYNC_REQUEST_BYTES),
    );
  }
  if (bytes[0] !== SYNC_VERSION) {
    throw new SyncWireError("request", `version ${bytes[0]}, expected ${SYNC_VERSION}`, 0);
  }
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1);
}

/** The response carrying `envelopes` (each at most `MAX_ANNOUNCEMENT_BYTES`). */
export function encodeSyncResponse(envelopes: readonly Uint8Array[]): Uint8Array {
  if (envelopes.length > MAX_SYNC_ENVELOPES) {
    throw new RangeError(`${envelopes.length} envelopes, at most ${MAX_SYNC_ENVELOPES} fit`);
  }
  let length = SYNC_HEADER_BYTES;
  for (const envelope of envelopes) {
    if (envelope.length > MAX_ANNOUNCEMENT_BYTES) {
      throw new RangeError(
        `an envelope of ${envelope.length} bytes exceeds the announcement limit`,
      );
    }
    length += 2 + envelope.length;
  }
  const out = new Uint8Array(length);
  const view = new DataView(out.buffer);
  out[0] = SYNC_VERSION;
  view.setUint16(1, envelopes.length);
  let at = SYNC_HEADER_BYTES;
  for (const envelope of envelopes) {
    view.setUint16(at, envelope.length);
    out.set(envelope, at + 2);
    at += 2 + envelope.length;
  }
  return out;
}

/**
 * How many envelopes a response header declares, refused above `maxEnvelopes` (so a reader
 * can cap the bytes it accepts before reading them). Throws {@link SyncWireError}.
 */
export function syncResponseCount(header: Uint8Array, maxEnvelopes: number): number {
  if (header.length < SYNC_HEADER_BYTES) {
    throw new SyncWireError("response", `${header.length} bytes, shorter than its header`, 0);
  }
  if (header[0] !== SYNC_VERSION) {
    throw new SyncWireError("response", `version ${header[0]}, expected ${SYNC_VERSION}`, 0);
  }
  const count = (header[1] << 8) | header[2];
  if (count > maxEnvelopes) {
    throw new SyncWireError("response", `${count} envelopes, at most ${maxEnvelopes} expected`, 1);
  }
  return count;
}

/** Most bytes a response of `count` envelopes can take. */
export function maxSyncResponseBytes(count: number): number {
  return SYNC_HEADER_BYTES + count * (2 + MAX_ANNOUNCEMENT_BYTES);
}

/**
 * The envelopes of a whole response, each length checked against the announcement limit and
 * the bytes left, with no byte to spare. Throws {@link SyncWireError}.
 */
export function decodeSyncResponse(bytes: Uint8Array, maxEnvelopes: number): Uint8Array[] {
  const count = syncResponseCount(bytes, maxEnvelopes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = [];
  let at = SYNC_HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    if (at + 2 > bytes.length) {
      throw new SyncWireError("response", `ends inside envelope ${i}'s length`, at);
    }
    const length = view.getUint16(at);
    if (length > MAX_ANNOUNCEMENT_BYTES) {
      throw new SyncWireError(
        "response",
        `envelope ${i} declares ${length} bytes, the limit is ${MAX_ANNOUNCEMENT_BYTES}`,
        at,
      );
    }
    if (at + 2 + length > bytes.length) {
      throw new SyncWireError("response", `ends inside envelope ${i}`, bytes.length);
    }
    out.push(bytes.slice(at + 2, at + 2 + length));
    at += 2 + length;
  }
  if (at !== bytes.length) {
    throw new SyncWireError("response", `${bytes.length - at} bytes after the last envelope`, at);
  }
  return out;
}
