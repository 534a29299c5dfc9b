/**
 * The payload protocol's two messages: a request for content (by sha256 hash or by name) and the
 * header of the response that precedes the bytes. Pure codecs; the stream handling lives in
 * `payload_service.ts`.
 *
 * ```
 * request  = version u8 (=1) | kind u8 | by-hash: hash [32]
 *                                      | by-name: length u16 | UTF-8 name
 * response = status u8 | (status Ok:) hash [32] | length u64 | <length bytes of content>
 * ```
 *
 * Integers are big-endian. The requester half-closes after its request; the provider answers
 * and closes.
 *
 * @module
 */

/** libp2p protocol id of payload transfers. */
export const PAYLOAD_PROTOCOL = "/psyche/payload/1";
/** Request format version. */
export const PAYLOAD_REQUEST_VERSION = 1;
/** Longest name of a named blob, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 256;
/** Longest possible request, in bytes. */
export const MAX_REQUEST_BYTES = 4 + MAX_NAME_BYTES;
/** Length of the response header when the status is Ok (status, hash, length). */
export const OK_HEADER_BYTES = 1 + 32 + 8;

/** What a requester asks for. */
export type PayloadRequest =
  | { kind: "ByHash"; hash: Uint8Array }
  | { kind: "ByName"; name: string };

/** Response statuses, in the order of their wire codes (0..2). */
export const RESPONSE_STATUSES = ["Ok", "NotFound", "BadRequest"] as const;
/** A response status. */
export type ResponseStatus = typeof RESPONSE_STATUSES[number];

/** The response header: status, and for `Ok` the content hash and exact length. */
export type ResponseHeader =
  | { status: "Ok"; hash: Uint8Array; length: number }
  | { status: "NotFound" | "BadRequest" };

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

/** Encodes a request. Throws `RangeError` for a hash that is not 32 bytes or a name too long. */
export function encodeRequest(request: PayloadRequest): Uint8Array {
  switch (request.kind) {
    case "ByHash": {
      if (request.hash.length !== 32) {
        throw new RangeError(`request hash must be 32 bytes, found ${request.hash.length}`);
      }
      const out = new Uint8Array(2 + 32);
      out[0] = PAYLOAD_REQUEST_VERSION;
      out[1] = KINDS.ByHash;
      out.set(request.hash, 2);
      return out;
    }
    case "ByName": {
      const name = new TextEncoder().encode(request.name);
      if (name.length === 0 || name.length > MAX_NAME_BYTES) {
        throw new RangeError(
          `blob name must be 1..${MAX_NAME_BYTES} UTF-8 bytes, found ${name.length}`,
        );
      }
      const out = new Uint8Array(4 + name.length);
      out[0] = PAYLOAD_REQUEST_VERSION;
      out[1] = KINDS.ByName;
      new DataView(out.buffer).setUint16(2, name.length);
      out.set(name, 4);
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
 * the request once complete. Throws `PayloadWireError` for anything malformed, including bytes
 * after the end of the request.
 */
export function decodeRequest(bytes: Uint8Array): PayloadRequest | undefined {
  if (bytes.length >= 1 && bytes[0] !== PAYLOAD_REQUEST_VERSION) {
    throw new PayloadWireError(
      "request",
      `version is ${bytes[0]}, expected ${PAYLOAD_REQUEST_VERSION}`,
      0,
    );
  }
  if (bytes.length < 2) return undefined;
  const kind = bytes[1];
  let end: number;
  let request: PayloadRequest | undefined;
  if (kind === KINDS.ByHash) {
    end = 34;
    if (bytes.length >= end) {
      request = { kind: "ByHash", hash: new Uint8Array(bytes.subarray(2, end)) };
    }
  } else if (kind === KINDS.ByName) {
    if (bytes.length < 4) return undefined;
    const length = (bytes[2] << 8) | bytes[3];
    if (length === 0 || length > MAX_NAME_BYTES) {
      throw new PayloadWireError(
        "request",
        `name length must be 1..${MAX_NAME_BYTES}, found ${length}`,
        2,
      );
    }
    end = 4 + length;
    if (bytes.length >= end) {
      let name: string;
      try {
        name = new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(4, end));
      } catch {
        throw new PayloadWireError("request", "name is not valid UTF-8", 4);
      }
      request = { kind: "ByName", name };
    }
  } else {
    throw new PayloadWireError("request", `unknown request kind ${kind}`, 1);
  }
  if (request !== undefined && bytes.length > end) {
    throw new PayloadWireError("request", `${bytes.length - end} bytes after the request`, end);
  }
  return request;
}

/** Encodes a response header. */
export function encodeResponseHeader(header: ResponseHeader): Uint8Array {
  if (header.status !== "Ok") return Uint8Array.of(RESPONSE_STATUSES.indexOf(header.status));
  if (header.hash.length !== 32) {
    throw new RangeError(`response hash must be 32 bytes, found ${header.hash.length}`);
  }
  if (!Number.isSafeInteger(header.length) || header.length < 0) {
    throw new RangeError(
      `response length must be a non-negative safe integer, found ${header.length}`,
    );
  }
  const out = new Uint8Array(OK_HEADER_BYTES);
  out[0] = 0;
  out.set(header.hash, 1);
  new DataView(out.buffer).setBigUint64(33, BigInt(header.length));
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
  if (status !== "Ok") return { header: { status }, size: 1 };
  if (bytes.length < OK_HEADER_BYTES) return undefined;
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(33);
  if (length > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new PayloadWireError("response", `length ${length} exceeds 2^53-1`, 33);
  }
  return {
    header: { status, hash: new Uint8Array(bytes.subarray(1, 33)), length: Number(length) },
    size: OK_HEADER_BYTES,
  };
}
