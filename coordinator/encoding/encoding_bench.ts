/**
 * Speed of encoding and decoding a full coordinator state with 256 and 10,000 clients
 * and four rounds of 32 witnesses each (the largest state shape the layout allows per
 * client cap).
 *
 * Run: `deno bench -A coordinator/encoding/encoding_bench.ts`
 */

import { decodeCoordinatorState, encodeCoordinatorState } from "./mod.ts";
import {
  type Client,
  type CoordinatorState,
  createBloom,
  type Round,
  witnessBloomParameters,
} from "../core/mod.ts";

function bigState(maxClients: number): CoordinatorState {
  const { numBits, numKeys } = witnessBloomParameters(maxClients);
  const keys = BigUint64Array.from({ length: numKeys }, (_, i) => BigInt(i) * 7919n);
  const round = (height: number): Round => ({
    witnesses: Array.from({ length: 32 }, (_, i) => ({
      proof: { position: i, index: i, witness: true },
      participantBloom: createBloom(numBits, keys),
      broadcastBloom: createBloom(numBits, keys),
      broadcastMerkle: new Uint8Array(32).fill(i),
    })),
    dataIndex: height * 1000,
    randomSeed: BigInt(height) * 0x1_0000_0001n,
    height,
    clientsLen: maxClients,
    tieBreakerTasks: 0,
    rejected: [],
  });
  const client = (i: number): Client => ({
    id: { signer: new Uint8Array(32).fill(i & 0xff), p2pIdentity: new Uint8Array(32).fill(7) },
    state: "Healthy",
    exitedHeight: 0,
    epochIndex: i,
  });
  return {
    runId: "bench",
    runState: "RoundTrain",
    model: {
      architecture: "HfLlama",
      dataType: "Pretraining",
      maxSeqLen: 2048,
      coldStartWarmupSteps: 0,
      snapshotDtype: "f32",
      dataLocation: { kind: "Server", address: "127.0.0.1:9000" },
      checkpoint: { kind: "Hub", repo: { repoId: "org/model", revision: null } },
      lrSchedule: { kind: "Constant", baseLr: 1e-4, warmupSteps: 10, warmupInitLr: 0 },
      optimizer: {
        kind: "Distro",
        clipGradNorm: 1,
        weightDecay: null,
        compressionDecay: 0.999,
        compressionTopk: 8,
        compressionChunk: 64,
        quantize1bit: true,
      },
    },
    config: {
      warmupTime: 60,
      cooldownTime: 30,
      maxRoundTrainTime: 30,
      roundWitnessTime: 2,
      globalBatchSizeWarmupTokens: 0,
      epochTime: 3600,
      totalSteps: 10_000,
      initMinClients: 1,
      minClients: 1,
      witnessNodes: 0,
      globalBatchSizeStart: 512,
      globalBatchSizeEnd: 512,
      verificationPercent: 0,
      waitingForMembersExtraTime: 3,
      maxClients,
      verificationBarEpochs: 4,
    },
    progress: { epoch: 1, step: 100, epochStartDataIndex: 0 },
    epochState: {
      rounds: [round(0), round(1), round(2), round(3)],
      clients: Array.from({ length: maxClients }, (_, i) => client(i)),
      exitedClients: [],
      roundsHead: 3,
      startStep: 90,
      lastStep: 0,
      startTimestamp: 1_700_000_000,
      firstRound: false,
      coldStartEpoch: false,
      digestVotes: [],
      verificationTasks: [],
    },
    runStateStartUnixTimestamp: 1_700_000_100,
    pendingPause: false,
    paramsDigests: [{ step: 99, digest: new Uint8Array(32).fill(7) }],
    ejections: [],
  };
}

for (const n of [256, 10_000]) {
  const state = bigState(n);
  const bytes = encodeCoordinatorState(state);
  Deno.bench({
    name: `encode, ${n} clients (${bytes.length} bytes)`,
    group: `encoding ${n}`,
    baseline: true,
    fn: () => {
      encodeCoordinatorState(state);
    },
  });
  Deno.bench({
    name: `decode, ${n} clients (${bytes.length} bytes)`,
    group: `encoding ${n}`,
    fn: () => {
      decodeCoordinatorState(bytes);
    },
  });
}
