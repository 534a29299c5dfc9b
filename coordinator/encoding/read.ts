/**
 * The decoder of the coordinator-state layout (see encoding.ts and
 * docs/state-encoding.md): reads field by field and checks every byte, throwing
 * StateDecodeError with the field path and offset at the first defect.
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
  STATE_ENCODING_VERSIONS,
  STATE_MAGIC,
  StateDecodeError,
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
  MAX_CLIENTS_LIMIT,
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
  fromMillis,
  type GcsRepo,
  type HttpLocation,
  type HubRepo,
  type LrSchedule,
  MAX_TIME_MS,
  type OptimizerDefinition,
} from "../../common/mod.ts";

const utf8Strict = new TextDecoder("utf-8", { fatal: true });

class Reader {
  /** Set from the header before any time field is read. */
  version: StateEncodingVersion = 2;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  #pos = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get pos(): number {
    return this.#pos;
  }

  fail(field: string, detail: string, at = this.#pos): never {
    throw new StateDecodeError(field, at, detail);
  }

  #take(field: string, n: number): number {
    const left = this.#bytes.length - this.#pos;
    if (n > left) this.fail(field, `truncated: needs ${n} bytes, only ${left} left`);
    const at = this.#pos;
    this.#pos += n;
    return at;
  }

  u8(field: string): number {
    return this.#bytes[this.#take(field, 1)];
  }
  u16(field: string): number {
    return this.#view.getUint16(this.#take(field, 2), true);
  }
  u32(field: string): number {
    return this.#view.getUint32(this.#take(field, 4), true);
  }
  u64(field: string): number {
    const at = this.#take(field, 8);
    const v = this.#view.getBigUint64(at, true);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      this.fail(field, `value ${v} exceeds the largest safe integer 2^53 - 1`, at);
    }
    return Number(v);
  }
  /**
   * A time or duration in seconds: integer milliseconds in version 2 (u64, or u32 when
   * `narrow`), whole seconds in version 1 (u64, or u8 when `narrow`).
   */
  seconds(field: string, narrow = false): number {
    if (this.version === 1) return narrow ? this.u8(field) : this.u64(field);
    const at = this.#pos;
    const ms = narrow ? this.u32(field) : this.u64(field);
    if (ms > MAX_TIME_MS) {
      this.fail(field, `${ms} ms exceeds the largest time, ${MAX_TIME_MS} ms (2^50 - 1)`, at);
    }
    return fromMillis(ms);
  }
  u64big(field: string): bigint {
    return this.#view.getBigUint64(this.#take(field, 8), true);
  }
  f64(field: string): number {
    const at = this.#take(field, 8);
    const v = this.#view.getFloat64(at, true);
    if (!Number.isFinite(v)) this.fail(field, `expected a finite number, found ${v}`, at);
    return v;
  }
  bool(field: string): boolean {
    const at = this.#pos;
    const v = this.u8(field);
    if (v > 1) this.fail(field, `expected a boolean (0 or 1), found ${v}`, at);
    return v === 1;
  }
  bytes(field: string, n: number): Uint8Array {
    const at = this.#take(field, n);
    return this.#bytes.slice(at, at + n);
  }
  str(field: string, maxBytes: number): string {
    const at = this.#pos;
    const n = this.u8(field);
    if (n > maxBytes) this.fail(field, `string of ${n} bytes exceeds the cap of ${maxBytes}`, at);
    const raw = this.bytes(field, n);
    try {
      return utf8Strict.decode(raw);
    } catch {
      return this.fail(field, "string is not valid UTF-8", at + 1);
    }
  }
  optStr(field: string, maxBytes: number): string | null {
    return this.bool(`${field} (present)`) ? this.str(field, maxBytes) : null;
  }
  optF64(field: string): number | null {
    return this.bool(`${field} (present)`) ? this.f64(field) : null;
  }
  code<K extends string>(field: string, table: readonly K[]): K {
    const at = this.#pos;
    const c = this.u8(field);
    if (c >= table.length) {
      this.fail(
        field,
        `unknown code ${c} (expected 0..${table.length - 1}: ${table.join(", ")})`,
        at,
      );
    }
    return table[c];
  }
  count(field: string, cap: number, countBytes: 1 | 2): number {
    const at = this.#pos;
    const n = countBytes === 1 ? this.u8(field) : this.u16(field);
    if (n > cap) this.fail(field, `list of ${n} items exceeds the cap of ${cap}`, at);
    return n;
  }
  end(): void {
    const left = this.#bytes.length - this.#pos;
    if (left !== 0) this.fail("end", `${left} trailing bytes after the state`);
  }
}

function readHubRepo(r: Reader, p: string): HubRepo {
  return {
    repoId: r.str(`${p}.repoId`, MAX_STRING_BYTES),
    revision: r.optStr(`${p}.revision`, MAX_STRING_BYTES),
  };
}

function readGcsRepo(r: Reader, p: string): GcsRepo {
  return {
    bucket: r.str(`${p}.bucket`, MAX_STRING_BYTES),
    prefix: r.optStr(`${p}.prefix`, MAX_STRING_BYTES),
  };
}

function readHttpLocation(r: Reader, p: string): HttpLocation {
  const kind = r.code(`${p}.kind`, HTTP_LOCATION_KINDS);
  switch (kind) {
    case "SingleUrl":
      return { kind, url: r.str(`${p}.url`, MAX_URL_BYTES) };
    case "NumberedFiles":
      return {
        kind,
        urlTemplate: r.str(`${p}.urlTemplate`, MAX_URL_BYTES),
        startIndex: r.u32(`${p}.startIndex`),
        nLeftPadZeros: r.u8(`${p}.nLeftPadZeros`),
        numFiles: r.u32(`${p}.numFiles`),
      };
    case "Gcp":
      return {
        kind,
        bucketName: r.str(`${p}.bucketName`, MAX_STRING_BYTES),
        filterDirectory: r.str(`${p}.filterDirectory`, MAX_URL_BYTES),
      };
  }
}

function readDataLocation(r: Reader, p: string): DataLocation {
  const kind = r.code(`${p}.kind`, DATA_LOCATION_KINDS);
  switch (kind) {
    case "Dummy":
      return { kind };
    case "Server":
      return { kind, address: r.str(`${p}.address`, MAX_URL_BYTES) };
    case "Local":
      return { kind, path: r.str(`${p}.path`, MAX_URL_BYTES) };
    case "Http": {
      const location = readHttpLocation(r, `${p}.location`);
      const tokenSizeInBytes = r.code(`${p}.tokenSizeInBytes`, TOKEN_SIZE_KINDS);
      const shuffleKind = r.code(`${p}.shuffle.kind`, SHUFFLE_KINDS);
      const shuffle = shuffleKind === "Seeded"
        ? { kind: shuffleKind, seed: r.bytes(`${p}.shuffle.seed`, 32) }
        : { kind: shuffleKind };
      return { kind, location, tokenSizeInBytes, shuffle };
    }
    case "WeightedHttp":
      return { kind, url: r.str(`${p}.url`, MAX_URL_BYTES) };
    case "Preprocessed":
      return { kind, source: r.str(`${p}.source`, MAX_URL_BYTES) };
  }
}

function readCheckpoint(r: Reader, p: string): Checkpoint {
  const kind = r.code(`${p}.kind`, CHECKPOINT_KINDS);
  switch (kind) {
    case "Ephemeral":
      return { kind };
    case "Dummy":
    case "Hub":
    case "P2P":
      return { kind, repo: readHubRepo(r, `${p}.repo`) };
    case "Gcs":
    case "P2PGcs":
      return { kind, repo: readGcsRepo(r, `${p}.repo`) };
  }
}

function readLrSchedule(r: Reader, p: string): LrSchedule {
  const kind = r.code(`${p}.kind`, LR_SCHEDULE_KINDS);
  const baseLr = r.f64(`${p}.baseLr`);
  const warmupSteps = r.u32(`${p}.warmupSteps`);
  const warmupInitLr = r.f64(`${p}.warmupInitLr`);
  const warm = { baseLr, warmupSteps, warmupInitLr };
  switch (kind) {
    case "Constant":
      return { kind, ...warm };
    case "Linear":
    case "Cosine":
      return {
        kind,
        ...warm,
        totalSteps: r.u32(`${p}.totalSteps`),
        finalLr: r.f64(`${p}.finalLr`),
      };
    case "WarmupStableDecay":
      return {
        kind,
        ...warm,
        stableSteps: r.u32(`${p}.stableSteps`),
        cosineDecaySteps: r.u32(`${p}.cosineDecaySteps`),
        cosineDecayFinalLr: r.f64(`${p}.cosineDecayFinalLr`),
        linearDecaySteps: r.u32(`${p}.linearDecaySteps`),
        linearDecayFinalLr: r.f64(`${p}.linearDecayFinalLr`),
      };
  }
}

function readOptimizer(r: Reader, p: string): OptimizerDefinition {
  const kind = r.code(`${p}.kind`, OPTIMIZER_KINDS);
  switch (kind) {
    case "Dummy":
      return { kind };
    case "AdamW":
      return {
        kind,
        betas: [r.f64(`${p}.betas[0]`), r.f64(`${p}.betas[1]`)],
        weightDecay: r.f64(`${p}.weightDecay`),
        eps: r.f64(`${p}.eps`),
        clipGradNorm: r.optF64(`${p}.clipGradNorm`),
      };
    case "Distro":
      return {
        kind,
        clipGradNorm: r.optF64(`${p}.clipGradNorm`),
        weightDecay: r.optF64(`${p}.weightDecay`),
        compressionDecay: r.f64(`${p}.compressionDecay`),
        compressionTopk: r.u32(`${p}.compressionTopk`),
        compressionChunk: r.u32(`${p}.compressionChunk`),
        quantize1bit: r.bool(`${p}.quantize1bit`),
      };
  }
}

function readModel(r: Reader, p: string): LlmModel {
  const architecture = r.code(`${p}.architecture`, ARCHITECTURE_KINDS);
  const dataType = r.code(`${p}.dataType`, DATA_TYPE_KINDS);
  const maxSeqLen = r.u32(`${p}.maxSeqLen`);
  const coldStartWarmupSteps = r.u32(`${p}.coldStartWarmupSteps`);
  const dataLocation = readDataLocation(r, `${p}.dataLocation`);
  const checkpoint = readCheckpoint(r, `${p}.checkpoint`);
  const lrSchedule = readLrSchedule(r, `${p}.lrSchedule`);
  const optimizer = readOptimizer(r, `${p}.optimizer`);
  // Last in the model since version 4; earlier versions shared the f32 masters as they are.
  const snapshotDtype = r.version >= SNAPSHOT_DTYPE_SINCE_VERSION
    ? r.code(`${p}.snapshotDtype`, SNAPSHOT_DTYPE_KINDS)
    : "f32";
  return {
    architecture,
    dataType,
    maxSeqLen,
    coldStartWarmupSteps,
    snapshotDtype,
    dataLocation,
    checkpoint,
    lrSchedule,
    optimizer,
  };
}

function readConfig(r: Reader, p: string): CoordinatorConfig {
  const c = {
    warmupTime: r.seconds(`${p}.warmupTime`),
    cooldownTime: r.seconds(`${p}.cooldownTime`),
    maxRoundTrainTime: r.seconds(`${p}.maxRoundTrainTime`),
    roundWitnessTime: r.seconds(`${p}.roundWitnessTime`),
    globalBatchSizeWarmupTokens: r.u64(`${p}.globalBatchSizeWarmupTokens`),
    epochTime: r.seconds(`${p}.epochTime`),
    totalSteps: r.u32(`${p}.totalSteps`),
    initMinClients: r.u16(`${p}.initMinClients`),
    minClients: r.u16(`${p}.minClients`),
    witnessNodes: r.u16(`${p}.witnessNodes`),
    globalBatchSizeStart: r.u16(`${p}.globalBatchSizeStart`),
    globalBatchSizeEnd: r.u16(`${p}.globalBatchSizeEnd`),
    verificationPercent: r.u8(`${p}.verificationPercent`),
    waitingForMembersExtraTime: r.seconds(`${p}.waitingForMembersExtraTime`, true),
    maxClients: 0,
    verificationBarEpochs: DEFAULT_VERIFICATION_BAR_EPOCHS,
  };
  const at = r.pos;
  c.maxClients = r.u16(`${p}.maxClients`);
  if (c.maxClients < 1 || c.maxClients > MAX_CLIENTS_LIMIT) {
    r.fail(`${p}.maxClients`, `must be in [1, ${MAX_CLIENTS_LIMIT}], found ${c.maxClients}`, at);
  }
  if (r.version >= VERIFICATION_SINCE_VERSION) {
    c.verificationBarEpochs = r.u16(`${p}.verificationBarEpochs`);
  }
  return c;
}

function readBloom(r: Reader, p: string, maxClients: number): Bloom {
  const { numBits, numKeys } = witnessBloomParameters(maxClients);
  let at = r.pos;
  const k = r.u8(`${p}.keys.length`);
  if (k !== numKeys) {
    r.fail(
      `${p}.keys.length`,
      `${k} keys, but config.maxClients = ${maxClients} requires ${numKeys}`,
      at,
    );
  }
  at = r.pos;
  const m = r.u32(`${p}.bits.length`);
  if (m !== numBits) {
    r.fail(
      `${p}.bits.length`,
      `${m} bits, but config.maxClients = ${maxClients} requires ${numBits}`,
      at,
    );
  }
  const keys = new BigUint64Array(numKeys);
  for (let i = 0; i < numKeys; i++) keys[i] = r.u64big(`${p}.keys[${i}]`);
  return { keys, bits: r.bytes(`${p}.bits`, numBits / 8) };
}

function readWitness(r: Reader, p: string, maxClients: number): Witness {
  return {
    proof: {
      position: r.u32(`${p}.proof.position`),
      index: r.u32(`${p}.proof.index`),
      witness: r.bool(`${p}.proof.witness`),
    },
    participantBloom: readBloom(r, `${p}.participantBloom`, maxClients),
    broadcastBloom: readBloom(r, `${p}.broadcastBloom`, maxClients),
    broadcastMerkle: r.bytes(`${p}.broadcastMerkle`, 32),
  };
}

function readRound(r: Reader, p: string, maxClients: number): Round {
  const n = r.count(`${p}.witnesses.length`, MAX_WITNESSES, 1);
  const witnesses: Witness[] = [];
  for (let i = 0; i < n; i++) witnesses.push(readWitness(r, `${p}.witnesses[${i}]`, maxClients));
  const dataIndex = r.u64(`${p}.dataIndex`);
  const randomSeed = r.u64big(`${p}.randomSeed`);
  const height = r.u32(`${p}.height`);
  const at = r.pos;
  const clientsLen = r.u16(`${p}.clientsLen`);
  if (clientsLen > maxClients) {
    r.fail(`${p}.clientsLen`, `${clientsLen} exceeds config.maxClients (${maxClients})`, at);
  }
  const tieBreakerTasks = r.u16(`${p}.tieBreakerTasks`);
  const rejected: number[] = [];
  if (r.version >= VERIFICATION_SINCE_VERSION) {
    const n = r.count(`${p}.rejected.length`, maxClients, 2);
    for (let i = 0; i < n; i++) {
      const q = `${p}.rejected[${i}]`;
      const at = r.pos;
      const index = epochIndexField(r, q, maxClients);
      if (index <= (rejected.at(-1) ?? -1)) r.fail(q, `${index} is not above the one before`, at);
      rejected.push(index);
    }
  }
  return { witnesses, dataIndex, randomSeed, height, clientsLen, tieBreakerTasks, rejected };
}

function epochIndexField(r: Reader, field: string, maxClients: number): number {
  const at = r.pos;
  const index = r.u16(field);
  if (index >= maxClients) {
    r.fail(field, `${index} must be below config.maxClients (${maxClients})`, at);
  }
  return index;
}

function readSeat(r: Reader, p: string, maxClients: number): VerificationSeat {
  const verifier = epochIndexField(r, `${p}.verifier`, maxClients);
  const stage = r.code(`${p}.stage`, VERIFICATION_STAGES);
  const verdict = r.code(`${p}.verdict`, SEAT_VERDICT_KINDS);
  const at = r.pos;
  const evidence = r.code(`${p}.evidence`, VERIFICATION_EVIDENCE);
  if ((verdict === "Fail") !== (evidence !== "None")) {
    r.fail(`${p}.evidence`, `${evidence} does not go with the verdict ${verdict}`, at);
  }
  return {
    verifier,
    stage,
    verdict: verdict === "None" ? null : verdict,
    evidence,
    detail: r.u32(`${p}.detail`),
  };
}

function readTask(r: Reader, p: string, maxClients: number): VerificationTask {
  const height = r.u32(`${p}.height`);
  const trainer = epochIndexField(r, `${p}.trainer`, maxClients);
  const stage = r.code(`${p}.stage`, VERIFICATION_STAGES);
  const deadline = r.u32(`${p}.deadline`);
  const openedAt = r.seconds(`${p}.openedAt`);
  const decidedCode = r.code(`${p}.decided`, SEAT_VERDICT_KINDS);
  const decided = decidedCode === "None" ? null : decidedCode;
  const n = r.count(`${p}.seats.length`, 2 * VERIFIERS_PER_TASK, 1);
  const seats: VerificationSeat[] = [];
  for (let i = 0; i < n; i++) seats.push(readSeat(r, `${p}.seats[${i}]`, maxClients));
  return { height, trainer, stage, deadline, openedAt, decided, seats };
}

/** Version 5's tail: the open verification tasks and the ejection records. */
function readVerification(
  r: Reader,
  maxClients: number,
): { tasks: VerificationTask[]; ejections: EjectionRecord[] } {
  const tasks: VerificationTask[] = [];
  const taskCount = r.count("epochState.verificationTasks.length", MAX_VERIFICATION_TASKS, 1);
  for (let i = 0; i < taskCount; i++) {
    tasks.push(readTask(r, `epochState.verificationTasks[${i}]`, maxClients));
  }
  const ejections: EjectionRecord[] = [];
  const n = r.count("ejections.length", NUM_EJECTION_RECORDS, 1);
  for (let i = 0; i < n; i++) {
    const q = `ejections[${i}]`;
    ejections.push({
      signer: r.bytes(`${q}.signer`, 32),
      epoch: r.u16(`${q}.epoch`),
      step: r.u32(`${q}.step`),
      cause: r.code(`${q}.cause`, EJECTION_CAUSES),
      evidence: r.code(`${q}.evidence`, VERIFICATION_EVIDENCE),
      barredUntil: r.u16(`${q}.barredUntil`),
    });
  }
  return { tasks, ejections };
}

function readClients(r: Reader, p: string, maxClients: number): Client[] {
  const n = r.count(`${p}.length`, maxClients, 2);
  const out: Client[] = [];
  for (let i = 0; i < n; i++) {
    const q = `${p}[${i}]`;
    const id = {
      signer: r.bytes(`${q}.id.signer`, 32),
      p2pIdentity: r.bytes(`${q}.id.p2pIdentity`, 32),
    };
    const state = r.code(`${q}.state`, CLIENT_STATES);
    const exitedHeight = r.u32(`${q}.exitedHeight`);
    const at = r.pos;
    const epochIndex = r.u16(`${q}.epochIndex`);
    if (epochIndex >= maxClients) {
      r.fail(
        `${q}.epochIndex`,
        `${epochIndex} must be below config.maxClients (${maxClients})`,
        at,
      );
    }
    out.push({ id, state, exitedHeight, epochIndex });
  }
  return out;
}

function readEpochState(r: Reader, p: string, maxClients: number): EpochState {
  const rounds: Round[] = [];
  for (let i = 0; i < NUM_STORED_ROUNDS; i++) {
    rounds.push(readRound(r, `${p}.rounds[${i}]`, maxClients));
  }
  const clients = readClients(r, `${p}.clients`, maxClients);
  const exitedClients = readClients(r, `${p}.exitedClients`, maxClients);
  const at = r.pos;
  const roundsHead = r.u8(`${p}.roundsHead`);
  if (roundsHead >= NUM_STORED_ROUNDS) {
    r.fail(`${p}.roundsHead`, `must be below ${NUM_STORED_ROUNDS}, found ${roundsHead}`, at);
  }
  return {
    rounds,
    clients,
    exitedClients,
    roundsHead,
    startStep: r.u32(`${p}.startStep`),
    lastStep: r.u32(`${p}.lastStep`),
    startTimestamp: r.seconds(`${p}.startTimestamp`),
    firstRound: r.bool(`${p}.firstRound`),
    coldStartEpoch: r.bool(`${p}.coldStartEpoch`),
    digestVotes: [],
    verificationTasks: [],
  };
}

/** Version 3's tail: the phase's digest votes and the recorded digests. */
function readDigests(
  r: Reader,
  maxClients: number,
): { votes: DigestVote[]; records: DigestRecord[] } {
  const votes: DigestVote[] = [];
  const voteCount = r.u8("epochState.digestVotes.length");
  if (voteCount > MAX_WITNESSES) {
    r.fail("epochState.digestVotes.length", `${voteCount} exceeds the cap ${MAX_WITNESSES}`);
  }
  for (let i = 0; i < voteCount; i++) {
    const q = `epochState.digestVotes[${i}]`;
    const at = r.pos;
    const index = r.u16(`${q}.index`);
    if (index >= maxClients) {
      r.fail(`${q}.index`, `${index} must be below config.maxClients (${maxClients})`, at);
    }
    if (votes.some((v) => v.index === index)) r.fail(`${q}.index`, `repeats ${index}`, at);
    votes.push({ index, digest: nonZeroDigest(r, `${q}.digest`) });
  }
  const records: DigestRecord[] = [];
  const recordCount = r.u8("paramsDigests.length");
  if (recordCount > NUM_DIGEST_RECORDS) {
    r.fail("paramsDigests.length", `${recordCount} exceeds the cap ${NUM_DIGEST_RECORDS}`);
  }
  for (let i = 0; i < recordCount; i++) {
    const q = `paramsDigests[${i}]`;
    const at = r.pos;
    const step = r.u32(`${q}.step`);
    const previous = records.at(-1)?.step ?? 0;
    if (step <= previous) {
      r.fail(`${q}.step`, `${step} must be above the previous record's step ${previous}`, at);
    }
    records.push({ step, digest: nonZeroDigest(r, `${q}.digest`) });
  }
  return { votes, records };
}

function nonZeroDigest(r: Reader, field: string): Uint8Array {
  const at = r.pos;
  const digest = r.bytes(field, PARAMS_DIGEST_BYTES);
  if (digest.every((b) => b === 0)) r.fail(field, "an all-zero digest is not a digest", at);
  return digest;
}

function isSupportedVersion(version: number): version is StateEncodingVersion {
  return (STATE_ENCODING_VERSIONS as readonly number[]).includes(version);
}

/**
 * The state encoded in `bytes` by {@linkcode encodeCoordinatorState}, in either layout
 * version (the header says which; version 1 times are whole seconds). Every byte is
 * checked: throws {@linkcode StateDecodeError} (field path and byte offset) on a wrong
 * magic or version, truncation, trailing bytes, an unknown enum code, a list over its cap,
 * a string over its cap or not UTF-8, a boolean other than 0/1, a non-finite float, an
 * integer beyond 2^53 - 1, a time beyond 2^50 - 1 ms, `roundsHead >= NUM_STORED_ROUNDS`, a `clientsLen` over
 * `config.maxClients`, or a bloom not sized for `config.maxClients`.
 */
export function decodeCoordinatorState(bytes: Uint8Array): CoordinatorState {
  if (!(bytes instanceof Uint8Array)) {
    throw new StateDecodeError("input", 0, `expected a Uint8Array, found ${describe(bytes)}`);
  }
  const r = new Reader(bytes);
  const magic = r.bytes("header.magic", 4);
  if (magic.some((b, i) => b !== STATE_MAGIC[i])) {
    r.fail("header.magic", `expected "PSYC", found bytes [${magic.join(", ")}]`, 0);
  }
  const version = r.u16("header.version");
  if (!isSupportedVersion(version)) {
    return r.fail(
      "header.version",
      `unsupported version ${version} (this build reads ${STATE_ENCODING_VERSIONS.join(", ")})`,
      4,
    );
  }
  r.version = version;
  const reserved = r.u16("header.reserved");
  if (reserved !== 0) r.fail("header.reserved", `must be 0, found ${reserved}`, 6);
  const runId = r.str("runId", MAX_RUN_ID_BYTES);
  const runState = r.code("runState", RUN_STATES);
  const model = readModel(r, "model");
  const config = readConfig(r, "config");
  const progress = {
    epoch: r.u16("progress.epoch"),
    step: r.u32("progress.step"),
    epochStartDataIndex: r.u64("progress.epochStartDataIndex"),
  };
  const epochState = readEpochState(r, "epochState", config.maxClients);
  const runStateStartUnixTimestamp = r.seconds("runStateStartUnixTimestamp");
  const pendingPause = r.bool("pendingPause");
  const digests = version >= DIGESTS_SINCE_VERSION
    ? readDigests(r, config.maxClients)
    : { votes: [], records: [] };
  epochState.digestVotes = digests.votes;
  const verification = version >= VERIFICATION_SINCE_VERSION
    ? readVerification(r, config.maxClients)
    : { tasks: [], ejections: [] };
  epochState.verificationTasks = verification.tasks;
  r.end();
  return {
    runId,
    runState,
    model,
    config,
    progress,
    epochState,
    runStateStartUnixTimestamp,
    pendingPause,
    paramsDigests: digests.records,
    ejections: verification.ejections,
  };
}
