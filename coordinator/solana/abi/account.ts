/**
 * The coordinator account (layout version 2, coordinator/solana/program/layout.h,
 * docs/solana-program.md): its size and offsets, and the decoder that turns the
 * account's bytes into the `CoordinatorState` of coordinator/core/types.ts plus the
 * program's own fields (authorities, join registry, delegates, metadata, nonce).
 *
 * Decoding transcribes the fixed layout into the state encoding (docs/state-encoding.md)
 * and runs the strict state decoder on it, so an account decodes exactly when it holds a
 * state the TypeScript machine could hold, and every field gets the same checks. The
 * parameter digests, appended to the account in version 2 after the delegates, have no place
 * in that encoding's version 1 (whole seconds): they are read beside it, with the checks
 * the state decoder gives them in version 3.
 *
 * @module
 */

import { decodeCoordinatorState, StateDecodeError } from "../../encoding/mod.ts";
import type { RunMetadata } from "./instructions.ts";
import {
  type CoordinatorState,
  type DigestRecord,
  type DigestVote,
  MAX_WITNESSES,
  NUM_DIGEST_RECORDS,
  PARAMS_DIGEST_BYTES,
  witnessBloomParameters,
} from "../../core/mod.ts";

/** Layout version this module reads (2: version 1 plus the parameter digests). */
export const ACCOUNT_VERSION = 2;
/** Size of a coordinator account in bytes. */
export const ACCOUNT_SIZE = 217_760;
/** Clients, registrations and delegates the account holds. */
export const ACCOUNT_MAX_CLIENTS = 256;
/** The account's first 8 bytes once initialized: "PSYCOORD". */
export const ACCOUNT_MAGIC: Uint8Array = new TextEncoder().encode("PSYCOORD");

/** Byte offsets of the account's fields (layout.h; the docs list every one). */
export const OFFSETS = Object.freeze({
  magic: 0,
  version: 8,
  flags: 12,
  nonce: 16,
  mainAuthority: 24,
  joinAuthority: 56,
  authorizer: 88,
  runId: 120,
  runIdLen: 152,
  runState: 153,
  pendingPause: 154,
  step: 156,
  epochStartDataIndex: 160,
  epoch: 168,
  registryLen: 170,
  delegatesLen: 172,
  runStateStartUnixTimestamp: 176,
  nextActive: 184,
  config: 192,
  model: 264,
  metadata: 816,
  epochState: 1184,
  registry: 189_752,
  delegates: 208_184,
  digestRecordsLen: 216_376,
  digestVotesLen: 216_377,
  digestRecords: 216_380,
  digestVotes: 216_668,
});

/** Model offsets relative to OFFSETS.model. */
const M = {
  architecture: 0,
  dataType: 1,
  dataLocationLen: 2,
  maxSeqLen: 4,
  coldStart: 8,
  lrScheduleLen: 12,
  optimizerLen: 14,
  checkpoint: 16,
  dataLocation: 148,
  lrSchedule: 444,
  optimizer: 500,
};
/** Epoch-state offsets relative to OFFSETS.epochState. */
const E = {
  startStep: 0,
  lastStep: 4,
  startTimestamp: 8,
  clientsLen: 16,
  exitedLen: 18,
  roundsHead: 20,
  firstRound: 21,
  coldStartEpoch: 22,
  rounds: 24,
  clients: 151_704,
  exited: 170_136,
};
/** Sizes of the repeated structures. */
export const SIZES = Object.freeze({
  config: 72,
  model: 552,
  metadata: 368,
  bloom: 568,
  witness: 1184,
  round: 37_920,
  client: 72,
  registration: 72,
  digestRecord: 36,
  digestVote: 34,
});

/** A client registered to join (`active == nextActive` means pending for the next epoch). */
export interface Registration {
  signer: Uint8Array;
  p2pIdentity: Uint8Array;
  active: bigint;
}

/** Everything a coordinator account holds. */
export interface CoordinatorAccount {
  version: number;
  /** Anyone may join (set at init). */
  permissionless: boolean;
  /** Incremented by every successful instruction: newer states have larger nonces. */
  nonce: bigint;
  mainAuthority: Uint8Array;
  joinAuthority: Uint8Array;
  /** The key the join authority granted, or null when none is. */
  authorizer: Uint8Array | null;
  /** Keys the authorizer allows to join. */
  delegates: Uint8Array[];
  metadata: RunMetadata;
  /** Registrations with `active == nextActive` are pending for the next epoch. */
  nextActive: bigint;
  registry: Registration[];
  /** The coordinator itself, as the TypeScript machine holds it. */
  state: CoordinatorState;
}

/** Account bytes that are not a coordinator account of this layout. */
export class AccountDecodeError extends Error {
  /** The failing field (a dotted path). */
  readonly field: string;
  /** Byte offset in the account, or -1 when the state decoder found it. */
  readonly offset: number;
  constructor(field: string, offset: number, detail: string) {
    super(
      `Cannot decode coordinator account field "${field}"` +
        (offset >= 0 ? ` at offset ${offset}` : "") + `: ${detail}`,
    );
    this.name = "AccountDecodeError";
    this.field = field;
    this.offset = offset;
  }
}

/** Writes the state encoding; it is never longer than the account it comes from. */
class Transcriber {
  readonly out = new Uint8Array(ACCOUNT_SIZE);
  length = 0;
  constructor(readonly a: Uint8Array) {}
  copy(at: number, n: number): void {
    this.out.set(this.a.subarray(at, at + n), this.length);
    this.length += n;
  }
  byte(x: number): void {
    this.out[this.length++] = x & 0xff;
  }
  u16(x: number): void {
    this.byte(x);
    this.byte(x >>> 8);
  }
}

function limit(field: string, at: number, value: number, max: number): number {
  if (value > max) {
    throw new AccountDecodeError(field, at, `${value} exceeds the capacity ${max}`);
  }
  return value;
}

function key(a: Uint8Array, at: number): Uint8Array {
  return a.slice(at, at + 32);
}

/** Whether `bytes` start like an initialized coordinator account. */
export function isCoordinatorAccount(bytes: Uint8Array): boolean {
  return bytes.length === ACCOUNT_SIZE && ACCOUNT_MAGIC.every((b, i) => bytes[i] === b);
}

/**
 * Decodes a coordinator account. Throws {@linkcode AccountDecodeError} naming the field
 * (and offset) on a wrong size, magic or version, a count beyond its capacity, or any
 * field the state decoder rejects.
 */
export function decodeCoordinatorAccount(bytes: Uint8Array): CoordinatorAccount {
  if (bytes.length !== ACCOUNT_SIZE) {
    throw new AccountDecodeError(
      "size",
      0,
      `expected ${ACCOUNT_SIZE} bytes, found ${bytes.length}`,
    );
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!ACCOUNT_MAGIC.every((b, i) => bytes[i] === b)) {
    throw new AccountDecodeError("magic", 0, "not an initialized coordinator account");
  }
  const version = v.getUint32(OFFSETS.version, true);
  if (version !== ACCOUNT_VERSION) {
    throw new AccountDecodeError(
      "version",
      OFFSETS.version,
      `expected ${ACCOUNT_VERSION}, found ${version}`,
    );
  }
  const flags = v.getUint32(OFFSETS.flags, true);
  if (flags > 1) throw new AccountDecodeError("flags", OFFSETS.flags, `unknown flags ${flags}`);
  const u16 = (at: number) => v.getUint16(at, true);

  const maxClients = u16(OFFSETS.config + 64);
  if (maxClients < 1 || maxClients > ACCOUNT_MAX_CLIENTS) {
    throw new AccountDecodeError(
      "config.maxClients",
      OFFSETS.config + 64,
      `must be in [1, ${ACCOUNT_MAX_CLIENTS}], found ${maxClients}`,
    );
  }
  const { numBits, numKeys } = witnessBloomParameters(maxClients);

  const t = new Transcriber(bytes);
  t.copy(0, 4); // "PSYC" is the state encoding's magic too
  t.u16(1);
  t.u16(0);
  const runIdLen = limit("runId.length", OFFSETS.runIdLen, bytes[OFFSETS.runIdLen], 32);
  t.byte(runIdLen);
  t.copy(OFFSETS.runId, runIdLen);
  t.byte(bytes[OFFSETS.runState]);

  const m = OFFSETS.model;
  t.copy(m + M.architecture, 2);
  t.copy(m + M.maxSeqLen, 8);
  t.copy(
    m + M.dataLocation,
    limit("model.dataLocation.length", m + M.dataLocationLen, u16(m + M.dataLocationLen), 296),
  );
  const cp = m + M.checkpoint;
  t.byte(bytes[cp]);
  if (bytes[cp] !== 0) {
    const firstLen = limit("model.checkpoint.repo", cp + 2, bytes[cp + 2], 64);
    t.byte(firstLen);
    t.copy(cp + 4, firstLen);
    t.byte(bytes[cp + 1]);
    if (bytes[cp + 1] !== 0) {
      const secondLen = limit("model.checkpoint.repo", cp + 3, bytes[cp + 3], 64);
      t.byte(secondLen);
      t.copy(cp + 68, secondLen);
    }
  }
  t.copy(
    m + M.lrSchedule,
    limit("model.lrSchedule.length", m + M.lrScheduleLen, u16(m + M.lrScheduleLen), 56),
  );
  t.copy(
    m + M.optimizer,
    limit("model.optimizer.length", m + M.optimizerLen, u16(m + M.optimizerLen), 48),
  );

  t.copy(OFFSETS.config, 66);
  t.copy(OFFSETS.epoch, 2);
  t.copy(OFFSETS.step, 4);
  t.copy(OFFSETS.epochStartDataIndex, 8);

  const es = OFFSETS.epochState;
  for (let r = 0; r < 4; r++) {
    const base = es + E.rounds + r * SIZES.round;
    const n = limit(`epochState.rounds[${r}].witnesses.length`, base + 24, bytes[base + 24], 32);
    t.byte(n);
    for (let w = 0; w < n; w++) {
      const wb = base + 32 + w * SIZES.witness;
      t.copy(wb, 9);
      for (const bloom of [wb + 16, wb + 16 + SIZES.bloom]) {
        t.byte(numKeys);
        t.u16(numBits & 0xffff);
        t.u16(numBits >>> 16);
        t.copy(bloom, numKeys * 8);
        t.copy(bloom + 256, numBits / 8);
      }
      t.copy(wb + 1152, 32);
    }
    t.copy(base, 8 + 8 + 4 + 2 + 2);
  }
  for (
    const [name, at, lenAt] of [
      ["clients", es + E.clients, es + E.clientsLen],
      ["exitedClients", es + E.exited, es + E.exitedLen],
    ] as const
  ) {
    const n = limit(`epochState.${name}.length`, lenAt, u16(lenAt), 256);
    t.u16(n);
    for (let i = 0; i < n; i++) {
      const cb = at + i * SIZES.client;
      t.copy(cb, 64);
      t.byte(bytes[cb + 70]);
      t.copy(cb + 64, 4);
      t.copy(cb + 68, 2);
    }
  }
  t.byte(bytes[es + E.roundsHead]);
  t.copy(es + E.startStep, 4);
  t.copy(es + E.lastStep, 4);
  t.copy(es + E.startTimestamp, 8);
  t.byte(bytes[es + E.firstRound]);
  t.byte(bytes[es + E.coldStartEpoch]);
  t.copy(OFFSETS.runStateStartUnixTimestamp, 8);
  t.byte(bytes[OFFSETS.pendingPause]);

  let state: CoordinatorState;
  try {
    state = decodeCoordinatorState(t.out.subarray(0, t.length));
  } catch (err) {
    if (err instanceof StateDecodeError) {
      throw new AccountDecodeError(err.field, -1, err.message);
    }
    throw err;
  }
  const digests = readDigests(bytes, maxClients);
  state.epochState.digestVotes = digests.votes;
  state.paramsDigests = digests.records;

  const registryLen = limit("registry.length", OFFSETS.registryLen, u16(OFFSETS.registryLen), 256);
  const registry: Registration[] = [];
  for (let i = 0; i < registryLen; i++) {
    const at = OFFSETS.registry + i * SIZES.registration;
    registry.push({
      signer: key(bytes, at),
      p2pIdentity: key(bytes, at + 32),
      active: v.getBigUint64(at + 64, true),
    });
  }
  const delegatesLen = limit(
    "delegates.length",
    OFFSETS.delegatesLen,
    u16(OFFSETS.delegatesLen),
    256,
  );
  const delegates: Uint8Array[] = [];
  for (let i = 0; i < delegatesLen; i++) delegates.push(key(bytes, OFFSETS.delegates + i * 32));

  const md = OFFSETS.metadata;
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  const text = (field: string, at: number, n: number, max: number): string => {
    limit(field, at, n, max);
    try {
      return utf8.decode(bytes.subarray(at, at + n));
    } catch {
      throw new AccountDecodeError(field, at, "not valid UTF-8");
    }
  };
  const safe = (field: string, at: number): number => {
    const x = v.getBigUint64(at, true);
    if (x > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new AccountDecodeError(field, at, `${x} exceeds 2^53 - 1`);
    }
    return Number(x);
  };
  const metadata: RunMetadata = {
    name: text("metadata.name", md + 24, bytes[md + 18], 64),
    description: text("metadata.description", md + 88, u16(md + 16), 280),
    numParameters: safe("metadata.numParameters", md),
    vocabSize: safe("metadata.vocabSize", md + 8),
  };
  const authorizer = key(bytes, OFFSETS.authorizer);
  return {
    version,
    permissionless: flags === 1,
    nonce: v.getBigUint64(OFFSETS.nonce, true),
    mainAuthority: key(bytes, OFFSETS.mainAuthority),
    joinAuthority: key(bytes, OFFSETS.joinAuthority),
    authorizer: authorizer.every((b) => b === 0) ? null : authorizer,
    delegates,
    metadata,
    nextActive: v.getBigUint64(OFFSETS.nextActive, true),
    registry,
    state,
  };
}

/** The digest votes and records of a version 2 account, checked as the state decoder would. */
function readDigests(
  bytes: Uint8Array,
  maxClients: number,
): { votes: DigestVote[]; records: DigestRecord[] } {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const digestAt = (field: string, at: number): Uint8Array => {
    const digest = bytes.slice(at, at + PARAMS_DIGEST_BYTES);
    if (digest.every((b) => b === 0)) {
      throw new AccountDecodeError(field, at, "an all-zero digest is not a digest");
    }
    return digest;
  };
  const votes: DigestVote[] = [];
  const voteCount = limit(
    "epochState.digestVotes.length",
    OFFSETS.digestVotesLen,
    bytes[OFFSETS.digestVotesLen],
    MAX_WITNESSES,
  );
  for (let i = 0; i < voteCount; i++) {
    const at = OFFSETS.digestVotes + i * SIZES.digestVote;
    const field = `epochState.digestVotes[${i}]`;
    const index = v.getUint16(at, true);
    if (index >= maxClients || votes.some((x) => x.index === index)) {
      throw new AccountDecodeError(`${field}.index`, at, `${index} is out of range or repeated`);
    }
    votes.push({ index, digest: digestAt(`${field}.digest`, at + 2) });
  }
  const records: DigestRecord[] = [];
  const recordCount = limit(
    "paramsDigests.length",
    OFFSETS.digestRecordsLen,
    bytes[OFFSETS.digestRecordsLen],
    NUM_DIGEST_RECORDS,
  );
  for (let i = 0; i < recordCount; i++) {
    const at = OFFSETS.digestRecords + i * SIZES.digestRecord;
    const step = v.getUint32(at, true);
    const previous = records.at(-1)?.step ?? 0;
    if (step <= previous) {
      throw new AccountDecodeError(
        `paramsDigests[${i}].step`,
        at,
        `${step} must be above the previous record's step ${previous}`,
      );
    }
    records.push({ step, digest: digestAt(`paramsDigests[${i}].digest`, at + 4) });
  }
  return { votes, records };
}

/** The registrations pending for the next epoch, in registry order (the tick's pending list). */
export function pendingRegistrations(account: CoordinatorAccount): Registration[] {
  return account.registry.filter((r) => r.active === account.nextActive);
}
