/**
 * The data server's wire messages (after the net/ handshake), each a closed union
 * decoded at one entry point that checks every length. Header integers are
 * big-endian; token payloads are little-endian u32, `[count, seqLen]` row-major.
 *
 * @module
 */
import {
  DEFAULT_CLIENT_MAX_FRAME_BYTES,
  MessageReader,
  MessageWriter,
  ProtocolError,
} from "../net/mod.ts";
import type { BatchId } from "../common/mod.ts";

/** Handshake context string of the data server (a signature for it is useless elsewhere). */
export const DATA_SERVER_CONTEXT = "psyche-ts data server v1";
/** Largest request frame the server reads (requests are a few bytes). */
export const MAX_REQUEST_FRAME_BYTES = 1024;
/** Largest response frame: the client's frame limit. */
export const MAX_RESPONSE_FRAME_BYTES = DEFAULT_CLIENT_MAX_FRAME_BYTES;
/** Longest detail or failure text, in UTF-8 bytes. */
export const MAX_TEXT_BYTES = 4096;
/** Bytes of a `Samples` message before its tokens: tag, start, end, seqLen. */
export const SAMPLES_HEADER_BYTES = 1 + 8 + 8 + 4;

/**
 * Why the server refused a request. The first two are Psyche's `RejectionReason`; `TooLarge`
 * is a batch over the frame limit or the server's largest batch; `RateLimited` a client past
 * its sequences per second.
 */
export const REJECT_REASONS = [
  "NotInThisRound",
  "WrongDataIdForStep",
  "OutOfRange",
  "TooLarge",
  "RateLimited",
] as const;
/** One of {@linkcode REJECT_REASONS}. */
export type RejectReason = typeof REJECT_REASONS[number];

/** Client → server. */
export type DataClientMessage =
  | { kind: "GetInfo" }
  | { kind: "RequestSamples"; batch: BatchId };

/**
 * Server → client. `Closing` is the one message sent unasked: the server is about to close the
 * connection (idle too long), and says why.
 */
export type DataServerMessage =
  | { kind: "Info"; seqLen: number; numSequences: number }
  | { kind: "Samples"; batch: BatchId; seqLen: number; tokens: Uint32Array }
  | { kind: "Rejected"; batch: BatchId; reason: RejectReason; detail: string }
  | { kind: "Failed"; batch: BatchId; message: string }
  | { kind: "Closing"; reason: string };

const CLIENT_TAGS = ["GetInfo", "RequestSamples"] as const;
const SERVER_TAGS = ["Info", "Samples", "Rejected", "Failed", "Closing"] as const;
const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Encodes a client message. */
export function encodeDataClientMessage(msg: DataClientMessage): Uint8Array {
  const w = new MessageWriter().u8(CLIENT_TAGS.indexOf(msg.kind));
  if (msg.kind === "RequestSamples") w.u64(msg.batch.start).u64(msg.batch.end);
  return w.finish();
}

/** Decodes a client message; throws {@linkcode ProtocolError} on any malformed byte. */
export function decodeDataClientMessage(bytes: Uint8Array): DataClientMessage {
  const r = new MessageReader(bytes, "data request");
  const tag = r.u8("tag");
  const kind = CLIENT_TAGS[tag];
  if (kind === undefined) throw new ProtocolError(`data request: unknown tag ${tag}`);
  const m = r.rename(kind);
  const msg: DataClientMessage = kind === "GetInfo" ? { kind } : { kind, batch: readBatch(m) };
  m.end();
  return msg;
}

/** Encodes a server message. */
export function encodeDataServerMessage(msg: DataServerMessage): Uint8Array {
  const tag = SERVER_TAGS.indexOf(msg.kind);
  switch (msg.kind) {
    case "Info":
      return new MessageWriter().u8(tag).u32(msg.seqLen).u64(msg.numSequences).finish();
    case "Samples": {
      const count = msg.batch.end - msg.batch.start + 1;
      if (msg.tokens.length !== count * msg.seqLen) {
        throw new RangeError(
          `Samples for ${count} sequences of ${msg.seqLen} need ${count * msg.seqLen} tokens, ` +
            `found ${msg.tokens.length}`,
        );
      }
      const out = new Uint8Array(SAMPLES_HEADER_BYTES + 4 * msg.tokens.length);
      const view = new DataView(out.buffer);
      view.setUint8(0, tag);
      view.setBigUint64(1, BigInt(msg.batch.start), false);
      view.setBigUint64(9, BigInt(msg.batch.end), false);
      view.setUint32(17, msg.seqLen, false);
      if (LITTLE_ENDIAN_HOST) {
        out.set(
          new Uint8Array(msg.tokens.buffer, msg.tokens.byteOffset, msg.tokens.byteLength),
          SAMPLES_HEADER_BYTES,
        );
      } else {
        msg.tokens.forEach((t, i) => view.setUint32(SAMPLES_HEADER_BYTES + 4 * i, t, true));
      }
      return out;
    }
    case "Rejected":
      return new MessageWriter().u8(tag).u64(msg.batch.start).u64(msg.batch.end)
        .u8(REJECT_REASONS.indexOf(msg.reason)).string(msg.detail).finish();
    case "Failed":
      return new MessageWriter().u8(tag).u64(msg.batch.start).u64(msg.batch.end)
        .string(msg.message).finish();
    case "Closing":
      return new MessageWriter().u8(tag).string(msg.reason).finish();
    default: {
      const never: never = msg;
      throw new TypeError(`Unknown data server message ${JSON.stringify(never)}`);
    }
  }
}

/** Decodes a server message; throws {@linkcode ProtocolError} on any malformed byte. */
export function decodeDataServerMessage(bytes: Uint8Array): DataServerMessage {
  const r = new MessageReader(bytes, "data response");
  const tag = r.u8("tag");
  const kind = SERVER_TAGS[tag];
  if (kind === undefined) throw new ProtocolError(`data response: unknown tag ${tag}`);
  const m = r.rename(kind);
  let msg: DataServerMessage;
  switch (kind) {
    case "Info": {
      const seqLen = m.u32("seqLen");
      msg = { kind, seqLen, numSequences: m.u64("numSequences") };
      break;
    }
    case "Samples": {
      const batch = readBatch(m);
      const seqLen = m.u32("seqLen");
      const count = batch.end - batch.start + 1;
      const expected = count * seqLen * 4;
      if (m.remaining !== expected) {
        throw new ProtocolError(
          `Samples: ${count} sequences of ${seqLen} tokens need ${expected} token bytes, ` +
            `found ${m.remaining}`,
        );
      }
      const raw = m.bytes(expected, "tokens");
      const tokens = new Uint32Array(count * seqLen);
      if (LITTLE_ENDIAN_HOST) new Uint8Array(tokens.buffer).set(raw);
      else {
        const view = new DataView(raw.buffer);
        for (let i = 0; i < tokens.length; i++) tokens[i] = view.getUint32(4 * i, true);
      }
      msg = { kind, batch, seqLen, tokens };
      break;
    }
    case "Rejected": {
      const batch = readBatch(m);
      const code = m.u8("reason");
      const reason = REJECT_REASONS[code];
      if (reason === undefined) throw new ProtocolError(`Rejected: unknown reason code ${code}`);
      msg = { kind, batch, reason, detail: m.string("detail", MAX_TEXT_BYTES) };
      break;
    }
    case "Failed": {
      const batch = readBatch(m);
      msg = { kind, batch, message: m.string("message", MAX_TEXT_BYTES) };
      break;
    }
    case "Closing":
      msg = { kind, reason: m.string("reason", MAX_TEXT_BYTES) };
      break;
  }
  m.end();
  return msg;
}

function readBatch(m: MessageReader): BatchId {
  const start = m.u64("start");
  const end = m.u64("end");
  if (end < start) throw new ProtocolError(`batch ${start}..${end}: end is before start`);
  return { start, end };
}

/** Bytes of the `Samples` frame for a batch of `count` sequences of `seqLen` tokens. */
export function samplesFrameBytes(count: number, seqLen: number): number {
  return SAMPLES_HEADER_BYTES + 4 * count * seqLen;
}
