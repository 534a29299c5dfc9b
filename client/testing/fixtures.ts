/**
 * Builders for the client's unit tests: a coordinator walked to a round, deterministic
 * bloom keys, and announcements as a round's trainers would send them.
 * Not part of the public surface.
 *
 * @module
 */
import { identities, RunDriver, testState } from "../../tests/support/coordinator_fixtures.ts";
import type { TrainingResultAnnouncement } from "../p2p/announcement.ts";
import type { BloomSetup } from "../results/mod.ts";
import type { RoundView } from "../round_view.ts";
import {
  type CoordinatorState,
  type NodeIdentity,
  sha256,
  witnessBloomParameters,
} from "../../coordinator/core/mod.ts";

/** Fixed bloom keys for a run's witness bloom size. */
export function testBlooms(state: CoordinatorState): BloomSetup {
  const parameters = witnessBloomParameters(state.config.maxClients);
  const keys = (salt: bigint) =>
    BigUint64Array.from({ length: parameters.numKeys }, (_, k) => (BigInt(k) + salt) * 7919n);
  return { parameters, participantKeys: keys(1n), broadcastKeys: keys(100n) };
}

/** A run of `n` clients (all witnesses, quorum 2 of 3) driven into round 0. */
export function runInRound0(n = 3): { driver: RunDriver; ids: NodeIdentity[] } {
  const ids = identities(n);
  const driver = new RunDriver(
    testState({
      initMinClients: n,
      minClients: 1,
      witnessNodes: 0,
      globalBatchSizeStart: 6,
      globalBatchSizeEnd: 6,
    }),
  );
  driver.startEpoch(ids);
  driver.warmupTimeout();
  return { driver, ids };
}

/** A commitment hash standing for client `index`'s result in a round (`salt` varies it). */
export function fakeCommitment(index: number, step: number, salt = 0): Uint8Array {
  return sha256(new TextEncoder().encode(`commitment ${index} ${step} ${salt}`));
}

/** The announcement trainer `index` of `view` sends for its batch. */
export function announcementOf(
  view: RoundView,
  index: number,
  salt = 0,
): TrainingResultAnnouncement {
  const assignment = view.assignments.find((a) => a.clientIndex === index);
  if (assignment === undefined) throw new Error(`client ${index} has no batch`);
  return {
    kind: "TrainingResult",
    step: view.step,
    proof: view.selection.committeeProof(index),
    batch: assignment.batch,
    commitment: fakeCommitment(index, view.step, salt),
    contentHash: sha256(fakeCommitment(index, view.step, salt)),
    payloadSize: 100,
  };
}
