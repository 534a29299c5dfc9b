/**
 * The coordinator account (layout version 7: the table in layout.ts, from which
 * program/layout.h and docs/solana-program.md are generated): its size and offsets, and the
 * decoder that turns the account's bytes into the `CoordinatorState` of
 * coordinator/core/types.ts plus the program's own fields (authorities, join registry and each
 * registration's earned and slashed points and deposit, epoch rates, the join deposit, delegates,
 * metadata, meeting addresses, nonce).
 *
 * Decoding transcribes the fixed layout into the state encoding (docs/state-encoding.md)
 * and runs the strict state decoder on it, so an account decodes exactly when it holds a
 * state the TypeScript machine could hold, and every field gets the same checks. The
 * parameter digests (layout version 2), the model's snapshot dtype and verification (layout
 * version 3: account_verification.ts) have no place in that encoding's version 1 (whole
 * seconds): they are read beside it, with the checks the state decoder gives them in versions
 * 3, 4 and 5.
 *
 * @module
 */

import {
  decodeCoordinatorState,
  SNAPSHOT_DTYPE_KINDS,
  StateDecodeError,
} from "../../encoding/mod.ts";
import type { RunMetadata } from "./instructions.ts";
import {
  ACCOUNT_LAYOUT_VERSION,
  ACCOUNT_MAGIC_TEXT,
  layoutConstant,
  structLayout,
} from "./layout.ts";
import { CONFIG_V1_BYTES } from "./state_parts.ts";
import { AccountDecodeError, limit } from "./account_error.ts";
import { readAccountVerification } from "./account_verification.ts";
import { readMeetingAddresses } from "./account_meeting.ts";
import type { MeetingAddress } from "./meeting_addresses.ts";
export { AccountDecodeError } from "./account_error.ts";
import {
  type CoordinatorState,
  type DigestRecord,
  type DigestVote,
  MAX_WITNESSES,
  NUM_DIGEST_RECORDS,
  PARAMS_DIGEST_BYTES,
  type SnapshotDtype,
  witnessBloomParameters,
} from "../../core/mod.ts";

/** Layout version this module reads (7: version 6 plus the slashed points). */
export const ACCOUNT_VERSION = ACCOUNT_LAYOUT_VERSION;
/** Size of a coordinator account in bytes. */
export const ACCOUNT_SIZE: number = structLayout("account_t").size;
/** Clients, registrations and delegates the account holds. */
export const ACCOUNT_MAX_CLIENTS: number = layoutConstant("MAX_CLIENTS");
/** The account's first 8 bytes once initialized: "PSYCOORD". */
export const ACCOUNT_MAGIC: Uint8Array = new TextEncoder().encode(ACCOUNT_MAGIC_TEXT);

/** Byte offsets of the account's fields (layout.ts; the docs list every one). */
export const OFFSETS = Object.freeze(structLayout("account_t").offsets) as Readonly<
  Record<
    | "magic"
    | "version"
    | "flags"
    | "nonce"
    | "mainAuthority"
    | "joinAuthority"
    | "authorizer"
    | "runId"
    | "runIdLen"
    | "runState"
    | "pendingPause"
    | "step"
    | "epochStartDataIndex"
    | "epoch"
    | "registryLen"
    | "delegatesLen"
    | "runStateStartUnixTimestamp"
    | "nextActive"
    | "config"
    | "model"
    | "metadata"
    | "epochState"
    | "registry"
    | "delegates"
    | "digestRecordsLen"
    | "digestVotesLen"
    | "digestRecords"
    | "digestVotes"
    | "ejectionsLen"
    | "ejections"
    | "meetingAddressesLen"
    | "meetingAddresses"
    | "currentEpochRates"
    | "futureEpochRates"
    | "earned"
    | "joinDeposit"
    | "deposits"
    | "slashed",
    number
  >
>;

/** Offsets inside each structure, from its start (layout.ts). */
const CONFIG = structLayout("config_t").offsets;
const M = structLayout("model_t").offsets;
const CP = structLayout("checkpoint_t").offsets;
const MD = structLayout("metadata_t").offsets;
const E = structLayout("epoch_state_t").offsets;
const R = structLayout("round_t").offsets;
const W = structLayout("witness_t").offsets;
const B = structLayout("bloom_t").offsets;
const C = structLayout("client_t").offsets;
const REG = structLayout("registration_t").offsets;
const DR = structLayout("digest_record_t").offsets;
const DV = structLayout("digest_vote_t").offsets;
const RATES = structLayout("epoch_rates_t").offsets;
const DEPOSIT = structLayout("join_deposit_t").offsets;

/** Sizes of the repeated structures. */
export const SIZES = Object.freeze({
  config: structLayout("config_t").size,
  model: structLayout("model_t").size,
  metadata: structLayout("metadata_t").size,
  bloom: structLayout("bloom_t").size,
  witness: structLayout("witness_t").size,
  round: structLayout("round_t").size,
  client: structLayout("client_t").size,
  registration: structLayout("registration_t").size,
  digestRecord: structLayout("digest_record_t").size,
  digestVote: structLayout("digest_vote_t").size,
});

/** Capacities of the account's fixed-size fields (layout.ts). */
const CAP = {
  runId: layoutConstant("RUN_ID_BYTES"),
  str: layoutConstant("STR_BYTES"),
  dataLocation: layoutConstant("DATA_LOCATION_BYTES"),
  lrSchedule: layoutConstant("LR_SCHEDULE_BYTES"),
  optimizer: layoutConstant("OPTIMIZER_BYTES"),
  witnesses: layoutConstant("MAX_WITNESSES"),
  rounds: layoutConstant("NUM_ROUNDS"),
  name: layoutConstant("NAME_BYTES"),
  description: layoutConstant("DESCRIPTION_BYTES"),
  delegates: layoutConstant("MAX_DELEGATES"),
  key: 32,
};

/** A client registered to join (`active == nextActive` means pending for the next epoch). */
export interface Registration {
  signer: Uint8Array;
  p2pIdentity: Uint8Array;
  active: bigint;
  /**
   * Points the wallet earned in this run (a share of `earningRateTotalShared` for every epoch it
   * finished Healthy), saturating at 2^64 − 1. A registration the program reuses for another
   * wallet starts again from 0.
   */
  earned: bigint;
  /**
   * The join deposit the wallet holds in the vault (0 when none): paid by a join while the run
   * required one, returned by withdraw_deposit, forfeited when a health check dropped it or
   * verification ejected it (docs/solana-program.md, "Join deposit").
   */
  deposit: bigint;
  /**
   * Slashed points: `slashingRatePerClient` for every epoch that ended successfully with the
   * wallet's client dropped by a health check or ejected by verification, saturating at
   * 2^64 − 1 (docs/solana-program.md, "Slashing"). Informational: nothing is taken from `earned`.
   */
  slashed: bigint;
}

/** The run's join deposit (all zero and null while none was ever set). */
export interface JoinDeposit {
  /** Tokens a join without a held deposit pays; 0 = no deposit. */
  amount: bigint;
  /** Sum of the registrations' deposits. */
  held: bigint;
  /** Deposits forfeited and not yet swept to the main authority's choice of account. */
  forfeited: bigint;
  /** The deposit's SPL mint, or null before the first set_join_deposit. */
  mint: Uint8Array | null;
  /** The vault token account, or null before the first set_join_deposit. */
  vault: Uint8Array | null;
  /** Bump of the vault authority PDA("join_deposit", coordinator). */
  vaultAuthorityBump: number;
}

/** Points an epoch pays (Psyche's `EpochRates`). */
export interface EpochRates {
  /** Shared equally (integer division) by the clients that finish the epoch Healthy. */
  earningRateTotalShared: bigint;
  /** Carried for a treasurer, as Psyche does; the program slashes nothing. */
  slashingRatePerClient: bigint;
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
  /** Where the run's clients meet (relays, bootstrap peers), as the main authority set them. */
  meetingAddresses: MeetingAddress[];
  /** Registrations with `active == nextActive` are pending for the next epoch. */
  nextActive: bigint;
  registry: Registration[];
  /** What the current epoch pays: the future rates as they were when it entered Warmup. */
  currentEpochRates: EpochRates;
  /** What the next epoch will pay (set_future_epoch_rates). */
  futureEpochRates: EpochRates;
  /** The join deposit (set_join_deposit). */
  joinDeposit: JoinDeposit;
  /** The coordinator itself, as the TypeScript machine holds it. */
  state: CoordinatorState;
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

/** The model's snapshot dtype, which version 1 of the state encoding has no place for. */
function readSnapshotDtype(a: Uint8Array, at: number): SnapshotDtype {
  const code = a[at];
  if (code >= SNAPSHOT_DTYPE_KINDS.length) {
    throw new AccountDecodeError(
      "model.snapshotDtype",
      at,
      `unknown code ${code} (expected 0..${SNAPSHOT_DTYPE_KINDS.length - 1}: ` +
        `${SNAPSHOT_DTYPE_KINDS.join(", ")})`,
    );
  }
  return SNAPSHOT_DTYPE_KINDS[code];
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

  const maxClients = u16(OFFSETS.config + CONFIG.maxClients);
  if (maxClients < 1 || maxClients > ACCOUNT_MAX_CLIENTS) {
    throw new AccountDecodeError(
      "config.maxClients",
      OFFSETS.config + CONFIG.maxClients,
      `must be in [1, ${ACCOUNT_MAX_CLIENTS}], found ${maxClients}`,
    );
  }
  const { numBits, numKeys } = witnessBloomParameters(maxClients);

  const t = new Transcriber(bytes);
  t.copy(0, 4); // "PSYC" is the state encoding's magic too
  t.u16(1);
  t.u16(0);
  const runIdLen = limit("runId.length", OFFSETS.runIdLen, bytes[OFFSETS.runIdLen], CAP.runId);
  t.byte(runIdLen);
  t.copy(OFFSETS.runId, runIdLen);
  t.byte(bytes[OFFSETS.runState]);

  const m = OFFSETS.model;
  t.copy(m + M.architecture, 2); // architecture, dataType
  t.copy(m + M.maxSeqLen, 8); // maxSeqLen, coldStartWarmupSteps
  t.copy(
    m + M.dataLocation,
    limit(
      "model.dataLocation.length",
      m + M.dataLocationLen,
      u16(m + M.dataLocationLen),
      CAP.dataLocation,
    ),
  );
  const cp = m + M.checkpoint;
  t.byte(bytes[cp + CP.kind]);
  if (bytes[cp + CP.kind] !== 0) {
    const firstLen = limit(
      "model.checkpoint.repo",
      cp + CP.firstLen,
      bytes[cp + CP.firstLen],
      CAP.str,
    );
    t.byte(firstLen);
    t.copy(cp + CP.first, firstLen);
    t.byte(bytes[cp + CP.hasSecond]);
    if (bytes[cp + CP.hasSecond] !== 0) {
      const secondLen = limit(
        "model.checkpoint.repo",
        cp + CP.secondLen,
        bytes[cp + CP.secondLen],
        CAP.str,
      );
      t.byte(secondLen);
      t.copy(cp + CP.second, secondLen);
    }
  }
  t.copy(
    m + M.lrSchedule,
    limit("model.lrSchedule.length", m + M.lrScheduleLen, u16(m + M.lrScheduleLen), CAP.lrSchedule),
  );
  t.copy(
    m + M.optimizer,
    limit("model.optimizer.length", m + M.optimizerLen, u16(m + M.optimizerLen), CAP.optimizer),
  );

  t.copy(OFFSETS.config, CONFIG_V1_BYTES); // the state encoding's config, verbatim
  t.copy(OFFSETS.epoch, 2);
  t.copy(OFFSETS.step, 4);
  t.copy(OFFSETS.epochStartDataIndex, 8);

  const es = OFFSETS.epochState;
  for (let r = 0; r < CAP.rounds; r++) {
    const base = es + E.rounds + r * SIZES.round;
    const n = limit(
      `epochState.rounds[${r}].witnesses.length`,
      base + R.witnessesLen,
      bytes[base + R.witnessesLen],
      CAP.witnesses,
    );
    t.byte(n);
    for (let w = 0; w < n; w++) {
      const wb = base + R.witnesses + w * SIZES.witness;
      t.copy(wb + W.position, W.witness + 1 - W.position); // position, index, witness
      for (const bloom of [wb + W.participant, wb + W.broadcast]) {
        t.byte(numKeys);
        t.u16(numBits & 0xffff);
        t.u16(numBits >>> 16);
        t.copy(bloom + B.keys, numKeys * 8);
        t.copy(bloom + B.bits, numBits / 8);
      }
      t.copy(wb + W.merkle, CAP.key);
    }
    t.copy(base + R.dataIndex, R.witnessesLen - R.dataIndex); // dataIndex .. tieBreakerTasks
  }
  for (
    const [name, at, lenAt] of [
      ["clients", es + E.clients, es + E.clientsLen],
      ["exitedClients", es + E.exited, es + E.exitedLen],
    ] as const
  ) {
    const n = limit(`epochState.${name}.length`, lenAt, u16(lenAt), ACCOUNT_MAX_CLIENTS);
    t.u16(n);
    for (let i = 0; i < n; i++) {
      const cb = at + i * SIZES.client;
      t.copy(cb + C.signer, 2 * CAP.key); // signer, p2p
      t.byte(bytes[cb + C.state]);
      t.copy(cb + C.exitedHeight, 4);
      t.copy(cb + C.epochIndex, 2);
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
  state.model.snapshotDtype = readSnapshotDtype(bytes, m + M.snapshotDtype);
  const verification = readAccountVerification(bytes, maxClients);
  state.config.verificationBarEpochs = verification.verificationBarEpochs;
  state.epochState.rounds.forEach((round, slot) => round.rejected = verification.rejected[slot]);
  state.epochState.verificationTasks = verification.verificationTasks;
  state.ejections = verification.ejections;

  const registryLen = limit(
    "registry.length",
    OFFSETS.registryLen,
    u16(OFFSETS.registryLen),
    ACCOUNT_MAX_CLIENTS,
  );
  const registry: Registration[] = [];
  for (let i = 0; i < registryLen; i++) {
    const at = OFFSETS.registry + i * SIZES.registration;
    registry.push({
      signer: key(bytes, at + REG.signer),
      p2pIdentity: key(bytes, at + REG.p2p),
      active: v.getBigUint64(at + REG.active, true),
      earned: v.getBigUint64(OFFSETS.earned + i * 8, true),
      deposit: v.getBigUint64(OFFSETS.deposits + i * 8, true),
      slashed: v.getBigUint64(OFFSETS.slashed + i * 8, true),
    });
  }
  for (let i = registryLen; i < ACCOUNT_MAX_CLIENTS; i++) {
    if (v.getBigUint64(OFFSETS.earned + i * 8, true) !== 0n) {
      throw new AccountDecodeError(
        `earned[${i}]`,
        OFFSETS.earned + i * 8,
        `points past registry.length ${registryLen} (must be zero)`,
      );
    }
    if (v.getBigUint64(OFFSETS.deposits + i * 8, true) !== 0n) {
      throw new AccountDecodeError(
        `deposits[${i}]`,
        OFFSETS.deposits + i * 8,
        `a deposit past registry.length ${registryLen} (must be zero)`,
      );
    }
    if (v.getBigUint64(OFFSETS.slashed + i * 8, true) !== 0n) {
      throw new AccountDecodeError(
        `slashed[${i}]`,
        OFFSETS.slashed + i * 8,
        `slashed points past registry.length ${registryLen} (must be zero)`,
      );
    }
  }
  const dd = OFFSETS.joinDeposit;
  const optionalKey = (at: number): Uint8Array | null => {
    const k = key(bytes, at);
    return k.every((b) => b === 0) ? null : k;
  };
  const joinDeposit: JoinDeposit = {
    amount: v.getBigUint64(dd + DEPOSIT.amount, true),
    held: v.getBigUint64(dd + DEPOSIT.held, true),
    forfeited: v.getBigUint64(dd + DEPOSIT.forfeited, true),
    mint: optionalKey(dd + DEPOSIT.mint),
    vault: optionalKey(dd + DEPOSIT.vault),
    vaultAuthorityBump: bytes[dd + DEPOSIT.vaultAuthorityBump],
  };
  const rates = (at: number): EpochRates => ({
    earningRateTotalShared: v.getBigUint64(at + RATES.earningRateTotalShared, true),
    slashingRatePerClient: v.getBigUint64(at + RATES.slashingRatePerClient, true),
  });
  const delegatesLen = limit(
    "delegates.length",
    OFFSETS.delegatesLen,
    u16(OFFSETS.delegatesLen),
    CAP.delegates,
  );
  const delegates: Uint8Array[] = [];
  for (let i = 0; i < delegatesLen; i++) {
    delegates.push(key(bytes, OFFSETS.delegates + i * CAP.key));
  }

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
    name: text("metadata.name", md + MD.name, bytes[md + MD.nameLen], CAP.name),
    description: text(
      "metadata.description",
      md + MD.description,
      u16(md + MD.descriptionLen),
      CAP.description,
    ),
    numParameters: safe("metadata.numParameters", md + MD.numParameters),
    vocabSize: safe("metadata.vocabSize", md + MD.vocabSize),
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
    meetingAddresses: readMeetingAddresses(bytes),
    nextActive: v.getBigUint64(OFFSETS.nextActive, true),
    registry,
    currentEpochRates: rates(OFFSETS.currentEpochRates),
    futureEpochRates: rates(OFFSETS.futureEpochRates),
    joinDeposit,
    state,
  };
}

/** The digest votes and records of the account, checked as the state decoder would. */
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
    const index = v.getUint16(at + DV.index, true);
    if (index >= maxClients || votes.some((x) => x.index === index)) {
      throw new AccountDecodeError(`${field}.index`, at, `${index} is out of range or repeated`);
    }
    votes.push({ index, digest: digestAt(`${field}.digest`, at + DV.digest) });
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
    const step = v.getUint32(at + DR.step, true);
    const previous = records.at(-1)?.step ?? 0;
    if (step <= previous) {
      throw new AccountDecodeError(
        `paramsDigests[${i}].step`,
        at,
        `${step} must be above the previous record's step ${previous}`,
      );
    }
    records.push({ step, digest: digestAt(`paramsDigests[${i}].digest`, at + DR.digest) });
  }
  return { votes, records };
}

/** The registrations pending for the next epoch, in registry order (the tick's pending list). */
export function pendingRegistrations(account: CoordinatorAccount): Registration[] {
  return account.registry.filter((r) => r.active === account.nextActive);
}
