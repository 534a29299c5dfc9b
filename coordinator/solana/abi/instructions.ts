/**
 * The coordinator program's instructions: one discriminated union, one encoder and one
 * decoder (the decoder checks every length and range and throws
 * {@linkcode InstructionDecodeError} naming the field and offset). The byte layout is in
 * docs/solana-program.md; the C side is coordinator/solana/program/program.c.
 *
 * Every instruction's data starts with a u8 tag; fields follow packed and little-endian.
 * Structures the state encoding already defines (config, model, checkpoint, witness,
 * bloom) use that encoding (docs/state-encoding.md).
 *
 * @module
 */

import { MEETING_ADDRESS_KINDS, type MeetingAddress } from "./meeting_addresses.ts";
import {
  CONFIG_WIRE_BYTES,
  decodeConfigBytes,
  decodeModelBytes,
  encodeConfigBytes,
  encodeModelBytes,
} from "./state_parts.ts";
import {
  type Checkpoint,
  type CommitteeProof,
  type CoordinatorConfig,
  type CoordinatorProgress,
  type LlmModel,
  MAX_RUN_ID_BYTES,
  MAX_STRING_BYTES,
  PARAMS_DIGEST_BYTES,
  VERIFICATION_EVIDENCE,
  type VerificationReport,
  type VerificationVerdict,
  type Witness,
  witnessBloomParameters,
  type WitnessProof,
} from "../../core/mod.ts";

/** Instruction tags, in wire order (index = tag). */
export const INSTRUCTION_KINDS = [
  "InitCoordinator",
  "Update",
  "SetPaused",
  "JoinRun",
  "Tick",
  "Witness",
  "WarmupWitness",
  "HealthCheck",
  "Checkpoint",
  "FreeCoordinator",
  "GrantAuthorizer",
  "SetDelegates",
  "CooldownWitness",
  "VerificationReport",
  "SetFutureEpochRates",
  "SetJoinDeposit",
  "WithdrawDeposit",
  "SweepForfeited",
] as const;
/** One of {@linkcode INSTRUCTION_KINDS}. */
export type InstructionKind = typeof INSTRUCTION_KINDS[number];

/** Longest run name in the metadata, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 64;
/** Longest run description in the metadata, in UTF-8 bytes. */
export const MAX_DESCRIPTION_BYTES = 280;
/** Most keys one SetDelegates instruction carries (and the delegate list's capacity). */
export const MAX_DELEGATES = 256;
/** Bytes of one health-check entry: signer, committee, position, index. */
export const HEALTH_ENTRY_BYTES = 41;

/** The update instruction's part flags (its first byte after the tag), in wire order. */
export const UPDATE_PARTS = {
  metadata: 1,
  config: 2,
  model: 4,
  progress: 8,
  meetingAddresses: 16,
} as const;
/** Every part flag at once: a parts byte with any other bit is malformed. */
const ALL_UPDATE_PARTS = 31;

/** The set_future_epoch_rates instruction's rate flags (its first byte after the tag). */
export const EPOCH_RATE_PARTS = { earningRateTotalShared: 1, slashingRatePerClient: 2 } as const;
/** Both rate flags: a flags byte with any other bit, or none, is malformed. */
const ALL_EPOCH_RATE_PARTS = 3;
/** The largest rate or point count the account holds (u64). */
export const MAX_POINTS = 0xffff_ffff_ffff_ffffn;

/** Descriptive run metadata (not used by the state machine). */
export interface RunMetadata {
  name: string;
  description: string;
  /** Parameters of the model (u64, at most 2^53 - 1 here). */
  numParameters: number;
  vocabSize: number;
}

/** One health-check entry: the client's signer and its committee proof of the previous round. */
export interface HealthCheckEntry {
  signer: Uint8Array;
  proof: CommitteeProof;
}

/** Every instruction of the coordinator program. */
export type CoordinatorInstruction =
  | {
    kind: "InitCoordinator";
    /** 1..32 UTF-8 bytes; also the seed of the account address. */
    runId: string;
    joinAuthority: Uint8Array;
    /** Anyone may join (no authorizer needed). Fixed for the run's life. */
    permissionless: boolean;
  }
  | {
    kind: "Update";
    metadata?: RunMetadata;
    config?: CoordinatorConfig;
    model?: LlmModel;
    progress?: CoordinatorProgress;
    /**
     * Replaces the run's meeting addresses (an empty list clears them). The codec carries up
     * to 255 entries of up to 255 bytes; the program refuses more than 4, longer than 192 bytes
     * or not multiaddr-ish (`InvalidMeetingAddress`, meeting_addresses.ts).
     */
    meetingAddresses?: MeetingAddress[];
  }
  | { kind: "SetPaused"; paused: boolean }
  | { kind: "JoinRun"; p2pIdentity: Uint8Array }
  | { kind: "Tick" }
  /**
   * `paramsDigest`: the witness's parameter digest (all zero: none), a vote for the step.
   * `metadata`: an optional tail the program checks (size, finite numbers) and otherwise
   * ignores; dashboards read it back from the transaction (the loss curve).
   */
  | { kind: "Witness"; witness: Witness; paramsDigest: Uint8Array; metadata?: WitnessTail }
  | { kind: "WarmupWitness"; witness: Witness; paramsDigest: Uint8Array }
  | { kind: "HealthCheck"; checks: HealthCheckEntry[] }
  | { kind: "Checkpoint"; index: number; repo: Checkpoint }
  | { kind: "FreeCoordinator" }
  | { kind: "GrantAuthorizer"; authorizer: Uint8Array }
  | { kind: "SetDelegates"; clear: boolean; delegates: Uint8Array[] }
  /** A witness of the last round reports the parameters the next epoch starts from. */
  | { kind: "CooldownWitness"; proof: WitnessProof; paramsDigest: Uint8Array }
  /**
   * A seated verifier's verdict on a sampled result (coordinator/core/verification.ts
   * `verificationReport`). A pass with evidence or a fail without decodes, and the program
   * refuses it (`InvalidVerification`), as the machine does.
   */
  | { kind: "VerificationReport"; report: VerificationReport }
  /**
   * The rates the next epoch pays (main authority only); a rate left out keeps its value (as
   * Psyche's `set_future_epoch_rates` takes each as an `Option`). At least one is given.
   */
  | {
    kind: "SetFutureEpochRates";
    earningRateTotalShared?: bigint;
    slashingRatePerClient?: bigint;
  }
  /**
   * The join deposit (main authority only): `amount` tokens of the vault's mint (u64; 0 = off).
   * Accounts after the authority: the vault, a token account owned by the vault authority PDA
   * (docs/solana-program.md, "Join deposit").
   */
  | { kind: "SetJoinDeposit"; amount: bigint }
  /**
   * The signer's deposit back from the vault. Accounts after the signer: the token account to
   * pay, the vault, SPL Token, the vault authority. `registration` (u16, optional) is the
   * signer's registry slot: the program checks it names the signer's registration and, if not
   * (or when it is left out, the original format), searches the registry from slot 0, so a hint
   * only saves compute units (~18,000 at 256 registrations).
   */
  | { kind: "WithdrawDeposit"; registration?: number }
  /**
   * The forfeited deposits to a token account (main authority only). Accounts after the
   * authority: the destination, the vault, SPL Token, the vault authority.
   */
  | { kind: "SweepForfeited" };

/**
 * The witness instruction's optional metadata tail: the part of Psyche's WitnessMetadata a loss
 * curve needs, at a fixed size (the evals and prompt results stay off the chain).
 */
export interface WitnessTail {
  readonly step: number;
  readonly loss: number;
  readonly tokensPerSec: number;
  readonly bandwidthPerSec: number;
  readonly efficiency: number;
}

/** Bytes of a {@linkcode WitnessTail}: step u32, then four finite f64 (little-endian). */
export const WITNESS_TAIL_BYTES = 4 + 4 * 8;

/** The tail's f64 fields, in wire order. */
const TAIL_NUMBERS = ["loss", "tokensPerSec", "bandwidthPerSec", "efficiency"] as const;

/** Instruction data that does not decode. */
export class InstructionDecodeError extends Error {
  readonly field: string;
  readonly offset: number;
  constructor(field: string, offset: number, detail: string) {
    super(`Cannot decode instruction field "${field}" at offset ${offset}: ${detail}`);
    this.name = "InstructionDecodeError";
    this.field = field;
    this.offset = offset;
  }
}

const COMMITTEES = ["TieBreaker", "Verifier", "Trainer"] as const;
/** A report's verdict codes (the TCP server's too: coordinator/server/protocol_fields.ts). */
const VERDICTS: readonly VerificationVerdict[] = ["Pass", "Fail"];
/** Bytes of a verification report's data after the tag. */
export const VERIFICATION_REPORT_BYTES = 4 + 2 + 1 + 1 + 4;
const utf8 = new TextEncoder();
const utf8Strict = new TextDecoder("utf-8", { fatal: true });

class Out {
  readonly bytes: number[] = [];
  u8(v: number): void {
    this.bytes.push(v & 0xff);
  }
  u16(v: number): void {
    this.u8(v);
    this.u8(v >>> 8);
  }
  u32(v: number): void {
    this.u16(v & 0xffff);
    this.u16(v >>> 16);
  }
  u64(v: bigint): void {
    for (let i = 0n; i < 8n; i++) this.u8(Number((v >> (8n * i)) & 0xffn));
  }
  f64(v: number): void {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, true);
    this.raw(b);
  }
  raw(b: Uint8Array): void {
    for (const x of b) this.bytes.push(x);
  }
  done(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

function checkInt(field: string, v: number, max: number): void {
  if (!Number.isSafeInteger(v) || v < 0 || v > max) {
    throw new RangeError(`${field} must be an integer in [0, ${max}], found ${String(v)}`);
  }
}

function checkRate(field: string, v: bigint): bigint {
  if (typeof v !== "bigint" || v < 0n || v > MAX_POINTS) {
    throw new RangeError(`${field} must be a u64 (0..2^64 - 1), found ${String(v)}`);
  }
  return v;
}

function checkKey(field: string, k: Uint8Array): void {
  if (!(k instanceof Uint8Array) || k.length !== 32) {
    throw new RangeError(`${field} must be 32 bytes`);
  }
}

function strBytes(field: string, s: string, max: number): Uint8Array {
  const b = utf8.encode(s);
  if (typeof s !== "string" || !s.isWellFormed() || b.length > max) {
    throw new RangeError(`${field} must be a string of at most ${max} UTF-8 bytes`);
  }
  return b;
}

/** The state encoding of a Checkpoint (code, then the repo strings). */
export function encodeCheckpointBytes(c: Checkpoint): Uint8Array {
  const o = new Out();
  const kinds = ["Ephemeral", "Dummy", "Hub", "P2P", "Gcs", "P2PGcs"];
  const code = kinds.indexOf(c.kind);
  if (code < 0) throw new RangeError(`unknown checkpoint kind ${String(c.kind)}`);
  o.u8(code);
  if (c.kind === "Ephemeral") return o.done();
  const [first, second] = c.kind === "Gcs" || c.kind === "P2PGcs"
    ? [c.repo.bucket, c.repo.prefix]
    : [c.repo.repoId, c.repo.revision];
  const a = strBytes("checkpoint repo", first, MAX_STRING_BYTES);
  o.u8(a.length);
  o.raw(a);
  o.u8(second === null ? 0 : 1);
  if (second !== null) {
    const b = strBytes("checkpoint repo", second, MAX_STRING_BYTES);
    o.u8(b.length);
    o.raw(b);
  }
  return o.done();
}

function writeProof(o: Out, p: string, proof: WitnessProof): void {
  checkInt(`${p}.position`, proof.position, 0xffff_ffff);
  checkInt(`${p}.index`, proof.index, 0xffff_ffff);
  o.u32(proof.position);
  o.u32(proof.index);
  o.u8(proof.witness ? 1 : 0);
}

function writeDigest(o: Out, digest: Uint8Array): void {
  if (!(digest instanceof Uint8Array) || digest.length !== PARAMS_DIGEST_BYTES) {
    throw new RangeError(`paramsDigest must be ${PARAMS_DIGEST_BYTES} bytes`);
  }
  o.raw(digest);
}

function writeWitness(o: Out, w: Witness): void {
  writeProof(o, "witness.proof", w.proof);
  for (const b of [w.participantBloom, w.broadcastBloom]) {
    checkInt("bloom keys", b.keys.length, 32);
    o.u8(b.keys.length);
    o.u32(b.bits.length * 8);
    for (const k of b.keys) o.u64(k);
    o.raw(b.bits);
  }
  if (w.broadcastMerkle.length !== 32) throw new RangeError("broadcastMerkle must be 32 bytes");
  o.raw(w.broadcastMerkle);
}

/** u32 height, u16 trainer (epoch index), u8 verdict (0 Pass, 1 Fail), u8 evidence, u32 detail. */
function writeReport(o: Out, r: VerificationReport): void {
  checkInt("report.height", r.height, 0xffff_ffff);
  checkInt("report.trainer", r.trainer, 0xffff);
  checkInt("report.detail", r.detail, 0xffff_ffff);
  const verdict = VERDICTS.indexOf(r.verdict);
  if (verdict < 0) throw new RangeError(`report.verdict must be Pass or Fail, found ${r.verdict}`);
  const evidence = VERIFICATION_EVIDENCE.indexOf(r.evidence);
  if (evidence < 0) throw new RangeError(`report.evidence is unknown: ${String(r.evidence)}`);
  o.u32(r.height);
  o.u16(r.trainer);
  o.u8(verdict);
  o.u8(evidence);
  o.u32(r.detail);
}

/** count `u8`, then per entry kind `u8` (0 Relay, 1 Bootstrap), length `u8`, the UTF-8 bytes. */
function writeMeetingPart(o: Out, list: readonly MeetingAddress[]): void {
  checkInt("meetingAddresses.length", list.length, 0xff);
  o.u8(list.length);
  list.forEach((entry, i) => {
    const kind = MEETING_ADDRESS_KINDS.indexOf(entry.kind);
    if (kind < 0) throw new RangeError(`meetingAddresses[${i}].kind is unknown: ${entry.kind}`);
    const bytes = strBytes(`meetingAddresses[${i}].address`, entry.address, 0xff);
    o.u8(kind);
    o.u8(bytes.length);
    o.raw(bytes);
  });
}

function writeTail(o: Out, t: WitnessTail): void {
  checkInt("metadata.step", t.step, 0xffff_ffff);
  o.u32(t.step);
  for (const name of TAIL_NUMBERS) {
    if (!Number.isFinite(t[name])) {
      throw new RangeError(`metadata.${name} must be finite, found ${t[name]}`);
    }
    o.f64(t[name]);
  }
}

/**
 * The instruction data of `ix`. Throws RangeError naming the field when a value cannot be
 * carried (a run id over 32 bytes, a key that is not 32 bytes, too many entries).
 */
export function encodeCoordinatorInstruction(ix: CoordinatorInstruction): Uint8Array {
  const o = new Out();
  o.u8(INSTRUCTION_KINDS.indexOf(ix.kind));
  switch (ix.kind) {
    case "InitCoordinator": {
      const id = strBytes("runId", ix.runId, MAX_RUN_ID_BYTES);
      checkKey("joinAuthority", ix.joinAuthority);
      o.u8(id.length);
      o.raw(id);
      o.raw(ix.joinAuthority);
      o.u8(ix.permissionless ? 1 : 0);
      break;
    }
    case "Update": {
      const parts = (ix.metadata ? UPDATE_PARTS.metadata : 0) |
        (ix.config ? UPDATE_PARTS.config : 0) | (ix.model ? UPDATE_PARTS.model : 0) |
        (ix.progress ? UPDATE_PARTS.progress : 0) |
        (ix.meetingAddresses !== undefined ? UPDATE_PARTS.meetingAddresses : 0);
      if (parts === 0) throw new RangeError("Update must carry at least one part");
      o.u8(parts);
      if (ix.metadata) {
        const name = strBytes("metadata.name", ix.metadata.name, MAX_NAME_BYTES);
        const desc = strBytes(
          "metadata.description",
          ix.metadata.description,
          MAX_DESCRIPTION_BYTES,
        );
        checkInt("metadata.numParameters", ix.metadata.numParameters, Number.MAX_SAFE_INTEGER);
        checkInt("metadata.vocabSize", ix.metadata.vocabSize, Number.MAX_SAFE_INTEGER);
        o.u8(name.length);
        o.raw(name);
        o.u16(desc.length);
        o.raw(desc);
        o.u64(BigInt(ix.metadata.numParameters));
        o.u64(BigInt(ix.metadata.vocabSize));
      }
      if (ix.config) o.raw(encodeConfigBytes(ix.config));
      if (ix.model) {
        const m = encodeModelBytes(ix.model);
        o.u16(m.length);
        o.raw(m);
      }
      if (ix.progress) {
        checkInt("progress.epoch", ix.progress.epoch, 0xffff);
        checkInt("progress.step", ix.progress.step, 0xffff_ffff);
        checkInt(
          "progress.epochStartDataIndex",
          ix.progress.epochStartDataIndex,
          Number.MAX_SAFE_INTEGER,
        );
        o.u16(ix.progress.epoch);
        o.u32(ix.progress.step);
        o.u64(BigInt(ix.progress.epochStartDataIndex));
      }
      if (ix.meetingAddresses !== undefined) writeMeetingPart(o, ix.meetingAddresses);
      break;
    }
    case "SetPaused":
      o.u8(ix.paused ? 1 : 0);
      break;
    case "JoinRun":
      checkKey("p2pIdentity", ix.p2pIdentity);
      o.raw(ix.p2pIdentity);
      break;
    case "Tick":
    case "FreeCoordinator":
    case "SweepForfeited":
      break;
    case "WithdrawDeposit":
      if (ix.registration !== undefined) {
        checkInt("registration", ix.registration, 0xffff);
        o.u16(ix.registration);
      }
      break;
    case "SetJoinDeposit":
      o.u64(checkRate("amount", ix.amount));
      break;
    case "Witness":
    case "WarmupWitness":
      writeWitness(o, ix.witness);
      writeDigest(o, ix.paramsDigest);
      if (ix.kind === "Witness" && ix.metadata !== undefined) writeTail(o, ix.metadata);
      break;
    case "CooldownWitness":
      writeProof(o, "proof", ix.proof);
      writeDigest(o, ix.paramsDigest);
      break;
    case "VerificationReport":
      writeReport(o, ix.report);
      break;
    case "SetFutureEpochRates": {
      const earning = ix.earningRateTotalShared, slashing = ix.slashingRatePerClient;
      if (earning === undefined && slashing === undefined) {
        throw new RangeError("SetFutureEpochRates must carry at least one rate");
      }
      o.u8(
        (earning !== undefined ? EPOCH_RATE_PARTS.earningRateTotalShared : 0) |
          (slashing !== undefined ? EPOCH_RATE_PARTS.slashingRatePerClient : 0),
      );
      if (earning !== undefined) o.u64(checkRate("earningRateTotalShared", earning));
      if (slashing !== undefined) o.u64(checkRate("slashingRatePerClient", slashing));
      break;
    }
    case "HealthCheck":
      checkInt("checks.length", ix.checks.length, 0xff);
      o.u8(ix.checks.length);
      ix.checks.forEach((c, i) => {
        checkKey(`checks[${i}].signer`, c.signer);
        checkInt(`checks[${i}].proof.position`, c.proof.position, 0xffff_ffff);
        checkInt(`checks[${i}].proof.index`, c.proof.index, 0xffff_ffff);
        const committee = COMMITTEES.indexOf(c.proof.committee);
        if (committee < 0) throw new RangeError(`checks[${i}].proof.committee is unknown`);
        o.raw(c.signer);
        o.u8(committee);
        o.u32(c.proof.position);
        o.u32(c.proof.index);
      });
      break;
    case "Checkpoint":
      checkInt("index", ix.index, 0xffff_ffff);
      o.u32(ix.index);
      o.raw(encodeCheckpointBytes(ix.repo));
      break;
    case "GrantAuthorizer":
      checkKey("authorizer", ix.authorizer);
      o.raw(ix.authorizer);
      break;
    case "SetDelegates":
      checkInt("delegates.length", ix.delegates.length, 0xff);
      o.u8(ix.clear ? 1 : 0);
      o.u8(ix.delegates.length);
      ix.delegates.forEach((k, i) => {
        checkKey(`delegates[${i}]`, k);
        o.raw(k);
      });
      break;
    default: {
      const never: never = ix;
      throw new RangeError(`unknown instruction ${JSON.stringify(never)}`);
    }
  }
  return o.done();
}

class In {
  pos = 0;
  readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  fail(field: string, detail: string, at = this.pos): never {
    throw new InstructionDecodeError(field, at, detail);
  }
  take(field: string, n: number): Uint8Array {
    const left = this.bytes.length - this.pos;
    if (n > left) this.fail(field, `truncated: needs ${n} bytes, only ${left} left`);
    const out = this.bytes.slice(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  u8(field: string): number {
    return this.take(field, 1)[0];
  }
  u16(field: string): number {
    const at = this.pos;
    this.take(field, 2);
    return this.view.getUint16(at, true);
  }
  u32(field: string): number {
    const at = this.pos;
    this.take(field, 4);
    return this.view.getUint32(at, true);
  }
  u64(field: string): bigint {
    const at = this.pos;
    this.take(field, 8);
    return this.view.getBigUint64(at, true);
  }
  /** A finite f64, as the program's `skip_f64` checks it. */
  finite(field: string): number {
    const at = this.pos;
    this.take(field, 8);
    const v = this.view.getFloat64(at, true);
    if (!Number.isFinite(v)) this.fail(field, `${v} is not finite`, at);
    return v;
  }
  safe(field: string): number {
    const at = this.pos;
    const v = this.u64(field);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(field, `${v} exceeds 2^53 - 1`, at);
    return Number(v);
  }
  /** A code below `table.length`, as the program's `get_code` checks it. */
  code<T>(field: string, table: readonly T[]): T {
    const at = this.pos;
    const v = this.u8(field);
    if (v >= table.length) {
      this.fail(field, `unknown code ${v} (expected 0..${table.length - 1})`, at);
    }
    return table[v];
  }
  bool(field: string): boolean {
    const at = this.pos;
    const v = this.u8(field);
    if (v > 1) this.fail(field, `expected 0 or 1, found ${v}`, at);
    return v === 1;
  }
  str(field: string, n: number, max: number): string {
    const at = this.pos;
    if (n > max) this.fail(field, `${n} bytes exceeds the cap of ${max}`, at);
    const raw = this.take(field, n);
    try {
      return utf8Strict.decode(raw);
    } catch {
      return this.fail(field, "not valid UTF-8", at);
    }
  }
  end(): void {
    if (this.pos !== this.bytes.length) {
      this.fail("end", `${this.bytes.length - this.pos} trailing bytes`);
    }
  }
}

function readCheckpoint(r: In, field: string): Checkpoint {
  const at = r.pos;
  const kinds = ["Ephemeral", "Dummy", "Hub", "P2P", "Gcs", "P2PGcs"] as const;
  const kind = kinds[r.u8(`${field}.kind`)];
  if (kind === undefined) r.fail(`${field}.kind`, "unknown checkpoint kind", at);
  if (kind === "Ephemeral") return { kind };
  const first = r.str(`${field}.repo`, r.u8(`${field}.repo`), MAX_STRING_BYTES);
  const second = r.bool(`${field}.repo (second present)`)
    ? r.str(`${field}.repo`, r.u8(`${field}.repo`), MAX_STRING_BYTES)
    : null;
  if (kind === "Gcs" || kind === "P2PGcs") return { kind, repo: { bucket: first, prefix: second } };
  return { kind, repo: { repoId: first, revision: second } };
}

/**
 * The meeting part as the wire carries it: any count and length a byte holds, UTF-8 text. The
 * capacities and the address rule are the program's to check (`InvalidMeetingAddress`), so the
 * reference model sees what the program sees.
 */
function readMeetingPart(r: In): MeetingAddress[] {
  const n = r.u8("meetingAddresses.length");
  const out: MeetingAddress[] = [];
  for (let i = 0; i < n; i++) {
    const kind = r.code(`meetingAddresses[${i}].kind`, MEETING_ADDRESS_KINDS);
    const field = `meetingAddresses[${i}].address`;
    out.push({ kind, address: r.str(field, r.u8(`${field}.length`), 0xff) });
  }
  return out;
}

function readWitness(r: In): Witness {
  const position = r.u32("witness.proof.position");
  const index = r.u32("witness.proof.index");
  const flag = r.bool("witness.proof.witness");
  const blooms = ["participantBloom", "broadcastBloom"].map((name) => {
    const at = r.pos;
    const k = r.u8(`witness.${name}.keys.length`);
    const m = r.u32(`witness.${name}.bits.length`);
    if (k > 32 || m % 8 !== 0 || m > 8 * 312) {
      r.fail(`witness.${name}`, `${k} keys and ${m} bits is not a witness bloom`, at);
    }
    const keys = new BigUint64Array(k);
    for (let i = 0; i < k; i++) keys[i] = r.u64(`witness.${name}.keys[${i}]`);
    return { keys, bits: r.take(`witness.${name}.bits`, m / 8) };
  });
  return {
    proof: { position, index, witness: flag },
    participantBloom: blooms[0],
    broadcastBloom: blooms[1],
    broadcastMerkle: r.take("witness.broadcastMerkle", 32),
  };
}

/**
 * Decodes instruction data (the inverse of {@linkcode encodeCoordinatorInstruction}).
 * Throws {@linkcode InstructionDecodeError} on an unknown tag, truncation, trailing bytes,
 * bad booleans, codes or strings; the model and config parts raise the state decoder's
 * `StateDecodeError`.
 */
export function decodeCoordinatorInstruction(data: Uint8Array): CoordinatorInstruction {
  const r = new In(data);
  const tag = r.u8("tag");
  const kind = INSTRUCTION_KINDS[tag];
  if (kind === undefined) r.fail("tag", `unknown instruction tag ${tag}`, 0);
  let ix: CoordinatorInstruction;
  switch (kind) {
    case "InitCoordinator": {
      const runId = r.str("runId", r.u8("runId.length"), MAX_RUN_ID_BYTES);
      const joinAuthority = r.take("joinAuthority", 32);
      const at = r.pos;
      const flags = r.u8("flags");
      if (flags > 1) r.fail("flags", `unknown flags ${flags}`, at);
      ix = { kind, runId, joinAuthority, permissionless: flags === 1 };
      break;
    }
    case "Update": {
      const parts = r.u8("parts");
      if (parts === 0 || parts > ALL_UPDATE_PARTS) {
        r.fail("parts", `invalid part flags ${parts}`, 0);
      }
      const u: CoordinatorInstruction & { kind: "Update" } = { kind };
      if (parts & UPDATE_PARTS.metadata) {
        const name = r.str("metadata.name", r.u8("metadata.name.length"), MAX_NAME_BYTES);
        const description = r.str(
          "metadata.description",
          r.u16("metadata.description.length"),
          MAX_DESCRIPTION_BYTES,
        );
        u.metadata = {
          name,
          description,
          numParameters: r.safe("metadata.numParameters"),
          vocabSize: r.safe("metadata.vocabSize"),
        };
      }
      if (parts & UPDATE_PARTS.config) {
        u.config = decodeConfigBytes(r.take("config", CONFIG_WIRE_BYTES));
      }
      if (parts & UPDATE_PARTS.model) {
        u.model = decodeModelBytes(r.take("model", r.u16("model.length")));
      }
      if (parts & UPDATE_PARTS.progress) {
        u.progress = {
          epoch: r.u16("progress.epoch"),
          step: r.u32("progress.step"),
          epochStartDataIndex: r.safe("progress.epochStartDataIndex"),
        };
      }
      if (parts & UPDATE_PARTS.meetingAddresses) u.meetingAddresses = readMeetingPart(r);
      ix = u;
      break;
    }
    case "SetPaused":
      ix = { kind, paused: r.bool("paused") };
      break;
    case "JoinRun":
      ix = { kind, p2pIdentity: r.take("p2pIdentity", 32) };
      break;
    case "Tick":
    case "FreeCoordinator":
    case "SweepForfeited":
      ix = { kind };
      break;
    case "WithdrawDeposit":
      ix = r.pos < data.length ? { kind, registration: r.u16("registration") } : { kind };
      break;
    case "SetJoinDeposit":
      ix = { kind, amount: r.u64("amount") };
      break;
    case "Witness":
    case "WarmupWitness": {
      const witness = readWitness(r);
      const paramsDigest = r.take("paramsDigest", 32);
      if (kind === "Witness" && r.pos < data.length) {
        const step = r.u32("metadata.step");
        const [loss, tokensPerSec, bandwidthPerSec, efficiency] = TAIL_NUMBERS.map((n) =>
          r.finite(`metadata.${n}`)
        );
        const metadata = { step, loss, tokensPerSec, bandwidthPerSec, efficiency };
        ix = { kind, witness, paramsDigest, metadata };
      } else {
        ix = { kind, witness, paramsDigest };
      }
      break;
    }
    case "CooldownWitness": {
      const position = r.u32("proof.position");
      const index = r.u32("proof.index");
      const witness = r.bool("proof.witness");
      ix = {
        kind,
        proof: { position, index, witness },
        paramsDigest: r.take("paramsDigest", PARAMS_DIGEST_BYTES),
      };
      break;
    }
    case "VerificationReport": {
      const height = r.u32("report.height");
      const trainer = r.u16("report.trainer");
      const verdict = r.code("report.verdict", VERDICTS);
      const evidence = r.code("report.evidence", VERIFICATION_EVIDENCE);
      ix = { kind, report: { height, trainer, verdict, evidence, detail: r.u32("report.detail") } };
      break;
    }
    case "HealthCheck": {
      const n = r.u8("checks.length");
      const checks: HealthCheckEntry[] = [];
      for (let i = 0; i < n; i++) {
        const signer = r.take(`checks[${i}].signer`, 32);
        const at = r.pos;
        const committee = COMMITTEES[r.u8(`checks[${i}].committee`)];
        if (committee === undefined) r.fail(`checks[${i}].committee`, "unknown committee", at);
        const position = r.u32(`checks[${i}].position`);
        const index = r.u32(`checks[${i}].index`);
        checks.push({ signer, proof: { committee, position, index } });
      }
      ix = { kind, checks };
      break;
    }
    case "Checkpoint":
      ix = { kind, index: r.u32("index"), repo: readCheckpoint(r, "repo") };
      break;
    case "GrantAuthorizer":
      ix = { kind, authorizer: r.take("authorizer", 32) };
      break;
    case "SetFutureEpochRates": {
      const parts = r.u8("parts");
      if (parts === 0 || parts > ALL_EPOCH_RATE_PARTS) {
        r.fail("parts", `invalid rate flags ${parts}`, 1);
      }
      const rates: CoordinatorInstruction & { kind: "SetFutureEpochRates" } = { kind };
      if (parts & EPOCH_RATE_PARTS.earningRateTotalShared) {
        rates.earningRateTotalShared = r.u64("earningRateTotalShared");
      }
      if (parts & EPOCH_RATE_PARTS.slashingRatePerClient) {
        rates.slashingRatePerClient = r.u64("slashingRatePerClient");
      }
      ix = rates;
      break;
    }
    case "SetDelegates": {
      const clear = r.bool("clear");
      const n = r.u8("delegates.length");
      const delegates: Uint8Array[] = [];
      for (let i = 0; i < n; i++) delegates.push(r.take(`delegates[${i}]`, 32));
      ix = { kind, clear, delegates };
      break;
    }
  }
  r.end();
  return ix;
}

/**
 * Bytes of a witness instruction's data for a run capped at `maxClients` clients, without the
 * optional metadata tail ({@linkcode WITNESS_TAIL_BYTES} more with it).
 */
export function witnessInstructionBytes(maxClients: number): number {
  const { numBits, numKeys } = witnessBloomParameters(maxClients);
  return 1 + 9 + 2 * (5 + 8 * numKeys + numBits / 8) + 32 + PARAMS_DIGEST_BYTES;
}
