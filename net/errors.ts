/**
 * Error classes for the TCP layer. Callers catch these by class to tell a peer
 * that broke the protocol from a network failure or a bad local argument.
 *
 * @module
 */

/** A frame could not be read: oversize length prefix, or the stream ended mid-frame. */
export class FrameError extends Error {
  /** Always `"FrameError"`. */
  override name = "FrameError";
}

/** A frame was read but its bytes are not a valid message (unknown tag, bad length, bad field). */
export class ProtocolError extends Error {
  /** Always `"ProtocolError"`. */
  override name = "ProtocolError";
}

/** The ed25519 challenge-response handshake failed (bad signature, wrong context, rejected). */
export class HandshakeError extends Error {
  /** Always `"HandshakeError"`. */
  override name = "HandshakeError";
}
