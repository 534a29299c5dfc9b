/**
 * fast-check arbitraries of whole coordinator states, for property tests of the
 * encodings (and of anything else that takes a CoordinatorState). Values respect what
 * the binary layout can carry (caps, widths, bloom sizes for `config.maxClients`) but
 * not the state machine's invariants: they are shapes, not reachable states.
 *
 * @module
 */

import fc from "fast-check";
import {
  ARCHITECTURE_KINDS,
  DATA_TYPE_KINDS,
  STATE_ENCODING_VERSION,
  type StateEncodingVersion,
  TOKEN_SIZE_KINDS,
} from "../mod.ts";
import {
  DIGESTS_SINCE_VERSION,
  SNAPSHOT_DTYPE_KINDS,
  SNAPSHOT_DTYPE_SINCE_VERSION,
  VERIFICATION_SINCE_VERSION,
} from "../layout.ts";
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
  type LlmModel,
  MAX_RUN_ID_BYTES,
  MAX_STRING_BYTES,
  MAX_URL_BYTES,
  MAX_VERIFICATION_TASKS,
  MAX_WITNESSES,
  NUM_DIGEST_RECORDS,
  NUM_EJECTION_RECORDS,
  NUM_STORED_ROUNDS,
  type Round,
  RUN_STATES,
  VERIFICATION_EVIDENCE,
  VERIFICATION_STAGES,
  type VerificationSeat,
  type VerificationTask,
  VERIFIERS_PER_TASK,
  type Witness,
  witnessBloomParameters,
} from "../../core/mod.ts";
import {
  type DataLocation,
  fromMillis,
  type HttpLocation,
  type LrSchedule,
  MAX_TIME_MS,
  type OptimizerDefinition,
} from "../../../common/mod.ts";

const utf8 = new TextEncoder();

/** `fc.record` with ordinary prototypes, so decoded values compare deep-equal. */
function rec<T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }): fc.Arbitrary<T> {
  return fc.record(model, { noNullPrototype: true });
}

/** Any well-formed string of at most `maxBytes` UTF-8 bytes (multi-byte characters included). */
export function arbString(maxBytes: number): fc.Arbitrary<string> {
  return fc.string({ unit: "binary", maxLength: Math.ceil(maxBytes / 2) })
    .filter((s) => s.isWellFormed() && utf8.encode(s).length <= maxBytes);
}

const u8 = fc.integer({ min: 0, max: 0xff });
const u16 = fc.integer({ min: 0, max: 0xffff });
const u32 = fc.integer({ min: 0, max: 0xffff_ffff });
const u64 = fc.maxSafeNat();
const u64big = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
/** Finite doubles; -0 is mapped to 0 so JSON text round trips too. */
const f64 = fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => (x === 0 ? 0 : x));
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 });
/** A parameter digest: 32 bytes, not all zero (all zero means "no vote"). */
const digest32 = bytes32.filter((d) => d.some((b) => b !== 0));

function digestVotes(maxClients: number, maxVotes: number): fc.Arbitrary<DigestVote[]> {
  return fc.uniqueArray(
    rec({ index: fc.integer({ min: 0, max: maxClients - 1 }), digest: digest32 }),
    { maxLength: maxVotes, selector: (v) => v.index },
  );
}

const digestRecords: fc.Arbitrary<DigestRecord[]> = fc
  .uniqueArray(fc.integer({ min: 1, max: 0xffff_ffff }), { maxLength: NUM_DIGEST_RECORDS })
  .chain((steps) =>
    fc.tuple(
      ...steps.sort((a, b) => a - b).map((step) =>
        rec({ step: fc.constant(step), digest: digest32 })
      ),
    )
  );
const optional = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });

const hubRepo = rec({
  repoId: arbString(MAX_STRING_BYTES),
  revision: optional(arbString(MAX_STRING_BYTES)),
});
const gcsRepo = rec({
  bucket: arbString(MAX_STRING_BYTES),
  prefix: optional(arbString(MAX_STRING_BYTES)),
});

const httpLocation: fc.Arbitrary<HttpLocation> = fc.oneof(
  rec({ kind: fc.constant("SingleUrl" as const), url: arbString(MAX_URL_BYTES) }),
  rec({
    kind: fc.constant("NumberedFiles" as const),
    urlTemplate: arbString(MAX_URL_BYTES),
    startIndex: u32,
    nLeftPadZeros: u8,
    numFiles: u32,
  }),
  rec({
    kind: fc.constant("Gcp" as const),
    bucketName: arbString(MAX_STRING_BYTES),
    filterDirectory: arbString(MAX_URL_BYTES),
  }),
);

const dataLocation: fc.Arbitrary<DataLocation> = fc.oneof(
  rec({ kind: fc.constant("Dummy" as const) }),
  rec({ kind: fc.constant("Server" as const), address: arbString(MAX_URL_BYTES) }),
  rec({ kind: fc.constant("Local" as const), path: arbString(MAX_URL_BYTES) }),
  rec({
    kind: fc.constant("Http" as const),
    location: httpLocation,
    tokenSizeInBytes: fc.constantFrom(...TOKEN_SIZE_KINDS),
    shuffle: fc.oneof(
      rec({ kind: fc.constant("DontShuffle" as const) }),
      rec({ kind: fc.constant("Seeded" as const), seed: bytes32 }),
    ),
  }),
  rec({ kind: fc.constant("WeightedHttp" as const), url: arbString(MAX_URL_BYTES) }),
  rec({ kind: fc.constant("Preprocessed" as const), source: arbString(MAX_URL_BYTES) }),
);

const checkpoint: fc.Arbitrary<Checkpoint> = fc.oneof(
  rec({ kind: fc.constant("Ephemeral" as const) }),
  rec({
    kind: fc.constantFrom("Dummy" as const, "Hub" as const, "P2P" as const),
    repo: hubRepo,
  }),
  rec({ kind: fc.constantFrom("Gcs" as const, "P2PGcs" as const), repo: gcsRepo }),
);

const warm = { baseLr: f64, warmupSteps: u32, warmupInitLr: f64 };
const lrSchedule: fc.Arbitrary<LrSchedule> = fc.oneof(
  rec({ kind: fc.constant("Constant" as const), ...warm }),
  rec({
    kind: fc.constantFrom("Linear" as const, "Cosine" as const),
    ...warm,
    totalSteps: u32,
    finalLr: f64,
  }),
  rec({
    kind: fc.constant("WarmupStableDecay" as const),
    ...warm,
    stableSteps: u32,
    cosineDecaySteps: u32,
    cosineDecayFinalLr: f64,
    linearDecaySteps: u32,
    linearDecayFinalLr: f64,
  }),
);

const optimizer: fc.Arbitrary<OptimizerDefinition> = fc.oneof(
  rec({ kind: fc.constant("Dummy" as const) }),
  rec({
    kind: fc.constant("AdamW" as const),
    betas: fc.tuple(f64, f64),
    weightDecay: f64,
    eps: f64,
    clipGradNorm: optional(f64),
  }),
  rec({
    kind: fc.constant("Distro" as const),
    clipGradNorm: optional(f64),
    weightDecay: optional(f64),
    compressionDecay: f64,
    compressionTopk: u32,
    compressionChunk: u32,
    quantize1bit: fc.boolean(),
  }),
);

/** Models of one layout version (before version 4 the snapshot dtype is always f32). */
function model(version: StateEncodingVersion): fc.Arbitrary<LlmModel> {
  return rec({
    architecture: fc.constantFrom(...ARCHITECTURE_KINDS),
    dataType: fc.constantFrom(...DATA_TYPE_KINDS),
    maxSeqLen: u32,
    coldStartWarmupSteps: u32,
    snapshotDtype: version >= SNAPSHOT_DTYPE_SINCE_VERSION
      ? fc.constantFrom(...SNAPSHOT_DTYPE_KINDS)
      : fc.constant("f32" as const),
    dataLocation,
    checkpoint,
    lrSchedule,
    optimizer,
  });
}

/** Times of layout version 2: any whole millisecond up to MAX_TIME_MS. */
const msTime = fc.integer({ min: 0, max: MAX_TIME_MS }).map(fromMillis);
/** Version 2's narrow duration (`waitingForMembersExtraTime`): a u32 of milliseconds. */
const msTimeNarrow = fc.integer({ min: 0, max: 0xffff_ffff }).map(fromMillis);

/** The time arbitraries of one layout version (version 1: whole seconds). */
function times(version: StateEncodingVersion) {
  return version === 1 ? { time: u64, narrow: u8 } : { time: msTime, narrow: msTimeNarrow };
}

function config(
  maxClients: number,
  version: StateEncodingVersion,
): fc.Arbitrary<CoordinatorConfig> {
  const { time, narrow } = times(version);
  return rec({
    warmupTime: time,
    cooldownTime: time,
    maxRoundTrainTime: time,
    roundWitnessTime: time,
    globalBatchSizeWarmupTokens: u64,
    epochTime: time,
    totalSteps: u32,
    initMinClients: u16,
    minClients: u16,
    witnessNodes: u16,
    globalBatchSizeStart: u16,
    globalBatchSizeEnd: u16,
    verificationPercent: u8,
    waitingForMembersExtraTime: narrow,
    maxClients: fc.constant(maxClients),
    verificationBarEpochs: version >= VERIFICATION_SINCE_VERSION
      ? u16
      : fc.constant(DEFAULT_VERIFICATION_BAR_EPOCHS),
  });
}

/** Epoch indices below `maxClients`, strictly ascending. */
function rejected(maxClients: number): fc.Arbitrary<number[]> {
  return fc.uniqueArray(fc.integer({ min: 0, max: maxClients - 1 }), { maxLength: maxClients })
    .map((a) => a.sort((x, y) => x - y));
}

function seat(maxClients: number): fc.Arbitrary<VerificationSeat> {
  return fc.record({
    verifier: fc.integer({ min: 0, max: maxClients - 1 }),
    stage: fc.constantFrom(...VERIFICATION_STAGES),
    verdict: fc.constantFrom(null, "Pass" as const, "Fail" as const),
    evidence: fc.constantFrom(...VERIFICATION_EVIDENCE.slice(1)),
    detail: u32,
  }).map((s) => ({ ...s, evidence: s.verdict === "Fail" ? s.evidence : "None" as const }));
}

function task(maxClients: number, time: fc.Arbitrary<number>): fc.Arbitrary<VerificationTask> {
  return rec({
    height: u32,
    trainer: fc.integer({ min: 0, max: maxClients - 1 }),
    stage: fc.constantFrom(...VERIFICATION_STAGES),
    deadline: u32,
    openedAt: time,
    decided: fc.constantFrom(null, "Pass" as const, "Fail" as const),
    seats: fc.array(seat(maxClients), { maxLength: 2 * VERIFIERS_PER_TASK }),
  });
}

const ejection: fc.Arbitrary<EjectionRecord> = rec({
  signer: bytes32,
  epoch: u16,
  step: u32,
  cause: fc.constantFrom(...EJECTION_CAUSES),
  evidence: fc.constantFrom(...VERIFICATION_EVIDENCE),
  barredUntil: u16,
});

function bloom(maxClients: number): fc.Arbitrary<Bloom> {
  const { numBits, numKeys } = witnessBloomParameters(maxClients);
  return rec({
    keys: fc.array(u64big, { minLength: numKeys, maxLength: numKeys })
      .map((k) => BigUint64Array.from(k)),
    bits: fc.uint8Array({ minLength: numBits / 8, maxLength: numBits / 8 }),
  });
}

function witness(maxClients: number): fc.Arbitrary<Witness> {
  return rec({
    proof: rec({ position: u32, index: u32, witness: fc.boolean() }),
    participantBloom: bloom(maxClients),
    broadcastBloom: bloom(maxClients),
    broadcastMerkle: bytes32,
  });
}

function round(
  maxClients: number,
  maxWitnesses: number,
  version: StateEncodingVersion,
): fc.Arbitrary<Round> {
  return rec({
    witnesses: fc.array(witness(maxClients), { maxLength: maxWitnesses }),
    dataIndex: u64,
    randomSeed: u64big,
    height: u32,
    clientsLen: fc.integer({ min: 0, max: maxClients }),
    tieBreakerTasks: u16,
    rejected: version >= VERIFICATION_SINCE_VERSION ? rejected(maxClients) : fc.constant([]),
  });
}

function client(maxClients: number): fc.Arbitrary<Client> {
  return rec({
    id: rec({ signer: bytes32, p2pIdentity: bytes32 }),
    state: fc.constantFrom(...CLIENT_STATES),
    exitedHeight: u32,
    epochIndex: fc.integer({ min: 0, max: maxClients - 1 }),
  });
}

/** Options of {@linkcode arbCoordinatorState}. */
export interface StateArbitraryOptions {
  /** Largest `config.maxClients` drawn (>= 1). Default 6: keeps blooms and lists small. */
  maxClients?: number;
  /** Most witnesses per round. Default 2 (MAX_WITNESSES is the cap the layout allows). */
  maxWitnesses?: number;
  /**
   * The layout version the states must fit (default 4: times in whole milliseconds, digests,
   * either snapshot dtype; 3: snapshot dtype f32; 2: no digests either; 1: times in whole
   * seconds too, up to 2^53 - 1).
   */
  version?: StateEncodingVersion;
}

/** Arbitrary whole CoordinatorStates that the binary layout can carry. */
export function arbCoordinatorState(
  opts: StateArbitraryOptions = {},
): fc.Arbitrary<CoordinatorState> {
  const top = opts.maxClients ?? 6;
  const maxWitnesses = Math.min(opts.maxWitnesses ?? 2, MAX_WITNESSES);
  const version = opts.version ?? STATE_ENCODING_VERSION;
  const { time } = times(version);
  return fc.integer({ min: 1, max: top }).chain((maxClients) =>
    rec({
      runId: arbString(MAX_RUN_ID_BYTES),
      runState: fc.constantFrom(...RUN_STATES),
      model: model(version),
      config: config(maxClients, version),
      progress: rec({ epoch: u16, step: u32, epochStartDataIndex: u64 }),
      epochState: rec({
        rounds: fc.array(round(maxClients, maxWitnesses, version), {
          minLength: NUM_STORED_ROUNDS,
          maxLength: NUM_STORED_ROUNDS,
        }),
        clients: fc.array(client(maxClients), { maxLength: maxClients }),
        exitedClients: fc.array(client(maxClients), { maxLength: maxClients }),
        roundsHead: fc.integer({ min: 0, max: NUM_STORED_ROUNDS - 1 }),
        startStep: u32,
        lastStep: u32,
        startTimestamp: time,
        firstRound: fc.boolean(),
        coldStartEpoch: fc.boolean(),
        digestVotes: version >= DIGESTS_SINCE_VERSION
          ? digestVotes(maxClients, maxWitnesses)
          : fc.constant([]),
        verificationTasks: version >= VERIFICATION_SINCE_VERSION
          ? fc.array(task(maxClients, time), { maxLength: Math.min(3, MAX_VERIFICATION_TASKS) })
          : fc.constant([]),
      }),
      runStateStartUnixTimestamp: time,
      pendingPause: fc.boolean(),
      paramsDigests: version >= DIGESTS_SINCE_VERSION ? digestRecords : fc.constant([]),
      ejections: version >= VERIFICATION_SINCE_VERSION
        ? fc.array(ejection, { maxLength: Math.min(3, NUM_EJECTION_RECORDS) })
        : fc.constant([]),
    })
  );
}
