/**
 * One full round of coordinator work at 32, 256, 1024 and 10,000 clients: the tick that
 * ends RoundWitness and starts the next RoundTrain (new seed), the round's committee
 * selection and data assignment, every elected witness's report checked and stored
 * (which moves the round to RoundWitness), and the witness timer's tick.
 *
 * Target: under 5 ms per round at 1024 clients, growing no faster than n log n.
 * Run: `deno bench -A coordinator/core/machine_bench.ts`.
 */

import { bloomAdd, createBloom, witnessBloomParameters } from "./bloom.ts";
import { sha256 } from "./hash.ts";
import { createCoordinator, tick } from "./machine.ts";
import { currentRound, roundAssignments, roundSelection } from "./machine_queries.ts";
import { witness } from "./machine_witness.ts";
import type { Bloom, CoordinatorState } from "./types.ts";
import { identities, testConfig, testModel } from "../../tests/support/coordinator_fixtures.ts";

interface Fixture {
  state: CoordinatorState;
  now: number;
  seed: bigint;
  participantBloom: Bloom;
  broadcastBloom: Bloom;
}

function fixture(n: number): Fixture {
  const ids = identities(n);
  const state = createCoordinator({
    runId: "bench",
    config: testConfig({
      warmupTime: 10,
      cooldownTime: 10,
      maxRoundTrainTime: 10,
      roundWitnessTime: 1,
      epochTime: 1_000_000_000,
      totalSteps: 0xffff_ffff,
      initMinClients: n,
      minClients: 1,
      globalBatchSizeStart: 2048,
      globalBatchSizeEnd: 2048,
      maxClients: n,
    }),
    model: testModel({
      maxSeqLen: 2048,
      coldStartWarmupSteps: 0,
      checkpoint: { kind: "Hub", repo: { repoId: "bench/model", revision: null } },
      lrSchedule: { kind: "Constant", baseLr: 1e-4, warmupSteps: 0, warmupInitLr: 0 },
    }),
    now: 0,
  });
  tick(state, ids, 1, 1n);
  tick(state, null, 11, 2n);
  if (state.runState !== "RoundTrain") throw new Error(`bench setup reached ${state.runState}`);
  const { numBits, numKeys } = witnessBloomParameters(n);
  const keys = BigUint64Array.from(
    { length: numKeys },
    (_, k) => BigInt(k + 1) * 0x9e3779b97f4a7c15n,
  );
  const participantBloom = createBloom(numBits, keys);
  for (const id of ids) bloomAdd(participantBloom, sha256(id.signer));
  const broadcastBloom = createBloom(numBits, keys);
  // Finish round 0 so every measured round starts from the end of RoundWitness.
  const f = { state, now: 11, seed: 3n, participantBloom, broadcastBloom };
  witnessAll(f);
  return f;
}

function witnessAll(f: Fixture): number {
  const { state } = f;
  const selection = roundSelection(state.config, currentRound(state));
  let assigned = roundAssignments(state, currentRound(state)).length;
  for (const index of selection.witnessIndices()) {
    witness(state, state.epochState.clients[index].id, {
      proof: selection.witnessProof(index),
      participantBloom: f.participantBloom,
      broadcastBloom: f.broadcastBloom,
      broadcastMerkle: new Uint8Array(32),
    }, f.now);
    assigned++;
  }
  if (state.runState !== "RoundWitness") throw new Error(`witnessing reached ${state.runState}`);
  return assigned;
}

/** RoundWitness end → RoundTrain (new seed) → selection, assignment, all witnesses. */
function fullRound(f: Fixture, newSeed = true): number {
  f.now += f.state.config.roundWitnessTime;
  if (newSeed) f.seed += 1n;
  tick(f.state, null, f.now, f.seed);
  if (f.state.runState !== "RoundTrain") throw new Error(`tick reached ${f.state.runState}`);
  return witnessAll(f);
}

for (const n of [32, 256, 1024, 10_000]) {
  const f = fixture(n);
  Deno.bench({
    name: `full round, ${n} clients`,
    group: "coordinator round",
    baseline: n === 1024,
    fn: () => {
      fullRound(f);
    },
  });
}

// The same round with the seed repeated, so the memoized committee selection is reused:
// what the state machine itself costs (ticks, data assignment, witness checks and copies).
for (const n of [32, 256, 1024, 10_000]) {
  const f = fixture(n);
  Deno.bench({
    name: `round without selection, ${n} clients`,
    group: "coordinator round, selection memoized",
    baseline: n === 1024,
    fn: () => {
      fullRound(f, false);
    },
  });
}
