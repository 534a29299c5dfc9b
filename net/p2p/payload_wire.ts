/**
 * The payload protocol's two messages: a request for content (by sha256 hash or by name) and the
 * header of the response that precedes the bytes. Pure codecs; the stream handling lives in
 * `payload_service.ts`.
 *
 * ```
 * request  = version u8 (=2) | flags u8 | kind u8 | by-hash: hash [32]
 *                                                | by-name: length u16 | UTF-8 name
 *                                                | [offset u64, when flag bit 1 is set]
 *   flags: bit 0 = the requester accepts a bulk offer
 *          bit 1 = the requester holds the first `offset` bytes: send the rest
 *          other bits must be 0; with bit 1, offset > 0
 * response = status u8 | Ok (0):        hash [32] | length u64 | <length bytes of content>
 *                      | NotFound (1), BadRequest (2), BadOffset (5): nothing more
 *                      | BulkOffer (3): hash [32] | length u64 | ticket [32] | port u16
 *                      | OkFrom (4):    hash [32] | length u64 | offset u64
 *                                       | <length - offset bytes: the content from offset>
 * ```
 *
 * Integers are big-endian. The requester half-closes after its request; the provider answers
 * and closes. A `BulkOffer` says "fetch these `length` bytes from my plain TCP bulk listener
 * on `port`, at the address you reached me at, presenting `ticket`" (see `bulk_wire.ts`); the
 * provider only sends one to a request that set the bulk flag.
 *
 * A request with an offset resumes a download another attempt left unfinished. The provider
 * answers `OkFrom`, naming the whole content's hash and length and the offset it serves from, so
 * the requester checks them against what it already holds before accepting a byte; an offset
 * at or past the end of its content is answered `BadOffset`. With bit 0 too, the rest may come
 * as a `BulkOffer` instead: hash and length are the whole content's, and the ticket is for the
 * rest from the requested offset (the bulk request then carries that offset, `bulk_wire.ts`).
 *
 * Compatibility: a provider from before offsets (or before bulk offers for a rest) refuses the
 * flag it does not know, or the two together, as `BadRequest`; the requester then asks it for
 * the whole content. Requests for the whole content are byte for byte what they always were.
 *
 * @module
 */

/** libp2p protocol id of payload transfers. */
export const PAYLOAD_PROTOCOL = "/psyche/payload/1";
/** Request format version (2 added the flags byte). */
export const PAYLOAD_REQUEST_VERSION = 2;
/** Request flag: the requester accepts a `BulkOffer` instead of the bytes in-band. */
export const FLAG_ACCEPT_BULK = 1;
/** Request flag: an offset follows; the requester wants the content from there (`OkFrom`). */
export const FLAG_FROM_OFFSET = 2;
/** Longest name of a named blob, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 256;
/** Longest possible request, in bytes. */
export const MAX_REQUEST_BYTES = 5 + MAX_NAME_BYTES + 8;
/** Length of the response header when the status is Ok (status, hash, length). */
export const OK_HEADER_BYTES = 1 + 32 + 8;
/** Length of the response header when the status is OkFrom (status, hash, length, offset). */
export const OK_FROM_HEADER_BYTES = OK_HEADER_BYTES + 8;
/** Length of a bulk ticket, in bytes (random, so 256 bits cannot be guessed). */
export const TICKET_BYTES = 32;
/** Length of a `BulkOffer` response (status, hash, length, ticket, port). */
export const OFFER_BYTES = OK_HEADER_BYTES + TICKET_BYTES + 2;

/**
 * What a requester asks for. `acceptBulk` (default false) allows the provider to answer with a
 * `BulkOffer` instead of the bytes. `offset` (default 0) asks for the content from that byte on:
 * the requester already holds the bytes before it (with `acceptBulk`, an offer is for that rest).
 */
export type PayloadRequest =
  & ({ kind: "ByHash"; hash: Uint8Array } | { kind: "ByName"; name: string })
  & { acceptBulk?: boolean; offset?: number };

/** Response statuses, in the order of their wire codes (0..5). */
export const RESPONSE_STATUSES = [
  "Ok",
  "NotFound",
  "BadRequest",
  "BulkOffer",
  "OkFrom",
  "BadOffset",
] as const;
/** A response status. */
export type ResponseStatus = typeof RESPONSE_STATUSES[number];

/**
 * The response header: status; for `Ok` the content hash and exact length of the bytes that
 * follow; for `BulkOffer` the same two plus the ticket and port of the provider's bulk listener;
 * for `OkFrom` the whole content's hash and length and the offset the bytes that follow start
 * at (`length - offset` of them; `offset < length`).
 */
export type ResponseHeader =
  | { status: "Ok"; hash: Uint8Array; length: number }
  | { status: "OkFrom"; hash: Uint8Array; length: number; offset: number }
  | { status: "BulkOffer"; hash: Uint8Array; length: number; ticket: Uint8Array; port: number }
  | { status: "NotFound" | "BadRequest" | "BadOffset" };

/** Bytes that are not a valid request or response header. */
export class PayloadWireError extends Error {
  /** Byte offset of the problem. */
  readonly offset: number;
  /** Builds the error; the message names the offset. */
  constructor(what: string, message: string, offset: number) {
    super(`Malformed payload ${what} at byte ${offset}: ${message}`);
    this.name = "PayloadWireError";
    this.offset = offset;
  }
}

const KINDS = { ByHash: 0, ByName: 1 } as const;

/** Header length of each response status that carries content or an offer. */
const HEADER_BYTES = {
  Ok: OK_HEADER_BYTES,
  OkFrom: OK_FROM_HEADER_BYTES,
  BulkOffer: OFFER_BYTES,
} as const;

/**
 * Encodes a request. Throws `RangeError` for a hash that is not 32 bytes, a name too long, or an
 * offset that is not a non-negative safe integer. Offset 0 is encoded as no offset.
 */
export function encodeRequest(request: PayloadRequest): Uint8Array {
  const offset = request.offset ?? 0;
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new RangeError(`request offset must be a non-negative safe integer, found ${offset}`);
  }
  const flags = (request.acceptBulk === true ? FLAG_ACCEPT_BULK : 0) |
    (offset > 0 ? FLAG_FROM_OFFSET : 0);
  const body = encodeRequestBody(request, flags);
  if (offset === 0) return body;
  const out = new Uint8Array(body.length + 8);
  out.set(body);
  new DataView(out.buffer).setBigUint64(body.length, BigInt(offset));
  return out;
}

/** The request up to its optional offset: version, flags, kind and what it names. */
function encodeRequestBody(request: PayloadRequest, flags: number): Uint8Array {
  switch (request.kind) {
    case "ByHash": {
      if (request.hash.length !== 32) {
        throw new RangeError(`request hash must be 32 bytes, found ${request.hash.length}`);
      }
      const out = new Uint8Array(3 + 32);
      out.set([PAYLOAD_REQUEST_VERSION, flags, KINDS.ByHash]);
      out.set(request.hash, 3);
      return out;
    }
    case "ByName": {
      const name = new TextEncoder().encode(request.name);
      if (name.length === 0 || name.length > MAX_NAME_BYTES) {
        throw new RangeError(
          `blob name must be 1..${MAX_NAME_BYTES} UTF-8 bytes, found ${name.length}`,
        );
      }
      const out = new Uint8Array(5 + name.length);
      out.set([PAYLOAD_REQUEST_VERSION, flags, KINDS.ByName, name.length >> 8, name.length & 0xff]);
      out.set(name, 5);
      return out;
    }
    default: {
      const never: never = request;
      throw new RangeError(
        `unknown request kind ${JSON.stringify((never as PayloadRequest).kind)}`,
      );
    }
  }
}

/**
 * Decodes a request from the bytes received so far: `undefined` if more bytes are needed,
 * the request once complete (with `acceptBulk` and `offset` always set). Throws
 * `PayloadWireError` for anything malformed, including unknown flags, an offset of 0 or past
 * 2^53-1, and bytes after the end of the request.
 */
export function decodeRequest(bytes: Uint8Array): PayloadRequest | undefined {
  if (bytes.length >= 1 && bytes[0] !== PAYLOAD_REQUEST_VERSION) {
    throw new PayloadWireError(
      "request",
      `version is ${bytes[0]}, expected ${PAYLOAD_REQUEST_VERSION}`,
      0,
    );
  }
  if (bytes.length >= 2 && (bytes[1] & ~(FLAG_ACCEPT_BULK | FLAG_FROM_OFFSET)) !== 0) {
    throw new PayloadWireError("request", `unknown flags ${bytes[1]}`, 1);
  }
  if (bytes.length < 3) return undefined;
  const acceptBulk = (bytes[1] & FLAG_ACCEPT_BULK) !== 0;
  const fromOffset = (bytes[1] & FLAG_FROM_OFFSET) !== 0;
  const kind = bytes[2];
  let end: number;
  let request: PayloadRequest | undefined;
  if (kind === KINDS.ByHash) {
    end = 3 + 32;
    if (bytes.length >= end) {
      request = { kind: "ByHash", hash: new Uint8Array(bytes.subarray(3, end)), acceptBulk };
    }
  } else if (kind === KINDS.ByName) {
    if (bytes.length < 5) return undefined;
    const length = (bytes[3] << 8) | bytes[4];
    if (length === 0 || length > MAX_NAME_BYTES) {
      throw new PayloadWireError(
        "request",
        `name length must be 1..${MAX_NAME_BYTES}, found ${length}`,
        3,
      );
    }
    end = 5 + length;
    if (bytes.length >= end) {
      let name: string;
      try {
        name = new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(5, end));
      } catch {
        throw new PayloadWireError("request", "name is not valid UTF-8", 5);
      }
      request = { kind: "ByName", name, acceptBulk };
    }
  } else {
    throw new PayloadWireError("request", `unknown request kind ${kind}`, 2);
  }
  if (request !== undefined) {
    const offset = fromOffset ? decodeOffset(bytes, end) : 0;
    if (offset === undefined) return undefined;
    request.offset = offset;
    if (fromOffset) end += 8;
  }
  if (request !== undefined && bytes.length > end) {
    throw new PayloadWireError("request", `${bytes.length - end} bytes after the request`, end);
  }
  return request;
}

/** A request's offset at `at`: `undefined` until its 8 bytes are there. */
function decodeOffset(bytes: Uint8Array, at: number): number | undefined {
  if (bytes.length < at + 8) return undefined;
  const offset = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(at);
  if (offset === 0n) {
    throw new PayloadWireError("request", "offset flag set with offset 0", at);
  }
  if (offset > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new PayloadWireError("request", `offset ${offset} exceeds 2^53-1`, at);
  }
  return Number(offset);
}

/** Encodes a response header. Throws `RangeError` for a field out of range. */
export function encodeResponseHeader(header: ResponseHeader): Uint8Array {
  const code = RESPONSE_STATUSES.indexOf(header.status);
  if (header.status !== "Ok" && header.status !== "BulkOffer" && header.status !== "OkFrom") {
    return Uint8Array.of(code);
  }
  if (header.hash.length !== 32) {
    throw new RangeError(`response hash must be 32 bytes, found ${header.hash.length}`);
  }
  if (!Number.isSafeInteger(header.length) || header.length < 0) {
    throw new RangeError(
      `response length must be a non-negative safe integer, found ${header.length}`,
    );
  }
  const out = new Uint8Array(HEADER_BYTES[header.status]);
  const view = new DataView(out.buffer);
  out[0] = code;
  out.set(header.hash, 1);
  view.setBigUint64(33, BigInt(header.length));
  if (header.status === "OkFrom") {
    if (!Number.isSafeInteger(header.offset) || header.offset < 0) {
      throw new RangeError(
        `response offset must be a non-negative safe integer, found ${header.offset}`,
      );
    }
    if (header.offset >= header.length) {
      throw new RangeError(
        `response offset ${header.offset} must be below the length ${header.length}`,
      );
    }
    view.setBigUint64(OK_HEADER_BYTES, BigInt(header.offset));
  }
  if (header.status === "BulkOffer") {
    if (header.ticket.length !== TICKET_BYTES) {
      throw new RangeError(
        `bulk ticket must be ${TICKET_BYTES} bytes, found ${header.ticket.length}`,
      );
    }
    if (!Number.isInteger(header.port) || header.port < 1 || header.port > 65_535) {
      throw new RangeError(`bulk port must be an integer in 1..65535, found ${header.port}`);
    }
    out.set(header.ticket, OK_HEADER_BYTES);
    view.setUint16(OK_HEADER_BYTES + TICKET_BYTES, header.port);
  }
  return out;
}

/**
 * Decodes a response header from the first bytes received: `undefined` if more are needed,
 * else the header and how many bytes it took. Throws `PayloadWireError`.
 */
export function decodeResponseHeader(
  bytes: Uint8Array,
): { header: ResponseHeader; size: number } | undefined {
  if (bytes.length === 0) return undefined;
  const code = bytes[0];
  const status = RESPONSE_STATUSES[code];
  if (status === undefined) {
    throw new PayloadWireError("response", `unknown status code ${code}`, 0);
  }
  if (status === "NotFound" || status === "BadRequest" || status === "BadOffset") {
    return { header: { status }, size: 1 };
  }
  const size = HEADER_BYTES[status];
  if (bytes.length < size) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getBigUint64(33);
  if (length > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new PayloadWireError("response", `length ${length} exceeds 2^53-1`, 33);
  }
  const hash = new Uint8Array(bytes.subarray(1, 33));
  if (status === "Ok") return { header: { status, hash, length: Number(length) }, size };
  if (status === "OkFrom") {
    const offset = view.getBigUint64(OK_HEADER_BYTES);
    if (offset >= length) {
      throw new PayloadWireError(
        "response",
        `offset ${offset} is not below the content length ${length}`,
        OK_HEADER_BYTES,
      );
    }
    return { header: { status, hash, length: Number(length), offset: Number(offset) }, size };
  }
  const port = view.getUint16(OK_HEADER_BYTES + TICKET_BYTES);
  if (port === 0) {
    throw new PayloadWireError("response", "bulk offer port is 0", OK_HEADER_BYTES + TICKET_BYTES);
  }
  const ticket = new Uint8Array(bytes.subarray(OK_HEADER_BYTES, OK_HEADER_BYTES + TICKET_BYTES));
  return { header: { status, hash, length: Number(length), ticket, port }, size };
}
