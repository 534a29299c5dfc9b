/**
 * `/psyche/payload/1` messages on a libp2p stream: sending bytes in chunks that respect the
 * muxer's back-pressure, and reading a request, a response header and a body of known length.
 * The body is read into one buffer allocated from the announced length and hashed as it
 * arrives (`partial_content.ts`), so a payload is copied once and never concatenated. The codecs are `payload_wire.ts`;
 * the protocol's logic is `payload_service.ts`.
 *
 * @module
 */
import type { Stream } from "@libp2p/interface";
import { PayloadAttemptError } from "./fallback.ts";
import type { PartialContent } from "./partial_content.ts";
import {
  decodeRequest,
  decodeResponseHeader,
  MAX_REQUEST_BYTES,
  type PayloadRequest,
  PayloadWireError,
  type ResponseHeader,
} from "./payload_wire.ts";
import type { StreamReader } from "./stream_reader.ts";

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
 * Reads the rest of a response's content into `into` (begun by the caller from the header; the
 * first bytes may already be in `first`), which hashes them as they arrive, so verification
 * costs no extra pass at the end. Bytes read stay in `into` if the read fails half-way (a stall,
 * a reset): the next attempt can go on from there. The first chunk that goes past the declared
 * length ends the read with an error: the caller aborts the stream, so a provider that keeps
 * sending gets at most one muxer frame (64 KiB) past it read. `received` is told the size of
 * every chunk taken off the stream, the refused one included.
 */
export async function readBody(
  reader: StreamReader,
  options: {
    into: PartialContent;
    provider: string;
    first: Uint8Array;
    received?: (bytes: number) => void;
  },
): Promise<void> {
  const { into, provider, received = () => {} } = options;
  let chunk: Uint8Array | undefined = options.first;
  while (chunk !== undefined) {
    received(chunk.length);
    into.append(provider, chunk);
    chunk = await reader.next();
  }
  if (!into.complete) {
    const { held, length } = into.progress();
    throw new PayloadAttemptError("protocol", `response ended after ${held} of ${length} bytes`);
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
