/**
 * Base64 for account data and wire transactions (node:buffer is fast and strict enough:
 * {@linkcode decodeBase64} refuses text that does not round-trip).
 *
 * @module
 */
import { Buffer } from "node:buffer";

/** Standard base64 of `bytes`. */
export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/** The bytes of standard base64 `text`; TypeError when it is not base64. */
export function decodeBase64(text: string): Uint8Array {
  const buf = Buffer.from(text, "base64");
  if (buf.toString("base64") !== text) {
    throw new TypeError(`not canonical base64 (${text.length} characters)`);
  }
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}
