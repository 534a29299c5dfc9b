/**
 * The coordinator's TCP protocol after the handshake: two closed unions, one per
 * direction, each decoded at a single entry point that checks the tag, every count and
 * length, and that no byte is left over. Any defect throws `ProtocolError` (net/errors.ts)
 * naming the message and field; the server answers it with `Refused` and closes.
 *
 * Every client request carries a `requestId` the server echoes in `Ack` (accepted) or
 * `Error` (rejected by the coordinator's rules, with the CoordinatorError's wire number),
 * so a backend call can resolve to the coordinator's verdict, as a Solana transaction does.
 *
 * ```text
 * client -> server                            server -> client
 *   0 Join            { requestId, runId }      0 State   { bytes: encoded CoordinatorState }
 *   1 Witness         { requestId, witness,     1 Ack     { requestId }
 *                       metadata, digest }      2 Error   { requestId, code, message }
 *   2 WarmupWitness   { requestId, witness,     3 Refused { reason }   (then the server closes)
 *                       digest }
 *   3 HealthCheck     { requestId, checks }     4 Relays  { addresses }  (after the handshake)
 *                                               5 StateDelta { length, checksum, ops }
 *   4 Checkpoint      { requestId, repo }
 *   5 CooldownWitness { requestId, proof, digest }
 *   6 Withdraw        { requestId }
 *   7 Telemetry       { requestId, telemetry }  (a notice: never answered)
 *   8 Verification    { requestId, report }
 * ```
 *
 * `StateDelta` is a state as the difference from the last state this connection carried
 * (`state_delta.ts`): `length` bytes rebuilt by `ops` (copy `length` bytes at `offset` of that
 * state, or insert literal bytes), whose sha256 starts with the 8 bytes of `checksum`. A
 * connection's first state is always a whole `State`.
 *
 * `digest` is the client's parameter digest (32 bytes; all zero: none), a vote for the
 * parameters of the run's current step (coordinator/core/params_digest.ts).
 *
 * @module
 */
import { type FrameLimit, MessageReader, MessageWriter, ProtocolError } from "../../net/mod.ts";
import {
  readCheckpoint,
  readDigest,
  readHealthChecks,
  readMetadata,
  readProof,
  readVerificationReport,
  readWitness,
  writeCheckpoint,
  writeDigest,
  writeHealthChecks,
  writeMetadata,
  writeProof,
  writeVerificationReport,
  writeWitness,
} from "./protocol_fields.ts";
import { type ClientTelemetry, readTelemetry, writeTelemetry } from "./telemetry.ts";
import type { DeltaOp } from "./state_delta.ts";
import {
  type Checkpoint,
  COORDINATOR_ERROR_CODES,
  type CoordinatorErrorCode,
  coordinatorErrorCodeOf,
  coordinatorErrorNumber,
  type HealthCheck,
  MAX_CLIENTS_LIMIT,
  MAX_EVAL_NAME_BYTES,
  MAX_METADATA_EVALS,
  MAX_PROMPT_RESULTS,
  MAX_RUN_ID_BYTES,
  MAX_STRING_BYTES,
  PARAMS_DIGEST_BYTES,
  type VerificationReport,
  type Witness,
  witnessBloomParameters,
  type WitnessMetadata,
  type WitnessProof,
} from "../core/mod.ts";

/**
 * The handshake context of the coordinator service (net/handshake.ts). Version 3 added
 * verification (the `Verification` request, and states in encoding version 5); version 2 the
 * parameter digests. A client of another version fails the handshake instead of sending or
 * reading messages this server reads or writes differently.
 */
export const COORDINATOR_CONTEXT = "psyche-ts coordinator v3";
/** Longest `Error.message` / `Refused.reason`, in UTF-8 bytes. */
export const MAX_REASON_BYTES = 1024;

/** Every message a client sends after the handshake. */
export type ClientMessage =
  | { kind: "Join"; requestId: number; runId: string }
  | {
    kind: "Witness";
    requestId: number;
    witness: Witness;
    metadata: WitnessMetadata;
    paramsDigest: Uint8Array;
  }
  | { kind: "WarmupWitness"; requestId: number; witness: Witness; paramsDigest: Uint8Array }
  | { kind: "HealthCheck"; requestId: number; checks: HealthCheck[] }
  | { kind: "Checkpoint"; requestId: number; repo: Checkpoint }
  | { kind: "CooldownWitness"; requestId: number; proof: WitnessProof; paramsDigest: Uint8Array }
  /** The client leaves the epoch (it must Join again to take part in a later one). */
  | { kind: "Withdraw"; requestId: number }
  /**
   * Informational, after each step: the server keeps the latest per member and never answers
   * it (`requestId` is only echoed in logs), so a client never waits on it.
   */
  | { kind: "Telemetry"; requestId: number; telemetry: ClientTelemetry }
  /** A seated verifier's report on a sampled result (coordinator/core/verification.ts). */
  | { kind: "Verification"; requestId: number; report: VerificationReport };

/** Every message the server sends after the handshake. */
export type ServerMessage =
  | { kind: "State"; bytes: Uint8Array }
  | { kind: "Ack"; requestId: number }
  | { kind: "Error"; requestId: number; code: CoordinatorErrorCode; message: string }
  | { kind: "Refused"; reason: string }
  /** The run's circuit relays (multiaddrs ending in `/p2p/<relay>`): where clients meet. */
  | { kind: "Relays"; addresses: string[] }
  /** A state as the difference from the connection's previous one (see the module doc). */
  | { kind: "StateDelta"; length: number; checksum: Uint8Array; ops: DeltaOp[] };

const CLIENT_TAGS = [
  "Join",
  "Witness",
  "WarmupWitness",
  "HealthCheck",
  "Checkpoint",
  "CooldownWitness",
  "Withdraw",
  "Telemetry",
  "Verification",
] as const;
const SERVER_TAGS = ["State", "Ack", "Error", "Refused", "Relays", "StateDelta"] as const;

/** Bytes of a `StateDelta`'s checksum: the first of the rebuilt state's sha256. */
export const STATE_CHECKSUM_BYTES = 8;
/** Largest state a `StateDelta` may rebuild (a client's frame cap: the same bound). */
export const MAX_DELTA_STATE_BYTES = 64 * 1024 * 1024;

/** Most relay addresses one `Relays` message carries, and the longest one, in UTF-8 bytes. */
export const MAX_RELAY_ADDRESSES = 16;
export const MAX_RELAY_ADDRESS_BYTES = 256;

/** Encodes a client message (tag byte, request id, fields). RangeError on over-cap fields. */
export function encodeClientMessage(msg: ClientMessage): Uint8Array {
  const w = new MessageWriter().u8(CLIENT_TAGS.indexOf(msg.kind)).u32(msg.requestId);
  switch (msg.kind) {
    case "Join":
      if (new TextEncoder().encode(msg.runId).length > MAX_RUN_ID_BYTES) {
        throw new RangeError(`runId exceeds ${MAX_RUN_ID_BYTES} UTF-8 bytes`);
      }
      w.string(msg.runId);
      break;
    case "Witness":
      writeWitness(w, msg.witness);
      writeMetadata(w, msg.metadata);
      writeDigest(w, msg.paramsDigest);
      break;
    case "WarmupWitness":
      writeWitness(w, msg.witness);
      writeDigest(w, msg.paramsDigest);
      break;
    case "CooldownWitness":
      writeProof(w, msg.proof);
      writeDigest(w, msg.paramsDigest);
      break;
    case "Withdraw":
      break;
    case "Telemetry":
      writeTelemetry(w, msg.telemetry);
      break;
    case "HealthCheck":
      writeHealthChecks(w, msg.checks);
      break;
    case "Checkpoint":
      writeCheckpoint(w, msg.repo);
      break;
    case "Verification":
      writeVerificationReport(w, msg.report);
      break;
    default: {
      const never: never = msg;
      throw new TypeError(`Unknown client message ${JSON.stringify(never)}`);
    }
  }
  return w.finish();
}

/** A client message's tag and request id, and a reader named after its kind for the rest. */
function readClientHead(
  bytes: Uint8Array,
): { kind: ClientMessage["kind"]; requestId: number; m: MessageReader } {
  const r = new MessageReader(bytes, "client message");
  const tag = r.u8("tag");
  const kind = CLIENT_TAGS[tag];
  if (kind === undefined) {
    throw new ProtocolError(
      `client message: unknown tag ${tag}, expected 0..${CLIENT_TAGS.length - 1}`,
    );
  }
  const m = r.rename(kind);
  return { kind, requestId: m.u32("requestId"), m };
}

/**
 * Decodes one client frame. Throws {@linkcode ProtocolError} naming the message and
 * field on an unknown tag, a short or over-long field, a count over its cap, or
 * trailing bytes.
 *
 * @example
 * ```ts
 * import { decodeClientMessage, encodeClientMessage } from "./protocol.ts";
 * const bytes = encodeClientMessage({ kind: "Join", requestId: 7, runId: "demo" });
 * const msg = decodeClientMessage(bytes);
 * if (msg.kind !== "Join" || msg.runId !== "demo") throw new Error("round trip failed");
 * ```
 */
export function decodeClientMessage(bytes: Uint8Array): ClientMessage {
  const { kind, requestId, m } = readClientHead(bytes);
  let msg: ClientMessage;
  try {
    switch (kind) {
      case "Join":
        msg = { kind, requestId, runId: m.string("runId", MAX_RUN_ID_BYTES) };
        break;
      case "Witness":
        msg = {
          kind,
          requestId,
          witness: readWitness(m),
          metadata: readMetadata(m),
          paramsDigest: readDigest(m),
        };
        break;
      case "WarmupWitness":
        msg = { kind, requestId, witness: readWitness(m), paramsDigest: readDigest(m) };
        break;
      case "CooldownWitness":
        msg = { kind, requestId, proof: readProof(m), paramsDigest: readDigest(m) };
        break;
      case "Withdraw":
        msg = { kind, requestId };
        break;
      case "Telemetry":
        msg = { kind, requestId, telemetry: readTelemetry(m) };
        break;
      case "HealthCheck":
        msg = { kind, requestId, checks: readHealthChecks(m) };
        break;
      case "Checkpoint":
        msg = { kind, requestId, repo: readCheckpoint(m) };
        break;
      case "Verification":
        msg = { kind, requestId, report: readVerificationReport(m) };
        break;
    }
    m.end();
  } catch (e) {
    if (e instanceof ProtocolError && !e.message.startsWith(kind)) {
      throw new ProtocolError(`${kind}: ${e.message}`);
    }
    throw e;
  }
  return msg;
}

/** What a client frame is, read from its first bytes without decoding the rest. */
export interface ClientMessageHead {
  kind: ClientMessage["kind"];
  requestId: number;
  /** A health check's entry count (as announced; the decoder checks it), else null. */
  entries: number | null;
}

/**
 * Reads a client frame's tag, request id and (for a health check) entry count, so the
 * server can refuse a request on those alone before paying for its decoding. Throws
 * {@linkcode ProtocolError} on an unknown tag or a frame too short for its head.
 */
export function peekClientMessage(bytes: Uint8Array): ClientMessageHead {
  const { kind, requestId, m } = readClientHead(bytes);
  return { kind, requestId, entries: kind === "HealthCheck" ? m.u32("checks") : null };
}

/** The largest frame of each client message kind, in bytes. */
export type ClientFrameLimits = Readonly<Record<ClientMessage["kind"], number>>;

/**
 * The largest frame each client message kind can have in a run of `maxClients` clients:
 * the encoding of the largest message of that kind the run can accept (witness blooms of
 * exactly the run's size, a health check naming `maxClients` clients, every list and
 * string at its cap). Computed by encoding such messages, so a field added to a message
 * is counted without touching this; a message kind added to the union must say what its
 * largest instance is here (the switch is exhaustive).
 *
 * @example
 * ```ts
 * import { clientFrameLimits } from "./protocol.ts";
 * const limits = clientFrameLimits(256);
 * // tag, request id, count, then 81 bytes per client
 * if (limits.HealthCheck !== 1 + 4 + 4 + 256 * 81) throw new Error("unexpected limit");
 * ```
 */
export function clientFrameLimits(maxClients: number): ClientFrameLimits {
  if (!Number.isSafeInteger(maxClients) || maxClients < 1 || maxClients > MAX_CLIENTS_LIMIT) {
    throw new RangeError(`maxClients must be in 1..${MAX_CLIENTS_LIMIT}, found ${maxClients}`);
  }
  const size = (msg: ClientMessage) => encodeClientMessage(msg).length;
  const { numBits, numKeys } = witnessBloomParameters(maxClients);
  const bloom = () => ({ keys: new BigUint64Array(numKeys), bits: new Uint8Array(numBits / 8) });
  const witness: Witness = {
    proof: { position: 0, index: 0, witness: true },
    participantBloom: bloom(),
    broadcastBloom: bloom(),
    broadcastMerkle: new Uint8Array(32),
  };
  const metadata: WitnessMetadata = {
    step: 0,
    tokensPerSec: 0,
    bandwidthPerSec: 0,
    loss: 0,
    evals: Array.from({ length: MAX_METADATA_EVALS }, () => ({
      name: "x".repeat(MAX_EVAL_NAME_BYTES),
      value: 0,
    })),
    promptResults: new Array(MAX_PROMPT_RESULTS).fill(0),
    promptIndex: 0,
    efficiency: 0,
  };
  const key = new Uint8Array(32);
  const digest = new Uint8Array(PARAMS_DIGEST_BYTES);
  const check = {
    id: { signer: key, p2pIdentity: key },
    proof: { committee: "Trainer" as const, position: 0, index: 0 },
  };
  const longest = "x".repeat(MAX_STRING_BYTES);
  const limit = (kind: ClientMessage["kind"]): number => {
    switch (kind) {
      case "Join":
        return size({ kind, requestId: 0, runId: "x".repeat(MAX_RUN_ID_BYTES) });
      case "Witness":
        return size({ kind, requestId: 0, witness, metadata, paramsDigest: digest });
      case "WarmupWitness":
        return size({ kind, requestId: 0, witness, paramsDigest: digest });
      case "CooldownWitness":
        return size({ kind, requestId: 0, proof: witness.proof, paramsDigest: digest });
      case "Withdraw":
        return size({ kind, requestId: 0 });
      case "Telemetry":
        return size({
          kind,
          requestId: 0,
          telemetry: {
            step: 0,
            bytesSent: 0,
            bytesReceived: 0,
            tokensPerSec: 0,
            breakdownMs: { train: 0, encode: 0, exchange: 0, apply: 0, wait: 0 },
          },
        });
      case "HealthCheck": {
        // One entry's size times maxClients, without building maxClients entries.
        const one = size({ kind, requestId: 0, checks: [check] });
        const two = size({ kind, requestId: 0, checks: [check, check] });
        return one + (maxClients - 1) * (two - one);
      }
      case "Verification":
        return size({
          kind,
          requestId: 0,
          report: { height: 0, trainer: 0, verdict: "Fail", evidence: "CopiedResult", detail: 0 },
        });
      case "Checkpoint":
        return Math.max(
          size({
            kind,
            requestId: 0,
            repo: { kind: "Hub", repo: { repoId: longest, revision: longest } },
          }),
          size({
            kind,
            requestId: 0,
            repo: { kind: "Gcs", repo: { bucket: longest, prefix: longest } },
          }),
        );
      default: {
        const never: never = kind;
        throw new TypeError(`Unknown client message kind ${String(never)}`);
      }
    }
  };
  return Object.fromEntries(CLIENT_TAGS.map((kind) => [kind, limit(kind)])) as ClientFrameLimits;
}

/**
 * The per-kind limit of a client frame whose first byte is `tag`, for
 * `FrameReader.next({ limitFor })`: an unknown tag gets the largest limit (the decoder
 * then names the bad tag).
 */
export function clientFrameLimitFor(limits: ClientFrameLimits): (tag: number) => FrameLimit {
  const largest = Math.max(...Object.values(limits));
  return (tag) => {
    const kind = CLIENT_TAGS[tag];
    return kind === undefined
      ? { maxBytes: largest, name: `client message (tag ${tag})` }
      : { maxBytes: limits[kind], name: kind };
  };
}

/** Encodes a server message. */
export function encodeServerMessage(msg: ServerMessage): Uint8Array {
  const w = new MessageWriter().u8(SERVER_TAGS.indexOf(msg.kind));
  switch (msg.kind) {
    case "State":
      return w.u32(msg.bytes.length).bytes(msg.bytes).finish();
    case "Ack":
      return w.u32(msg.requestId).finish();
    case "Error":
      return w.u32(msg.requestId).u16(coordinatorErrorNumber(msg.code))
        .string(truncateUtf8(msg.message, MAX_REASON_BYTES)).finish();
    case "Refused":
      return w.string(truncateUtf8(msg.reason, MAX_REASON_BYTES)).finish();
    case "Relays": {
      if (msg.addresses.length > MAX_RELAY_ADDRESSES) {
        throw new RangeError(
          `Relays: at most ${MAX_RELAY_ADDRESSES} addresses, found ${msg.addresses.length}`,
        );
      }
      w.u8(msg.addresses.length);
      for (const address of msg.addresses) {
        if (new TextEncoder().encode(address).length > MAX_RELAY_ADDRESS_BYTES) {
          throw new RangeError(`Relays: address longer than ${MAX_RELAY_ADDRESS_BYTES} bytes`);
        }
        w.string(address);
      }
      return w.finish();
    }
    case "StateDelta": {
      if (msg.checksum.length !== STATE_CHECKSUM_BYTES) {
        throw new RangeError(`StateDelta: checksum must be ${STATE_CHECKSUM_BYTES} bytes`);
      }
      w.u32(msg.length).bytes(msg.checksum).u32(msg.ops.length);
      for (const op of msg.ops) {
        if (op.kind === "copy") w.u8(0).u32(op.offset).u32(op.length);
        else w.u8(1).u32(op.bytes.length).bytes(op.bytes);
      }
      return w.finish();
    }
    default: {
      const never: never = msg;
      throw new TypeError(`Unknown server message ${JSON.stringify(never)}`);
    }
  }
}

/**
 * Whether a server frame's payload is a state push (`State` or `StateDelta`), by its tag alone
 * (nothing else checked).
 */
export function isStateFrame(payload: Uint8Array): boolean {
  return payload.length > 0 &&
    (payload[0] === SERVER_TAGS.indexOf("State") ||
      payload[0] === SERVER_TAGS.indexOf("StateDelta"));
}

/** Decodes one server frame; {@linkcode ProtocolError} on any defect (as the client side). */
export function decodeServerMessage(bytes: Uint8Array): ServerMessage {
  const r = new MessageReader(bytes, "server message");
  const tag = r.u8("tag");
  const kind = SERVER_TAGS[tag];
  if (kind === undefined) {
    throw new ProtocolError(
      `server message: unknown tag ${tag}, expected 0..${SERVER_TAGS.length - 1}`,
    );
  }
  const m = r.rename(kind);
  let msg: ServerMessage;
  switch (kind) {
    case "State": {
      const length = m.u32("length");
      msg = { kind, bytes: m.bytes(length, "bytes") };
      break;
    }
    case "Ack":
      msg = { kind, requestId: m.u32("requestId") };
      break;
    case "Error": {
      const requestId = m.u32("requestId");
      const number = m.u16("code");
      const code = coordinatorErrorCodeOf(number);
      if (code === undefined) {
        throw new ProtocolError(
          `Error: unknown code ${number}, expected 0..${COORDINATOR_ERROR_CODES.length - 1}`,
        );
      }
      msg = { kind, requestId, code, message: m.string("message", MAX_REASON_BYTES) };
      break;
    }
    case "Refused":
      msg = { kind, reason: m.string("reason", MAX_REASON_BYTES) };
      break;
    case "Relays": {
      const count = m.u8("count");
      if (count > MAX_RELAY_ADDRESSES) {
        throw new ProtocolError(`Relays: ${count} addresses, at most ${MAX_RELAY_ADDRESSES}`);
      }
      const addresses = Array.from(
        { length: count },
        () => m.string("address", MAX_RELAY_ADDRESS_BYTES),
      );
      msg = { kind, addresses };
      break;
    }
    case "StateDelta": {
      const length = m.u32("length");
      if (length > MAX_DELTA_STATE_BYTES) {
        throw new ProtocolError(
          `StateDelta: rebuilds ${length} bytes, at most ${MAX_DELTA_STATE_BYTES}`,
        );
      }
      const checksum = m.bytes(STATE_CHECKSUM_BYTES, "checksum");
      const count = m.u32("count");
      // Each operation takes at least 5 bytes: a count past what is left is a lie.
      if (count * 5 > m.remaining) {
        throw new ProtocolError(`StateDelta: ${count} operations in ${m.remaining} bytes`);
      }
      const ops: DeltaOp[] = [];
      for (let i = 0; i < count; i++) {
        const op = m.u8("op");
        if (op === 0) {
          ops.push({ kind: "copy", offset: m.u32("offset"), length: m.u32("length") });
        } else if (op === 1) {
          const n = m.u32("length");
          ops.push({ kind: "insert", bytes: m.bytes(n, "bytes") });
        } else {
          throw new ProtocolError(`StateDelta: unknown operation ${op}, expected 0 or 1`);
        }
      }
      msg = { kind, length, checksum, ops };
      break;
    }
  }
  m.end();
  return msg;
}

/** `text` cut to at most `maxBytes` UTF-8 bytes on a character boundary. */
function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}
