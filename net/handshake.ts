/**
 * The ed25519 challenge-response handshake that opens every authenticated TCP
 * connection (Psyche's `tcp.rs`, plus a context string and an explicit verdict):
 *
 * 1. server → `Challenge { nonce: 32 random bytes, context }`
 * 2. client checks `context` is the service it meant to reach, then
 *    → `ChallengeResponse { publicKey, signature }` where the signature covers
 *    {@linkcode handshakeSigningBytes}`(context, nonce)`
 * 3. server refuses a `publicKey` that no secret key stands behind (small-order or
 *    non-canonical: see ed25519_strict.ts), verifies the signature strictly, binds the
 *    connection to that key and → `Accepted`, or → `Rejected { reason }` and closes.
 *
 * The context string keeps a signature made for one service (say, the data server)
 * from being replayed to another (the coordinator).
 *
 * @module
 */
import { ed25519 } from "@noble/curves/ed25519.js";
import { MessageReader, MessageWriter } from "./codec.ts";
import { HandshakeError, ProtocolError } from "./errors.ts";
import { withAbort } from "./abort.ts";
import { pointProblem, verifySignature } from "./ed25519_strict.ts";
import { type ByteWriter, type FrameReader, writeFrame } from "./frame.ts";

/** Bytes of the server's random challenge. */
export const NONCE_BYTES = 32;
/** Bytes of an ed25519 public key. */
export const PUBLIC_KEY_BYTES = 32;
/** Bytes of an ed25519 signature. */
export const SIGNATURE_BYTES = 64;
/** Longest context string, in UTF-8 bytes. */
export const MAX_CONTEXT_BYTES = 256;
/** Longest rejection reason, in UTF-8 bytes. */
export const MAX_REASON_BYTES = 1024;
/** Domain separator prefixed to every signed challenge. */
export const HANDSHAKE_DOMAIN = "psyche-ts/handshake/v1";

/** Every message exchanged during the handshake, one closed union. */
export type HandshakeMessage =
  | { kind: "Challenge"; nonce: Uint8Array; context: string }
  | { kind: "ChallengeResponse"; publicKey: Uint8Array; signature: Uint8Array }
  | { kind: "Accepted" }
  | { kind: "Rejected"; reason: string };

const TAGS = ["Challenge", "ChallengeResponse", "Accepted", "Rejected"] as const;

/** Encodes a handshake message: a tag byte then its fields. */
export function encodeHandshakeMessage(msg: HandshakeMessage): Uint8Array {
  const w = new MessageWriter().u8(TAGS.indexOf(msg.kind));
  switch (msg.kind) {
    case "Challenge":
      checkLength(msg.nonce, NONCE_BYTES, "nonce");
      return w.bytes(msg.nonce).string(msg.context).finish();
    case "ChallengeResponse":
      checkLength(msg.publicKey, PUBLIC_KEY_BYTES, "publicKey");
      checkLength(msg.signature, SIGNATURE_BYTES, "signature");
      return w.bytes(msg.publicKey).bytes(msg.signature).finish();
    case "Accepted":
      return w.finish();
    case "Rejected":
      return w.string(msg.reason).finish();
    default: {
      const never: never = msg;
      throw new TypeError(`Unknown handshake message ${JSON.stringify(never)}`);
    }
  }
}

/** Decodes a handshake message, checking the tag and every length. Throws {@linkcode ProtocolError}. */
export function decodeHandshakeMessage(bytes: Uint8Array): HandshakeMessage {
  const r = new MessageReader(bytes, "handshake message");
  const tag = r.u8("tag");
  const kind = TAGS[tag];
  if (kind === undefined) {
    throw new ProtocolError(
      `handshake message: unknown tag ${tag}, expected 0..${TAGS.length - 1}`,
    );
  }
  const m = r.rename(kind);
  let msg: HandshakeMessage;
  switch (kind) {
    case "Challenge":
      msg = {
        kind,
        nonce: m.bytes(NONCE_BYTES, "nonce"),
        context: m.string("context", MAX_CONTEXT_BYTES),
      };
      break;
    case "ChallengeResponse":
      msg = {
        kind,
        publicKey: m.bytes(PUBLIC_KEY_BYTES, "publicKey"),
        signature: m.bytes(SIGNATURE_BYTES, "signature"),
      };
      break;
    case "Accepted":
      msg = { kind };
      break;
    case "Rejected":
      msg = { kind, reason: m.string("reason", MAX_REASON_BYTES) };
      break;
  }
  m.end();
  return msg;
}

/** The bytes a client signs: domain, context length and context, then the nonce. */
export function handshakeSigningBytes(context: string, nonce: Uint8Array): Uint8Array {
  checkLength(nonce, NONCE_BYTES, "nonce");
  return new MessageWriter().string(HANDSHAKE_DOMAIN).string(context).bytes(nonce).finish();
}

/** The client's signed answer to a challenge. Pure: the caller supplies the key. */
export function answerChallenge(
  secretKey: Uint8Array,
  context: string,
  nonce: Uint8Array,
): { publicKey: Uint8Array; signature: Uint8Array } {
  checkLength(secretKey, PUBLIC_KEY_BYTES, "secretKey");
  return {
    publicKey: ed25519.getPublicKey(secretKey),
    signature: ed25519.sign(handshakeSigningBytes(context, nonce), secretKey),
  };
}

/**
 * Whether `signature` is `publicKey`'s signature over this challenge, under the strict rules of
 * ed25519_strict.ts (small-order and non-canonical keys and R refused). Never throws.
 */
export function verifyChallengeAnswer(
  publicKey: Uint8Array,
  signature: Uint8Array,
  context: string,
  nonce: Uint8Array,
): boolean {
  let signed: Uint8Array;
  try {
    signed = handshakeSigningBytes(context, nonce);
  } catch {
    return false; // a nonce of the wrong length was never a challenge of ours
  }
  return verifySignature(signature, signed, publicKey);
}

/** Options shared by both sides of the handshake. */
export interface HandshakeOptions {
  /** The service's context string, e.g. `"psyche-ts data server v1"`. */
  context: string;
  /** Aborts a handshake that takes too long; the caller closes the connection. */
  signal?: AbortSignal;
}

/**
 * Server side: challenges the peer and returns its verified public key.
 * `nonce` defaults to 32 bytes from the system's secure random source. `authorize`, if
 * given, sees the key once its signature verified and returns null to accept it or the
 * reason it is refused (a permissioned service).
 * Throws {@linkcode HandshakeError} (after telling the client) on a bad answer or a refusal.
 */
export async function serverHandshake(
  writer: ByteWriter,
  frames: FrameReader,
  options: HandshakeOptions & {
    nonce?: Uint8Array;
    authorize?: (publicKey: Uint8Array) => string | null;
  },
): Promise<Uint8Array> {
  const nonce = options.nonce ?? crypto.getRandomValues(new Uint8Array(NONCE_BYTES));
  const send = (msg: HandshakeMessage) =>
    withAbort(writeFrame(writer, encodeHandshakeMessage(msg)), options.signal);
  await send({ kind: "Challenge", nonce, context: options.context });
  const answer = await readHandshake(frames, options.signal);
  if (answer.kind !== "ChallengeResponse") {
    await send({ kind: "Rejected", reason: `expected ChallengeResponse, found ${answer.kind}` });
    throw new HandshakeError(`Expected ChallengeResponse, found ${answer.kind}`);
  }
  const keyProblem = pointProblem(answer.publicKey);
  if (keyProblem !== null) {
    await send({ kind: "Rejected", reason: `public key ${keyProblem}` });
    throw new HandshakeError(`Client's public key ${keyProblem}`);
  }
  if (!verifyChallengeAnswer(answer.publicKey, answer.signature, options.context, nonce)) {
    await send({ kind: "Rejected", reason: "invalid signature" });
    throw new HandshakeError("Client's challenge signature does not verify");
  }
  const refusal = options.authorize?.(answer.publicKey) ?? null;
  if (refusal !== null) {
    await send({ kind: "Rejected", reason: refusal });
    throw new HandshakeError(`Client key refused: ${refusal}`);
  }
  await send({ kind: "Accepted" });
  return answer.publicKey;
}

/**
 * Client side: answers the server's challenge with `secretKey`.
 * Refuses to sign a challenge whose context is not `options.context`. A server that refuses
 * the connection outright (e.g. at its connection limit) sends `Rejected` instead of a
 * challenge; its reason is in the error.
 */
export async function clientHandshake(
  writer: ByteWriter,
  frames: FrameReader,
  options: HandshakeOptions & { secretKey: Uint8Array },
): Promise<void> {
  const challenge = await readHandshake(frames, options.signal);
  if (challenge.kind === "Rejected") {
    // Refused before any challenge: the server is full, or this address has too many.
    throw new HandshakeError(`Server refused the connection: ${challenge.reason}`);
  }
  if (challenge.kind !== "Challenge") {
    throw new HandshakeError(`Expected Challenge from the server, found ${challenge.kind}`);
  }
  if (challenge.context !== options.context) {
    throw new HandshakeError(
      `Server's context is "${challenge.context}", expected "${options.context}"`,
    );
  }
  const answer = answerChallenge(options.secretKey, challenge.context, challenge.nonce);
  await withAbort(
    writeFrame(writer, encodeHandshakeMessage({ kind: "ChallengeResponse", ...answer })),
    options.signal,
  );
  const verdict = await readHandshake(frames, options.signal);
  if (verdict.kind === "Rejected") {
    throw new HandshakeError(`Server rejected the handshake: ${verdict.reason}`);
  }
  if (verdict.kind !== "Accepted") {
    throw new HandshakeError(`Expected Accepted or Rejected, found ${verdict.kind}`);
  }
}

async function readHandshake(
  frames: FrameReader,
  signal: AbortSignal | undefined,
): Promise<HandshakeMessage> {
  const frame = await withAbort(frames.next(), signal);
  if (frame === null) throw new HandshakeError("Connection closed during the handshake");
  return decodeHandshakeMessage(frame);
}

function checkLength(bytes: Uint8Array, expected: number, field: string): void {
  if (bytes.length !== expected) {
    throw new RangeError(`${field} must be ${expected} bytes, found ${bytes.length}`);
  }
}
