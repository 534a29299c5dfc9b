/**
 * Builders for coordinator tests: configs, models, client identities, witness reports
 * and a driver that walks a run to a given state. Everything is deterministic (identities
 * come from their index), so tests can rebuild the same run.
 *
 * @module
 */

import {
  type Bloom,
  bloomAdd,
  type CoordinatorConfig,
  type CoordinatorState,
  createBloom,
  createCoordinator,
  currentRound,
  type LlmModel,
  type NodeIdentity,
  roundSelection,
  sha256,
  tick as tickImpl,
  type Witness,
  witness as witnessImpl,
  witnessBloomParameters,
} from "../../coordinator/core/mod.ts";
import { addTime } from "../../common/mod.ts";

/** A valid config for small, fast test runs; override any field. */
export function testConfig(overrides: Partial<CoordinatorConfig> = {}): CoordinatorConfig {
  return {
    warmupTime: 20,
    cooldownTime: 3,
    maxRoundTrainTime: 5,
    roundWitnessTime: 2,
    globalBatchSizeWarmupTokens: 0,
    epochTime: 30,
    totalSteps: 100,
    initMinClients: 2,
    minClients: 2,
    witnessNodes: 0,
    globalBatchSizeStart: 8,
    globalBatchSizeEnd: 8,
    verificationPercent: 0,
    waitingForMembersExtraTime: 1,
    maxClients: 64,
    verificationBarEpochs: 4,
    ...overrides,
  };
}

/** A valid model with a Hub checkpoint; override any field. */
export function testModel(overrides: Partial<LlmModel> = {}): LlmModel {
  return {
    architecture: "HfLlama",
    dataType: "Pretraining",
    maxSeqLen: 16,
    coldStartWarmupSteps: 2,
    snapshotDtype: "f32",
    dataLocation: { kind: "Dummy" },
    checkpoint: { kind: "Hub", repo: { repoId: "org/model", revision: null } },
    lrSchedule: { kind: "Constant", baseLr: 1e-3, warmupSteps: 0, warmupInitLr: 0 },
    optimizer: {
      kind: "AdamW",
      betas: [0.9, 0.95],
      weightDecay: 0,
      eps: 1e-8,
      clipGradNorm: null,
    },
    ...overrides,
  };
}

/** A fresh coordinator in WaitingForMembers at time `now`. */
export function testState(
  config: Partial<CoordinatorConfig> = {},
  now = 0,
  model: Partial<LlmModel> = {},
): CoordinatorState {
  return createCoordinator({
    runId: "test-run",
    config: testConfig(config),
    model: testModel(model),
    now,
  });
}

/** Client `i`'s identity: signer = p2p key = 32 bytes derived from `i`. */
export function identity(i: number): NodeIdentity {
  const key = sha256(new TextEncoder().encode(`client-${i}`));
  return { signer: key, p2pIdentity: key };
}

/** Identities of clients `0..n-1`. */
export function identities(n: number, offset = 0): NodeIdentity[] {
  return Array.from({ length: n }, (_, i) => identity(i + offset));
}

/**
 * An empty bloom of the run's witness size, with fixed keys, or with random ones (as a real
 * client draws them for each report, so no two reports' blooms share their bits).
 */
export function emptyBloom(state: CoordinatorState, randomKeys = false): Bloom {
  const { numBits, numKeys } = witnessBloomParameters(state.config.maxClients);
  const keys = randomKeys
    ? new BigUint64Array(crypto.getRandomValues(new Uint32Array(2 * numKeys)).buffer)
    : new BigUint64Array(numKeys);
  if (!randomKeys) {
    for (let k = 0; k < numKeys; k++) keys[k] = BigInt(k) * 0x9e3779b97f4a7c15n % (1n << 64n);
  }
  return createBloom(numBits, keys);
}

/** The warmup report of client `index` (empty blooms). */
export function warmupReport(state: CoordinatorState, index: number): Witness {
  return {
    proof: { position: index, index, witness: false },
    participantBloom: emptyBloom(state),
    broadcastBloom: emptyBloom(state),
    broadcastMerkle: new Uint8Array(32),
  };
}

/**
 * The witness report of client `index` for the current round, whose participant bloom
 * holds `sha256(signer)` of every identity in `seen` and whose broadcast bloom holds
 * `broadcast` hashes; with `randomKeys`, the blooms' keys are drawn at random, as a real
 * client's are.
 */
export function witnessReport(
  state: CoordinatorState,
  index: number,
  seen: readonly NodeIdentity[] = [],
  broadcast: readonly Uint8Array[] = [],
  randomKeys = false,
): Witness {
  const proof = roundSelection(state.config, currentRound(state)).witnessProof(index);
  const participantBloom = emptyBloom(state, randomKeys);
  for (const id of seen) bloomAdd(participantBloom, sha256(id.signer));
  const broadcastBloom = emptyBloom(state, randomKeys);
  for (const h of broadcast) bloomAdd(broadcastBloom, h);
  return { proof, participantBloom, broadcastBloom, broadcastMerkle: new Uint8Array(32) };
}

/** Indices of the current round's witnesses. */
export function witnessIndices(state: CoordinatorState): number[] {
  return roundSelection(state.config, currentRound(state)).witnessIndices();
}

/**
 * Walks a coordinator through a run with a fake clock: each helper advances `now` by
 * just enough for the transition it wants and asserts nothing (tests do).
 */
export class RunDriver {
  state: CoordinatorState;
  now: number;
  #seed = 1000n;

  constructor(state: CoordinatorState, now = state.runStateStartUnixTimestamp) {
    this.state = state;
    this.now = now;
  }

  /** A fresh seed per call (deterministic). */
  nextSeed(): bigint {
    this.#seed += 7919n;
    return this.#seed;
  }

  /** Ticks at `now + dt` with `pending` (added exactly, in milliseconds, when fractional). */
  tick(dt: number, pending: readonly NodeIdentity[] | null = null) {
    this.now = addTime(this.now, dt);
    return tickImpl(this.state, pending, this.now, this.nextSeed());
  }

  /** WaitingForMembers → Warmup with `pending` as the epoch's clients. */
  startEpoch(pending: readonly NodeIdentity[]) {
    return this.tick(this.state.config.waitingForMembersExtraTime, pending);
  }

  /** Warmup → RoundTrain by the warmup timer. */
  warmupTimeout() {
    return this.tick(this.state.config.warmupTime);
  }

  /** Every witness of the current round reports having seen `seen` (all clients by default). */
  witnessAll(seen: readonly NodeIdentity[] = this.state.epochState.clients.map((c) => c.id)) {
    for (const index of witnessIndices(this.state)) {
      const from = this.state.epochState.clients[index].id;
      witnessImpl(this.state, from, witnessReport(this.state, index, seen), this.now);
    }
  }

  /** The first `count` witnesses of the current round report having seen every client. */
  witnessFirst(count: number) {
    const seen = this.state.epochState.clients.map((c) => c.id);
    for (const index of witnessIndices(this.state).slice(0, count)) {
      const from = this.state.epochState.clients[index].id;
      witnessImpl(this.state, from, witnessReport(this.state, index, seen), this.now);
    }
  }

  /** RoundWitness → next state by the witness timer. */
  witnessTimeout() {
    return this.tick(this.state.config.roundWitnessTime);
  }

  /** One full healthy round: all witnesses report, then the witness timer fires. */
  fullRound() {
    this.witnessAll();
    return this.witnessTimeout();
  }
}
