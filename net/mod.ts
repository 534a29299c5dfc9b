/**
 * The TCP layer shared by the data server and the coordinator's TCP backend:
 * length-prefixed frames, byte codecs for closed message unions, the ed25519
 * challenge-response handshake, the one strict ed25519 signature check every verifier calls,
 * identity key files, the connection table (caps, rates and eviction) both servers keep, and
 * fetch bodies read under a signal the read itself obeys.
 *
 * @module
 */
export { abortableSleep, withAbort } from "./abort.ts";
export { BodyTooLargeError, obeyingSignal, readBody, type ReadHooks } from "./fetch_body.ts";
export {
  addressKey,
  type Admission,
  type ConnectionEntry,
  type ConnectionLimits,
  ConnectionTable,
} from "./connection_table.ts";
export { TokenBucket, type TokenBucketOptions } from "./token_bucket.ts";
export { MessageReader, MessageWriter } from "./codec.ts";
export {
  ED25519_PUBLIC_KEY_BYTES,
  ED25519_SIGNATURE_BYTES,
  isAcceptablePublicKey,
  isSmallOrderEncoding,
  pointProblem,
  verifySignature,
} from "./ed25519_strict.ts";
export { FrameError, HandshakeError, ProtocolError } from "./errors.ts";
export {
  type ByteReader,
  type ByteWriter,
  DEFAULT_CLIENT_MAX_FRAME_BYTES,
  DEFAULT_SERVER_MAX_FRAME_BYTES,
  encodeFrame,
  FRAME_HEADER_BYTES,
  type FrameLimit,
  FrameReader,
  type FrameReaderOptions,
  type NextFrameOptions,
  writeAll,
  writeFrame,
} from "./frame.ts";
export {
  answerChallenge,
  clientHandshake,
  decodeHandshakeMessage,
  encodeHandshakeMessage,
  HANDSHAKE_DOMAIN,
  type HandshakeMessage,
  type HandshakeOptions,
  handshakeSigningBytes,
  MAX_CONTEXT_BYTES,
  NONCE_BYTES,
  PUBLIC_KEY_BYTES,
  serverHandshake,
  SIGNATURE_BYTES,
  verifyChallengeAnswer,
} from "./handshake.ts";
export {
  generateIdentity,
  type Identity,
  IdentityError,
  identityFromHex,
  identityFromSecretKey,
  loadIdentity,
  publicKeyFromHex,
  publicKeyHex,
  saveIdentity,
  SECRET_KEY_BYTES,
} from "./identity.ts";
