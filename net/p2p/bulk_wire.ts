/**
 * The two messages of the plain-TCP bulk path: the request a fetcher writes after connecting to
 * a provider's bulk listener, and the response header that precedes the bytes. Pure codecs; the
 * listener is `bulk_listener.ts`, the fetcher `bulk_fetch.ts`, the ticket bookkeeping
 * `bulk_tickets.ts`.
 *
 * ```
 * request  = version u8 (=1) | ticket [32] | hash [32]                          (65 bytes)
 *          | version u8 (=2) | ticket [32] | hash [32] | offset u64 (> 0)       (73 bytes)
 * response = status u8 | Ok (0):      length u64 | <length bytes of content>
 *                      | OkFrom (8):  length u64 | offset u64 | <length - offset bytes>
 *                      | any other status: nothing more, the listener closes
 * ```
 *
 * The ticket and the content's length and hash came from a `BulkOffer` over the authenticated
 * `/psyche/payload/1` stream (`payload_wire.ts`); nothing the bulk connection says is trusted
 * until the bytes hash to that hash.
 *
 * Version 2 resumes a transfer: the fetcher holds the first `offset` bytes (from an earlier
 * attempt, over bulk or in-band) and asks for the rest. The listener answers `OkFrom`, naming
 * the whole length and the offset it serves from, `BadOffset` for an offset at or past the end of
 * the content, or `WrongOffset` for an offset other than the one the ticket was issued for. A
 * request for the whole content is always version 1, byte for byte as before offsets existed, so
 * a listener that knows only version 1 serves it; a version 2 request goes only to a provider
 * that offered a ticket for a rest, which only a provider that knows version 2 does.
 *
 * @module
 */
import { TICKET_BYTES } from "./payload_wire.ts";

/** Bulk request format version of a request for the whole content. */
export const BULK_REQUEST_VERSION = 1;
/** Bulk request format version of a request for the content from an offset. */
export const BULK_REQUEST_FROM_VERSION = 2;
/** Exact length of a request for the whole content (version 1), the shortest request. */
export const BULK_REQUEST_BYTES = 1 + TICKET_BYTES + 32;
/** Exact length of a request from an offset (version 2). */
export const BULK_REQUEST_FROM_BYTES = BULK_REQUEST_BYTES + 8;
/** Length of the response header when the status is Ok (status, length). */
export const BULK_OK_HEADER_BYTES = 1 + 8;
/** Length of the response header when the status is OkFrom (status, length, offset). */
export const BULK_OK_FROM_HEADER_BYTES = BULK_OK_HEADER_BYTES + 8;

/**
 * A bulk request: the ticket from the offer, the hash of the content it was issued for, and
 * where to start (default 0: the whole content; a decoded request always has it).
 */
export interface BulkRequest {
  ticket: Uint8Array;
  hash: Uint8Array;
  offset?: number;
}

/**
 * Bulk response statuses, in the order of their wire codes (0..10). Every refusal has its own
 * code so the fetcher's error says why.
 */
export const BULK_STATUSES = [
  "Ok",
  "UnknownTicket",
  "ExpiredTicket",
  "UsedTicket",
  "WrongHash",
  "NotFound",
  "Busy",
  "BadRequest",
  "OkFrom",
  "BadOffset",
  "WrongOffset",
] as const;
/** A bulk response status. */
export type BulkStatus = typeof BULK_STATUSES[number];
/** A bulk response status that refuses the request (nothing follows it). */
export type BulkRefusal = Exclude<BulkStatus, "Ok" | "OkFrom">;

/**
 * The bulk response header: `Ok` with the length of the bytes that follow, `OkFrom` with the
 * whole content's length and the offset its bytes that follow start at (`offset < length`), or
 * a refusal.
 */
export type BulkResponseHeader =
  | { status: "Ok"; length: number }
  | { status: "OkFrom"; length: number; offset: number }
  | { status: BulkRefusal };

/** Bytes that are not a valid bulk request or response header. */
export class BulkWireError extends Error {
  /** Byte offset of the problem. */
  readonly offset: number;
  /** Builds the error; the message names the offset. */
  constructor(what: string, message: string, offset: number) {
    super(`Malformed bulk ${what} at byte ${offset}: ${message}`);
    this.name = "BulkWireError";
    this.offset = offset;
  }
}

/**
 * Encodes a bulk request: version 1 for offset 0 (or none), version 2 otherwise. Throws
 * `RangeError` for a ticket or hash of the wrong length, or an offset that is not a
 * non-negative safe integer.
 */
export function encodeBulkRequest(request: BulkRequest): Uint8Array {
  if (request.ticket.length !== TICKET_BYTES) {
    throw new RangeError(
      `bulk ticket must be ${TICKET_BYTES} bytes, found ${request.ticket.length}`,
    );
  }
  if (request.hash.length !== 32) {
    throw new RangeError(`bulk request hash must be 32 bytes, found ${request.hash.length}`);
  }
  const offset = request.offset ?? 0;
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new RangeError(
      `bulk request offset must be a non-negative safe integer, found ${offset}`,
    );
  }
  const out = new Uint8Array(offset === 0 ? BULK_REQUEST_BYTES : BULK_REQUEST_FROM_BYTES);
  out[0] = offset === 0 ? BULK_REQUEST_VERSION : BULK_REQUEST_FROM_VERSION;
  out.set(request.ticket, 1);
  out.set(request.hash, 1 + TICKET_BYTES);
  if (offset > 0) new DataView(out.buffer).setBigUint64(BULK_REQUEST_BYTES, BigInt(offset));
  return out;
}

/**
 * The exact length of a request whose first byte (its version) is `version`, or `undefined`
 * for an unknown version. A listener reads the shortest request first, then the rest of this.
 */
export function bulkRequestBytes(version: number): number | undefined {
  if (version === BULK_REQUEST_VERSION) return BULK_REQUEST_BYTES;
  if (version === BULK_REQUEST_FROM_VERSION) return BULK_REQUEST_FROM_BYTES;
  return undefined;
}

/**
 * Decodes exactly one bulk request (with `offset` always set). Throws `BulkWireError` for an
 * unknown version, a length other than the version's, and a version 2 offset of 0 or past
 * 2^53-1.
 */
export function decodeBulkRequest(bytes: Uint8Array): Required<BulkRequest> {
  const expected = bytes.length >= 1 ? bulkRequestBytes(bytes[0]) : BULK_REQUEST_BYTES;
  if (expected === undefined) {
    throw new BulkWireError(
      "request",
      `version is ${bytes[0]}, expected ${BULK_REQUEST_VERSION} or ${BULK_REQUEST_FROM_VERSION}`,
      0,
    );
  }
  if (bytes.length !== expected) {
    throw new BulkWireError(
      "request",
      `length is ${bytes.length}, expected ${expected}`,
      Math.min(bytes.length, expected),
    );
  }
  let offset = 0;
  if (expected === BULK_REQUEST_FROM_BYTES) {
    const value = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      .getBigUint64(BULK_REQUEST_BYTES);
    if (value === 0n) {
      throw new BulkWireError(
        "request",
        "a request from an offset has offset 0",
        BULK_REQUEST_BYTES,
      );
    }
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new BulkWireError("request", `offset ${value} exceeds 2^53-1`, BULK_REQUEST_BYTES);
    }
    offset = Number(value);
  }
  return {
    ticket: new Uint8Array(bytes.subarray(1, 1 + TICKET_BYTES)),
    hash: new Uint8Array(bytes.subarray(1 + TICKET_BYTES, BULK_REQUEST_BYTES)),
    offset,
  };
}

/**
 * Encodes a bulk response header. Throws `RangeError` for a length or offset that is not a
 * non-negative safe integer, or an `OkFrom` offset not below its length.
 */
export function encodeBulkResponseHeader(header: BulkResponseHeader): Uint8Array {
  const code = BULK_STATUSES.indexOf(header.status);
  if (header.status !== "Ok" && header.status !== "OkFrom") return Uint8Array.of(code);
  const out = new Uint8Array(
    header.status === "Ok" ? BULK_OK_HEADER_BYTES : BULK_OK_FROM_HEADER_BYTES,
  );
  const view = new DataView(out.buffer);
  out[0] = code;
  view.setBigUint64(1, BigInt(nonNegative("length", header.length)));
  if (header.status === "OkFrom") {
    if (nonNegative("offset", header.offset) >= header.length) {
      throw new RangeError(
        `bulk response offset ${header.offset} must be below the length ${header.length}`,
      );
    }
    view.setBigUint64(BULK_OK_HEADER_BYTES, BigInt(header.offset));
  }
  return out;
}

/**
 * The length of the response header that starts with status code `code`: 1 for a refusal, or
 * `undefined` for an unknown code. A fetcher reads the status byte first, then the rest of
 * this, and not a byte more.
 */
export function bulkResponseHeaderBytes(code: number): number | undefined {
  const status = BULK_STATUSES[code];
  if (status === undefined) return undefined;
  if (status === "Ok") return BULK_OK_HEADER_BYTES;
  if (status === "OkFrom") return BULK_OK_FROM_HEADER_BYTES;
  return 1;
}

/**
 * Decodes a bulk response header from the first bytes received: `undefined` if more are
 * needed, else the header and how many bytes it took. Throws `BulkWireError`.
 */
export function decodeBulkResponseHeader(
  bytes: Uint8Array,
): { header: BulkResponseHeader; size: number } | undefined {
  if (bytes.length === 0) return undefined;
  const status = BULK_STATUSES[bytes[0]];
  const size = bulkResponseHeaderBytes(bytes[0]);
  if (status === undefined || size === undefined) {
    throw new BulkWireError("response", `unknown status code ${bytes[0]}`, 0);
  }
  if (status !== "Ok" && status !== "OkFrom") return { header: { status }, size };
  if (bytes.length < size) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getBigUint64(1);
  if (length > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new BulkWireError("response", `length ${length} exceeds 2^53-1`, 1);
  }
  if (status === "Ok") return { header: { status, length: Number(length) }, size };
  const offset = view.getBigUint64(BULK_OK_HEADER_BYTES);
  if (offset >= length) {
    throw new BulkWireError(
      "response",
      `offset ${offset} is not below the content length ${length}`,
      BULK_OK_HEADER_BYTES,
    );
  }
  return { header: { status, length: Number(length), offset: Number(offset) }, size };
}

function nonNegative(what: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `bulk response ${what} must be a non-negative safe integer, found ${value}`,
    );
  }
  return value;
}
