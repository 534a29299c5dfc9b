/**
 * The encoder of the coordinator-state layout (see encoding.ts and
 * docs/state-encoding.md): walks a CoordinatorState field by field, checking that each
 * value fits its field and naming the path when it does not.
 *
 * @module
 */

import {
  ARCHITECTURE_KINDS,
  CHECKPOINT_KINDS,
  DATA_LOCATION_KINDS,
  DATA_TYPE_KINDS,
  describe,
  DIGESTS_SINCE_VERSION,
  HTTP_LOCATION_KINDS,
  LR_SCHEDULE_KINDS,
  OPTIMIZER_KINDS,
  SEAT_VERDICT_KINDS,
  SHUFFLE_KINDS,
  SNAPSHOT_DTYPE_KINDS,
  SNAPSHOT_DTYPE_SINCE_VERSION,
  STATE_ENCODING_VERSION,
  STATE_ENCODING_VERSIONS,
  STATE_MAGIC,
  type StateEncodingVersion,
  TOKEN_SIZE_KINDS,
  VERIFICATION_SINCE_VERSION,
} from "./layout.ts";
import {
  type Bloom,
  type Checkpoint,
  type Client,
  CLIENT_STATES,
  type CoordinatorConfig,
  type CoordinatorState,
  DEFAULT_VERIFICATION_BAR_EPOCHS,
  type DigestRecord,
  type DigestVote,
  EJECTION_CAUSES,
  type EjectionRecord,
  type EpochState,
  type LlmModel,
  MAX_RUN_ID_BYTES,
  MAX_STRING_BYTES,
  MAX_URL_BYTES,
  MAX_VERIFICATION_TASKS,
  MAX_WITNESSES,
  NUM_DIGEST_RECORDS,
  NUM_EJECTION_RECORDS,
  NUM_STORED_ROUNDS,
  PARAMS_DIGEST_BYTES,
  type Round,
  RUN_STATES,
  VERIFICATION_EVIDENCE,
  VERIFICATION_STAGES,
  type VerificationSeat,
  type VerificationTask,
  VERIFIERS_PER_TASK,
  type Witness,
  witnessBloomParameters,
} from "../core/mod.ts";
import {
  type DataLocation,
  type GcsRepo,
  type HttpLocation,
  type HubRepo,
  isMillisecondTime,
  type LrSchedule,
  MAX_TIME_SECONDS,
  type OptimizerDefinition,
  toMillis,
} from "../../common/mod.ts";

const utf8 = new TextEncoder();

class Writer {
  readonly version: StateEncodingVersion;
  #buf = new Uint8Array(1024);
  #view = new DataView(this.#buf.buffer);
  #len = 0;

  #reserve(n: number): number {
    if (this.#len + n > this.#buf.length) {
      const next = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + n));
      next.set(this.#buf.subarray(0, this.#len));
      this.#buf = next;
      this.#view = new DataView(next.buffer);
    }
    const at = this.#len;
    this.#len += n;
    return at;
  }

  constructor(version: StateEncodingVersion) {
    this.version = version;
  }

  #int(path: string, v: unknown, max: number): number {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > max) {
      throw new RangeError(`${path} must be an integer in [0, ${max}], found ${describe(v)}`);
    }
    return v;
  }

  u8(path: string, v: unknown): void {
    const n = this.#int(path, v, 0xff);
    const at = this.#reserve(1);
    this.#buf[at] = n;
  }
  u16(path: string, v: unknown): void {
    const n = this.#int(path, v, 0xffff);
    const at = this.#reserve(2);
    this.#view.setUint16(at, n, true);
  }
  u32(path: string, v: unknown): void {
    const n = this.#int(path, v, 0xffff_ffff);
    const at = this.#reserve(4);
    this.#view.setUint32(at, n, true);
  }
  /** A `number` stored as u64: must be a safe integer. */
  u64(path: string, v: unknown): void {
    const n = this.#int(path, v, Number.MAX_SAFE_INTEGER);
    const at = this.#reserve(8);
    this.#view.setBigUint64(at, BigInt(n), true);
  }
  /**
   * A time or duration in seconds: integer milliseconds in version 2 (a u64, or a u32 for
   * `narrow` fields), whole seconds in version 1 (a u64, or a u8 for `narrow` fields).
   */
  seconds(path: string, v: unknown, narrow = false): void {
    if (this.version === 1) {
      if (typeof v !== "number" || !Number.isInteger(v)) {
        throw new RangeError(
          `${path} must be whole seconds in state encoding version 1 (the Solana program's ` +
            `layout), found ${describe(v)}`,
        );
      }
      if (narrow) this.u8(path, v);
      else this.u64(path, v);
      return;
    }
    if (typeof v !== "number" || !isMillisecondTime(v) || v > MAX_TIME_SECONDS) {
      throw new RangeError(
        `${path} must be seconds in [0, ${MAX_TIME_SECONDS}] with at most millisecond ` +
          `precision, found ${describe(v)}`,
      );
    }
    if (narrow) this.u32(path, toMillis(v));
    else this.u64(path, toMillis(v));
  }
  u64big(path: string, v: unknown): void {
    if (typeof v !== "bigint" || v < 0n || v >= 1n << 64n) {
      throw new RangeError(`${path} must be a u64 bigint, found ${describe(v)}`);
    }
    const at = this.#reserve(8);
    this.#view.setBigUint64(at, v, true);
  }
  f64(path: string, v: unknown): void {
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new RangeError(`${path} must be a finite number, found ${describe(v)}`);
    }
    const at = this.#reserve(8);
    this.#view.setFloat64(at, v, true);
  }
  bool(path: string, v: unknown): void {
    if (typeof v !== "boolean") {
      throw new TypeError(`${path} must be a boolean, found ${describe(v)}`);
    }
    const at = this.#reserve(1);
    this.#buf[at] = v ? 1 : 0;
  }
  bytes(path: string, v: unknown, length: number): void {
    if (!(v instanceof Uint8Array) || v.length !== length) {
      throw new RangeError(`${path} must be ${length} bytes, found ${describe(v)}`);
    }
    const at = this.#reserve(length);
    this.#buf.set(v, at);
  }
  str(path: string, v: unknown, maxBytes: number): void {
    if (typeof v !== "string") {
      throw new TypeError(`${path} must be a string, found ${describe(v)}`);
    }
    if (!v.isWellFormed()) throw new RangeError(`${path} contains a lone UTF-16 surrogate`);
    const b = utf8.encode(v);
    if (b.length > maxBytes) {
      throw new RangeError(`${path} is ${b.length} UTF-8 bytes, more than the ${maxBytes} allowed`);
    }
    this.u8(path, b.length);
    const at = this.#reserve(b.length);
    this.#buf.set(b, at);
  }
  optStr(path: string, v: unknown, maxBytes: number): void {
    this.bool(`${path} (present)`, v !== null);
    if (v !== null) this.str(path, v, maxBytes);
  }
  optF64(path: string, v: unknown): void {
    this.bool(`${path} (present)`, v !== null);
    if (v !== null) this.f64(path, v);
  }
  code<K extends string>(path: string, v: unknown, table: readonly K[]): void {
    const i = table.indexOf(v as K);
    if (i < 0) {
      throw new RangeError(`${path} must be one of ${table.join(", ")}, found ${describe(v)}`);
    }
    this.u8(path, i);
  }
  list<T>(
    path: string,
    v: unknown,
    cap: number,
    countBytes: 1 | 2,
    item: (x: T, p: string) => void,
  ): void {
    if (!Array.isArray(v)) throw new TypeError(`${path} must be an array, found ${describe(v)}`);
    if (v.length > cap) {
      throw new RangeError(`${path} has ${v.length} items, more than the cap ${cap}`);
    }
    if (countBytes === 1) this.u8(`${path}.length`, v.length);
    else this.u16(`${path}.length`, v.length);
    v.forEach((x, i) => item(x as T, `${path}[${i}]`));
  }
  finish(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

function obj(path: string, v: unknown): void {
  if (typeof v !== "object" || v === null) {
    throw new TypeError(`${path} must be an object, found ${describe(v)}`);
  }
}

function writeHubRepo(w: Writer, p: string, r: HubRepo): void {
  obj(p, r);
  w.str(`${p}.repoId`, r.repoId, MAX_STRING_BYTES);
  w.optStr(`${p}.revision`, r.revision, MAX_STRING_BYTES);
}

function writeGcsRepo(w: Writer, p: string, r: GcsRepo): void {
  obj(p, r);
  w.str(`${p}.bucket`, r.bucket, MAX_STRING_BYTES);
  w.optStr(`${p}.prefix`, r.prefix, MAX_STRING_BYTES);
}

function writeHttpLocation(w: Writer, p: string, l: HttpLocation): void {
  obj(p, l);
  w.code(`${p}.kind`, l.kind, HTTP_LOCATION_KINDS);
  switch (l.kind) {
    case "SingleUrl":
      w.str(`${p}.url`, l.url, MAX_URL_BYTES);
      return;
    case "NumberedFiles":
      w.str(`${p}.urlTemplate`, l.urlTemplate, MAX_URL_BYTES);
      w.u32(`${p}.startIndex`, l.startIndex);
      w.u8(`${p}.nLeftPadZeros`, l.nLeftPadZeros);
      w.u32(`${p}.numFiles`, l.numFiles);
      return;
    case "Gcp":
      w.str(`${p}.bucketName`, l.bucketName, MAX_STRING_BYTES);
      w.str(`${p}.filterDirectory`, l.filterDirectory, MAX_URL_BYTES);
      return;
    default:
      unreachable(l);
  }
}

function writeDataLocation(w: Writer, p: string, d: DataLocation): void {
  obj(p, d);
  w.code(`${p}.kind`, d.kind, DATA_LOCATION_KINDS);
  switch (d.kind) {
    case "Dummy":
      return;
    case "Server":
      w.str(`${p}.address`, d.address, MAX_URL_BYTES);
      return;
    case "Local":
      w.str(`${p}.path`, d.path, MAX_URL_BYTES);
      return;
    case "Http":
      writeHttpLocation(w, `${p}.location`, d.location);
      w.code(`${p}.tokenSizeInBytes`, d.tokenSizeInBytes, TOKEN_SIZE_KINDS);
      obj(`${p}.shuffle`, d.shuffle);
      w.code(`${p}.shuffle.kind`, d.shuffle.kind, SHUFFLE_KINDS);
      if (d.shuffle.kind === "Seeded") w.bytes(`${p}.shuffle.seed`, d.shuffle.seed, 32);
      return;
    case "WeightedHttp":
      w.str(`${p}.url`, d.url, MAX_URL_BYTES);
      return;
    case "Preprocessed":
      w.str(`${p}.source`, d.source, MAX_URL_BYTES);
      return;
    default:
      unreachable(d);
  }
}

function writeCheckpoint(w: Writer, p: string, c: Checkpoint): void {
  obj(p, c);
  w.code(`${p}.kind`, c.kind, CHECKPOINT_KINDS);
  switch (c.kind) {
    case "Ephemeral":
      return;
    case "Dummy":
    case "Hub":
    case "P2P":
      writeHubRepo(w, `${p}.repo`, c.repo);
      return;
    case "Gcs":
    case "P2PGcs":
      writeGcsRepo(w, `${p}.repo`, c.repo);
      return;
    default:
      unreachable(c);
  }
}

function writeLrSchedule(w: Writer, p: string, s: LrSchedule): void {
  obj(p, s);
  w.code(`${p}.kind`, s.kind, LR_SCHEDULE_KINDS);
  w.f64(`${p}.baseLr`, s.baseLr);
  w.u32(`${p}.warmupSteps`, s.warmupSteps);
  w.f64(`${p}.warmupInitLr`, s.warmupInitLr);
  switch (s.kind) {
    case "Constant":
      return;
    case "Linear":
    case "Cosine":
      w.u32(`${p}.totalSteps`, s.totalSteps);
      w.f64(`${p}.finalLr`, s.finalLr);
      return;
    case "WarmupStableDecay":
      w.u32(`${p}.stableSteps`, s.stableSteps);
      w.u32(`${p}.cosineDecaySteps`, s.cosineDecaySteps);
      w.f64(`${p}.cosineDecayFinalLr`, s.cosineDecayFinalLr);
      w.u32(`${p}.linearDecaySteps`, s.linearDecaySteps);
      w.f64(`${p}.linearDecayFinalLr`, s.linearDecayFinalLr);
      return;
    default:
      unreachable(s);
  }
}

function writeOptimizer(w: Writer, p: string, o: OptimizerDefinition): void {
  obj(p, o);
  w.code(`${p}.kind`, o.kind, OPTIMIZER_KINDS);
  switch (o.kind) {
    case "Dummy":
      return;
    case "AdamW":
      if (!Array.isArray(o.betas) || o.betas.length !== 2) {
        throw new TypeError(`${p}.betas must be an array of 2 numbers, found ${describe(o.betas)}`);
      }
      w.f64(`${p}.betas[0]`, o.betas[0]);
      w.f64(`${p}.betas[1]`, o.betas[1]);
      w.f64(`${p}.weightDecay`, o.weightDecay);
      w.f64(`${p}.eps`, o.eps);
      w.optF64(`${p}.clipGradNorm`, o.clipGradNorm);
      return;
    case "Distro":
      w.optF64(`${p}.clipGradNorm`, o.clipGradNorm);
      w.optF64(`${p}.weightDecay`, o.weightDecay);
      w.f64(`${p}.compressionDecay`, o.compressionDecay);
      w.u32(`${p}.compressionTopk`, o.compressionTopk);
      w.u32(`${p}.compressionChunk`, o.compressionChunk);
      w.bool(`${p}.quantize1bit`, o.quantize1bit);
      return;
    default:
      unreachable(o);
  }
}

function writeModel(w: Writer, p: string, m: LlmModel): void {
  obj(p, m);
  w.code(`${p}.architecture`, m.architecture, ARCHITECTURE_KINDS);
  w.code(`${p}.dataType`, m.dataType, DATA_TYPE_KINDS);
  w.u32(`${p}.maxSeqLen`, m.maxSeqLen);
  w.u32(`${p}.coldStartWarmupSteps`, m.coldStartWarmupSteps);
  writeDataLocation(w, `${p}.dataLocation`, m.dataLocation);
  writeCheckpoint(w, `${p}.checkpoint`, m.checkpoint);
  writeLrSchedule(w, `${p}.lrSchedule`, m.lrSchedule);
  writeOptimizer(w, `${p}.optimizer`, m.optimizer);
  if (w.version >= SNAPSHOT_DTYPE_SINCE_VERSION) {
    w.code(`${p}.snapshotDtype`, m.snapshotDtype, SNAPSHOT_DTYPE_KINDS);
  } else if (m.snapshotDtype !== "f32") {
    // Older versions decode as f32: writing bf16 in them would silently change the run.
    throw new RangeError(
      `${p}.snapshotDtype ${describe(m.snapshotDtype)} cannot be written in state encoding ` +
        `version ${w.version} (only "f32"; another needs version ${SNAPSHOT_DTYPE_SINCE_VERSION})`,
    );
  }
}

function writeConfig(w: Writer, p: string, c: CoordinatorConfig): void {
  obj(p, c);
  w.seconds(`${p}.warmupTime`, c.warmupTime);
  w.seconds(`${p}.cooldownTime`, c.cooldownTime);
  w.seconds(`${p}.maxRoundTrainTime`, c.maxRoundTrainTime);
  w.seconds(`${p}.roundWitnessTime`, c.roundWitnessTime);
  w.u64(`${p}.globalBatchSizeWarmupTokens`, c.globalBatchSizeWarmupTokens);
  w.seconds(`${p}.epochTime`, c.epochTime);
  w.u32(`${p}.totalSteps`, c.totalSteps);
  w.u16(`${p}.initMinClients`, c.initMinClients);
  w.u16(`${p}.minClients`, c.minClients);
  w.u16(`${p}.witnessNodes`, c.witnessNodes);
  w.u16(`${p}.globalBatchSizeStart`, c.globalBatchSizeStart);
  w.u16(`${p}.globalBatchSizeEnd`, c.globalBatchSizeEnd);
  w.u8(`${p}.verificationPercent`, c.verificationPercent);
  w.seconds(`${p}.waitingForMembersExtraTime`, c.waitingForMembersExtraTime, true);
  if (c.maxClients < 1) {
    throw new RangeError(`${p}.maxClients must be at least 1, found ${c.maxClients}`);
  }
  w.u16(`${p}.maxClients`, c.maxClients);
  if (w.version >= VERIFICATION_SINCE_VERSION) {
    w.u16(`${p}.verificationBarEpochs`, c.verificationBarEpochs);
  } else if (c.verificationBarEpochs !== DEFAULT_VERIFICATION_BAR_EPOCHS) {
    throw new RangeError(
      `${p}.verificationBarEpochs cannot be written in state encoding version ${w.version} ` +
        `(only ${DEFAULT_VERIFICATION_BAR_EPOCHS}; another needs version ` +
        `${VERIFICATION_SINCE_VERSION})`,
    );
  }
}

function writeBloom(w: Writer, p: string, b: Bloom, maxClients: number): void {
  obj(p, b);
  if (!(b.keys instanceof BigUint64Array)) {
    throw new TypeError(`${p}.keys must be a BigUint64Array, found ${describe(b.keys)}`);
  }
  if (!(b.bits instanceof Uint8Array)) {
    throw new TypeError(`${p}.bits must be a Uint8Array, found ${describe(b.bits)}`);
  }
  const { numBits, numKeys } = witnessBloomParameters(maxClients);
  if (b.keys.length !== numKeys || b.bits.length * 8 !== numBits) {
    throw new RangeError(
      `${p} has ${b.keys.length} keys and ${b.bits.length * 8} bits; config.maxClients = ` +
        `${maxClients} requires ${numKeys} keys and ${numBits} bits`,
    );
  }
  w.u8(`${p}.keys.length`, numKeys);
  w.u32(`${p}.bits.length`, numBits);
  b.keys.forEach((k, i) => w.u64big(`${p}.keys[${i}]`, k));
  w.bytes(`${p}.bits`, b.bits, numBits / 8);
}

function writeWitness(w: Writer, p: string, x: Witness, maxClients: number): void {
  obj(p, x);
  obj(`${p}.proof`, x.proof);
  w.u32(`${p}.proof.position`, x.proof.position);
  w.u32(`${p}.proof.index`, x.proof.index);
  w.bool(`${p}.proof.witness`, x.proof.witness);
  writeBloom(w, `${p}.participantBloom`, x.participantBloom, maxClients);
  writeBloom(w, `${p}.broadcastBloom`, x.broadcastBloom, maxClients);
  w.bytes(`${p}.broadcastMerkle`, x.broadcastMerkle, 32);
}

function writeRound(w: Writer, p: string, r: Round, maxClients: number): void {
  obj(p, r);
  w.list<Witness>(
    `${p}.witnesses`,
    r.witnesses,
    MAX_WITNESSES,
    1,
    (x, q) => writeWitness(w, q, x, maxClients),
  );
  w.u64(`${p}.dataIndex`, r.dataIndex);
  w.u64big(`${p}.randomSeed`, r.randomSeed);
  w.u32(`${p}.height`, r.height);
  if (r.clientsLen > maxClients) {
    throw new RangeError(
      `${p}.clientsLen (${r.clientsLen}) exceeds config.maxClients (${maxClients})`,
    );
  }
  w.u16(`${p}.clientsLen`, r.clientsLen);
  w.u16(`${p}.tieBreakerTasks`, r.tieBreakerTasks);
  if (w.version < VERIFICATION_SINCE_VERSION) {
    if (r.rejected?.length) throw tooOld(w, `${p}.rejected`);
    return;
  }
  let previous = -1;
  w.list<number>(`${p}.rejected`, r.rejected, maxClients, 2, (index, q) => {
    if (!Number.isInteger(index) || index <= previous || index >= maxClients) {
      throw new RangeError(
        `${q} must be an epoch index above ${previous} and below config.maxClients ` +
          `(${maxClients}), found ${describe(index)}`,
      );
    }
    previous = index;
    w.u16(q, index);
  });
}

function tooOld(w: Writer, path: string): RangeError {
  return new RangeError(
    `${path} cannot be written in state encoding version ${w.version} (verification needs ` +
      `version ${VERIFICATION_SINCE_VERSION})`,
  );
}

function epochIndexField(w: Writer, path: string, index: unknown, maxClients: number): void {
  if (typeof index !== "number" || index >= maxClients) {
    throw new RangeError(`${path} must be below config.maxClients (${maxClients})`);
  }
  w.u16(path, index);
}

function writeSeat(w: Writer, p: string, s: VerificationSeat, maxClients: number): void {
  obj(p, s);
  epochIndexField(w, `${p}.verifier`, s.verifier, maxClients);
  w.code(`${p}.stage`, s.stage, VERIFICATION_STAGES);
  w.code(`${p}.verdict`, s.verdict ?? "None", SEAT_VERDICT_KINDS);
  w.code(`${p}.evidence`, s.evidence, VERIFICATION_EVIDENCE);
  w.u32(`${p}.detail`, s.detail);
}

function writeTask(w: Writer, p: string, t: VerificationTask, maxClients: number): void {
  obj(p, t);
  w.u32(`${p}.height`, t.height);
  epochIndexField(w, `${p}.trainer`, t.trainer, maxClients);
  w.code(`${p}.stage`, t.stage, VERIFICATION_STAGES);
  w.u32(`${p}.deadline`, t.deadline);
  w.seconds(`${p}.openedAt`, t.openedAt);
  w.code(`${p}.decided`, t.decided ?? "None", SEAT_VERDICT_KINDS);
  w.list<VerificationSeat>(
    `${p}.seats`,
    t.seats,
    2 * VERIFIERS_PER_TASK,
    1,
    (s, q) => writeSeat(w, q, s, maxClients),
  );
}

function writeEjection(w: Writer, p: string, e: EjectionRecord): void {
  obj(p, e);
  w.bytes(`${p}.signer`, e.signer, 32);
  w.u16(`${p}.epoch`, e.epoch);
  w.u32(`${p}.step`, e.step);
  w.code(`${p}.cause`, e.cause, EJECTION_CAUSES);
  w.code(`${p}.evidence`, e.evidence, VERIFICATION_EVIDENCE);
  w.u16(`${p}.barredUntil`, e.barredUntil);
}

/**
 * Version 5's tail: the open verification tasks, then the ejection records. Older versions have
 * no room for them and refuse a state that holds any.
 */
function writeVerification(w: Writer, state: CoordinatorState): void {
  const tasks = state.epochState.verificationTasks;
  const ejections = state.ejections;
  if (w.version < VERIFICATION_SINCE_VERSION) {
    if (tasks?.length) throw tooOld(w, "epochState.verificationTasks");
    if (ejections?.length) throw tooOld(w, "ejections");
    return;
  }
  const maxClients = state.config.maxClients;
  w.list<VerificationTask>(
    "epochState.verificationTasks",
    tasks,
    MAX_VERIFICATION_TASKS,
    1,
    (t, q) => writeTask(w, q, t, maxClients),
  );
  w.list<EjectionRecord>(
    "ejections",
    ejections,
    NUM_EJECTION_RECORDS,
    1,
    (e, q) => writeEjection(w, q, e),
  );
}

function writeClient(w: Writer, p: string, c: Client, maxClients: number): void {
  obj(p, c);
  obj(`${p}.id`, c.id);
  w.bytes(`${p}.id.signer`, c.id.signer, 32);
  w.bytes(`${p}.id.p2pIdentity`, c.id.p2pIdentity, 32);
  w.code(`${p}.state`, c.state, CLIENT_STATES);
  w.u32(`${p}.exitedHeight`, c.exitedHeight);
  if (c.epochIndex >= maxClients) {
    throw new RangeError(
      `${p}.epochIndex (${c.epochIndex}) must be below config.maxClients (${maxClients})`,
    );
  }
  w.u16(`${p}.epochIndex`, c.epochIndex);
}

function writeEpochState(w: Writer, p: string, e: EpochState, maxClients: number): void {
  obj(p, e);
  if (!Array.isArray(e.rounds) || e.rounds.length !== NUM_STORED_ROUNDS) {
    throw new RangeError(
      `${p}.rounds must hold exactly ${NUM_STORED_ROUNDS} rounds, found ${
        describe(e.rounds?.length)
      }`,
    );
  }
  e.rounds.forEach((r, i) => writeRound(w, `${p}.rounds[${i}]`, r, maxClients));
  w.list<Client>(
    `${p}.clients`,
    e.clients,
    maxClients,
    2,
    (c, q) => writeClient(w, q, c, maxClients),
  );
  w.list<Client>(
    `${p}.exitedClients`,
    e.exitedClients,
    maxClients,
    2,
    (c, q) => writeClient(w, q, c, maxClients),
  );
  w.u8(`${p}.roundsHead`, e.roundsHead);
  if (e.roundsHead >= NUM_STORED_ROUNDS) {
    throw new RangeError(
      `${p}.roundsHead must be below ${NUM_STORED_ROUNDS}, found ${e.roundsHead}`,
    );
  }
  w.u32(`${p}.startStep`, e.startStep);
  w.u32(`${p}.lastStep`, e.lastStep);
  w.seconds(`${p}.startTimestamp`, e.startTimestamp);
  w.bool(`${p}.firstRound`, e.firstRound);
  w.bool(`${p}.coldStartEpoch`, e.coldStartEpoch);
}

function unreachable(x: never): never {
  throw new TypeError(`Unhandled variant ${describe((x as { kind?: unknown })?.kind ?? x)}`);
}

/** Options of {@linkcode encodeCoordinatorState}. */
export interface EncodeStateOptions {
  /**
   * Layout version to write (default STATE_ENCODING_VERSION, 4). Version 1 is the Solana
   * program's: it refuses times and durations that are not whole seconds. Versions 1 and 2
   * refuse a state that holds digests; versions 1 to 3 a model whose snapshot dtype is not f32.
   */
  version?: StateEncodingVersion;
}

/**
 * The bytes of `state` (layout: docs/state-encoding.md). Throws RangeError or TypeError
 * naming the field path when a value does not fit its field (wrong type, out of range,
 * over a cap, a bloom not sized for `config.maxClients`, not exactly NUM_STORED_ROUNDS
 * rounds, a fractional time in version 1, digests before version 3, a bf16 snapshot dtype
 * before version 4).
 *
 * @example
 * ```ts
 * import { encodeCoordinatorState } from "./write.ts";
 * import { decodeCoordinatorState } from "./read.ts";
 * import { testState } from "../../tests/support/coordinator_fixtures.ts";
 * const state = testState();
 * const again = decodeCoordinatorState(encodeCoordinatorState(state)); // deep-equal to state
 * if (again.runId !== state.runId) throw new Error("round trip");
 * ```
 */
export function encodeCoordinatorState(
  state: CoordinatorState,
  options: EncodeStateOptions = {},
): Uint8Array {
  const version = checkedVersion(options);
  const w = new Writer(version);
  w.bytes("header.magic", STATE_MAGIC, 4);
  w.u16("header.version", version);
  w.u16("header.reserved", 0);
  obj("state", state);
  w.str("runId", state.runId, MAX_RUN_ID_BYTES);
  w.code("runState", state.runState, RUN_STATES);
  writeModel(w, "model", state.model);
  writeConfig(w, "config", state.config);
  obj("progress", state.progress);
  w.u16("progress.epoch", state.progress.epoch);
  w.u32("progress.step", state.progress.step);
  w.u64("progress.epochStartDataIndex", state.progress.epochStartDataIndex);
  writeEpochState(w, "epochState", state.epochState, state.config.maxClients);
  w.seconds("runStateStartUnixTimestamp", state.runStateStartUnixTimestamp);
  w.bool("pendingPause", state.pendingPause);
  writeDigests(w, state);
  writeVerification(w, state);
  return w.finish();
}

/**
 * The bytes `model` takes inside an encoded state (`model.*` field paths in errors, as
 * {@linkcode encodeCoordinatorState} names them). The Solana program stores and receives a
 * model in exactly this form.
 */
export function encodeModelPart(model: LlmModel, options: EncodeStateOptions = {}): Uint8Array {
  const w = new Writer(checkedVersion(options));
  writeModel(w, "model", model);
  return w.finish();
}

/**
 * The bytes `config` takes inside an encoded state (`config.*` field paths in errors). The
 * Solana program stores and receives a config in exactly this form.
 */
export function encodeConfigPart(
  config: CoordinatorConfig,
  options: EncodeStateOptions = {},
): Uint8Array {
  const w = new Writer(checkedVersion(options));
  writeConfig(w, "config", config);
  return w.finish();
}

function checkedVersion(options: EncodeStateOptions): StateEncodingVersion {
  const version = options.version ?? STATE_ENCODING_VERSION;
  if (!(STATE_ENCODING_VERSIONS as readonly number[]).includes(version)) {
    throw new RangeError(
      `version must be one of ${STATE_ENCODING_VERSIONS.join(", ")}, found ${describe(version)}`,
    );
  }
  return version;
}

/**
 * Version 3's tail: the current phase's digest votes, then the recorded digests. Older
 * versions have no room for them and refuse a state that holds any.
 */
function writeDigests(w: Writer, state: CoordinatorState): void {
  const votes = state.epochState.digestVotes;
  const records = state.paramsDigests;
  if (w.version < DIGESTS_SINCE_VERSION) {
    if (votes?.length || records?.length) {
      throw new RangeError(
        `${votes?.length ? "epochState.digestVotes" : "paramsDigests"} cannot be written in ` +
          `state encoding version ${w.version} (digests need version ${DIGESTS_SINCE_VERSION})`,
      );
    }
    return;
  }
  const maxClients = state.config.maxClients;
  w.list<DigestVote>("epochState.digestVotes", votes, MAX_WITNESSES, 1, (v, q) => {
    obj(q, v);
    if (v.index >= maxClients) {
      throw new RangeError(`${q}.index (${v.index}) must be below config.maxClients`);
    }
    w.u16(`${q}.index`, v.index);
    w.bytes(`${q}.digest`, v.digest, PARAMS_DIGEST_BYTES);
  });
  let previous = 0;
  w.list<DigestRecord>("paramsDigests", records, NUM_DIGEST_RECORDS, 1, (r, q) => {
    obj(q, r);
    if (r.step <= previous) {
      throw new RangeError(`${q}.step (${r.step}) must be above the previous record's`);
    }
    previous = r.step;
    w.u32(`${q}.step`, r.step);
    w.bytes(`${q}.digest`, r.digest, PARAMS_DIGEST_BYTES);
  });
}
