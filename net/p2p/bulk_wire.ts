/**
 * The two messages of the plain-TCP bulk path: the request a fetcher writes after connecting to
 * a provider's bulk listener, and the response header that precedes the bytes. Pure codecs; the
 * listener is `bulk_listener.ts`, the fetcher `bulk_fetch.ts`, the ticket bookkeeping
 * `bulk_tickets.ts`.
 *
 * ```
 * request  = version u8 (=1) | ticket [32] | hash [32]                          (65 bytes)
 * response = status u8 | Ok (0): length u64 | <length bytes of content>
 *                      | any other status: nothing more, the listener closes
 * ```
 *
 * The ticket and the content's length and hash came from a `BulkOffer` over the authenticated
 * `/psyche/payload/1` stream (`payload_wire.ts`); nothing the bulk connection says is trusted
 * until the bytes hash to that hash.
 *
 * @module
 */
import { TICKET_BYTES } from "./payload_wire.ts";

/** Bulk request format version. */
export const BULK_REQUEST_VERSION = 1;
/** Exact length of a bulk request. */
export const BULK_REQUEST_BYTES = 1 + TICKET_BYTES + 32;
/** Length of the response header when the status is Ok (status, length). */
export const BULK_OK_HEADER_BYTES = 1 + 8;

/** A bulk request: the ticket from the offer and the hash of the content it was issued for. */
export interface BulkRequest {
  ticket: Uint8Array;
  hash: Uint8Array;
}

/**
 * Bulk response statuses, in the order of their wire codes (0..7). Every refusal has its own
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
] as const;
/** A bulk response status. */
export type BulkStatus = typeof BULK_STATUSES[number];

/** The bulk response header: `Ok` with the length of the bytes that follow, or a refusal. */
export type BulkResponseHeader =
  | { status: "Ok"; length: number }
  | { status: Exclude<BulkStatus, "Ok"> };

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

/** Encodes a bulk request. Throws `RangeError` for a ticket or hash of the wrong length. */
export function encodeBulkRequest(request: BulkRequest): Uint8Array {
  if (request.ticket.length !== TICKET_BYTES) {
    throw new RangeError(
      `bulk ticket must be ${TICKET_BYTES} bytes, found ${request.ticket.length}`,
    );
  }
  if (request.hash.length !== 32) {
    throw new RangeError(`bulk request hash must be 32 bytes, found ${request.hash.length}`);
  }
  const out = new Uint8Array(BULK_REQUEST_BYTES);
  out[0] = BULK_REQUEST_VERSION;
  out.set(request.ticket, 1);
  out.set(request.hash, 1 + TICKET_BYTES);
  return out;
}

/** Decodes exactly one bulk request. Throws `BulkWireError` for a wrong version or length. */
export function decodeBulkRequest(bytes: Uint8Array): BulkRequest {
  if (bytes.length >= 1 && bytes[0] !== BULK_REQUEST_VERSION) {
    throw new BulkWireError(
      "request",
      `version is ${bytes[0]}, expected ${BULK_REQUEST_VERSION}`,
      0,
    );
  }
  if (bytes.length !== BULK_REQUEST_BYTES) {
    throw new BulkWireError(
      "request",
      `length is ${bytes.length}, expected ${BULK_REQUEST_BYTES}`,
      Math.min(bytes.length, BULK_REQUEST_BYTES),
    );
  }
  return {
    ticket: new Uint8Array(bytes.subarray(1, 1 + TICKET_BYTES)),
    hash: new Uint8Array(bytes.subarray(1 + TICKET_BYTES)),
  };
}

/** Encodes a bulk response header. Throws `RangeError` for a length that is not a safe integer. */
export function encodeBulkResponseHeader(header: BulkResponseHeader): Uint8Array {
  const code = BULK_STATUSES.indexOf(header.status);
  if (header.status !== "Ok") return Uint8Array.of(code);
  if (!Number.isSafeInteger(header.length) || header.length < 0) {
    throw new RangeError(
      `bulk response length must be a non-negative safe integer, found ${header.length}`,
    );
  }
  const out = new Uint8Array(BULK_OK_HEADER_BYTES);
  new DataView(out.buffer).setBigUint64(1, BigInt(header.length));
  return out;
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
  if (status === undefined) {
    throw new BulkWireError("response", `unknown status code ${bytes[0]}`, 0);
  }
  if (status !== "Ok") return { header: { status }, size: 1 };
  if (bytes.length < BULK_OK_HEADER_BYTES) return undefined;
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(1);
  if (length > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new BulkWireError("response", `length ${length} exceeds 2^53-1`, 1);
  }
  return { header: { status, length: Number(length) }, size: BULK_OK_HEADER_BYTES };
}
