/**
 * `/psyche/payload/1` messages on a libp2p stream: sending bytes in chunks that respect the
 * muxer's back-pressure, and reading a request, a response header and a body of known length.
 * The body is read into one buffer allocated from the announced length and hashed as it
 * arrives, so a payload is copied once and never concatenated. The codecs are `payload_wire.ts`;
 * the protocol's logic is `payload_service.ts`.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { Stream } from "@libp2p/interface";
import type { ContentHash } from "./content_store.ts";
import { PayloadAttemptError } from "./fallback.ts";
import {
  decodeRequest,
  decodeResponseHeader,
  MAX_REQUEST_BYTES,
  type PayloadRequest,
  PayloadWireError,
  type ResponseHeader,
} from "./payload_wire.ts";
import type { StreamReader } from "./stream_reader.ts";

/** Received bytes hashed per `update` call: fewer, larger calls than one per network chunk. */
const HASH_BATCH_BYTES = 1024 * 1024;

/** Sends `parts` in chunks of at most `chunkBytes`, waiting for drain when the muxer asks. */
export async function sendChunked(
  stream: Stream,
  parts: readonly Uint8Array[],
  chunkBytes: number,
): Promise<void> {
  for (const part of parts) {
    for (let offset = 0; offset < part.length; offset += chunkBytes) {
      if (!stream.send(part.subarray(offset, offset + chunkBytes))) await stream.onDrain();
    }
  }
}

/** Reads one request; throws `PayloadWireError` if the bytes are not exactly one request. */
export async function readRequest(reader: StreamReader): Promise<PayloadRequest> {
  let buffer: Uint8Array = new Uint8Array(0);
  while (true) {
    const chunk = await reader.next();
    if (chunk === undefined) {
      throw new PayloadWireError(
        "request",
        "stream ended before the request was complete",
        buffer.length,
      );
    }
    buffer = concat(buffer, chunk);
    if (buffer.length > MAX_REQUEST_BYTES) {
      throw new PayloadWireError(
        "request",
        `longer than ${MAX_REQUEST_BYTES} bytes`,
        MAX_REQUEST_BYTES,
      );
    }
    const request = decodeRequest(buffer);
    if (request !== undefined) return request;
  }
}

/**
 * Reads a response header; returns it with the bytes that came after it in the same chunks.
 * Throws `PayloadAttemptError` ("protocol") for a malformed or cut-off header.
 */
export async function readHeader(
  reader: StreamReader,
): Promise<{ header: ResponseHeader; rest: Uint8Array }> {
  let buffer: Uint8Array = new Uint8Array(0);
  while (true) {
    const chunk = await reader.next();
    if (chunk === undefined) {
      throw new PayloadAttemptError(
        "protocol",
        `response ended after ${buffer.length} header bytes`,
      );
    }
    buffer = concat(buffer, chunk);
    let decoded;
    try {
      decoded = decodeResponseHeader(buffer);
    } catch (error) {
      throw new PayloadAttemptError("protocol", (error as Error).message, { cause: error });
    }
    if (decoded !== undefined) {
      return { header: decoded.header, rest: buffer.subarray(decoded.size) };
    }
  }
}

/**
 * Reads exactly `length` content bytes (the first of them already in `first`) and hashes them as
 * they arrive, so verification costs no extra pass at the end. Returns the bytes and their hash.
 * The first chunk that goes past `length` ends the read with an error: the caller aborts the
 * stream, so a provider that keeps sending gets at most one muxer frame (64 KiB) past it read.
 * `received` is told the size of every chunk taken off the stream, the refused one included.
 */
export async function readBody(
  reader: StreamReader,
  length: number,
  first: Uint8Array,
  received: (bytes: number) => void = () => {},
): Promise<{ bytes: Uint8Array; hash: ContentHash }> {
  const out = new Uint8Array(length);
  const hasher = createHash("sha256");
  let filled = 0;
  let hashed = 0;
  let chunk: Uint8Array | undefined = first;
  while (chunk !== undefined) {
    received(chunk.length);
    if (filled + chunk.length > length) {
      throw new PayloadAttemptError(
        "protocol",
        `provider sent more than the ${length} bytes it declared`,
      );
    }
    out.set(chunk, filled);
    filled += chunk.length;
    if (filled - hashed >= HASH_BATCH_BYTES) {
      hasher.update(out.subarray(hashed, filled));
      hashed = filled;
    }
    chunk = await reader.next();
  }
  if (filled < length) {
    throw new PayloadAttemptError("protocol", `response ended after ${filled} of ${length} bytes`);
  }
  hasher.update(out.subarray(hashed, filled));
  return { bytes: out, hash: hasher.digest("hex") };
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
