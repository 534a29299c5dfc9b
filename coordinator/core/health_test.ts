import assert from "node:assert/strict";
import { CoordinatorError } from "./errors.ts";
import {
  healthCheck,
  isHealthy,
  trainerHealthScore,
  trainerHealthy,
  unhealthyTrainers,
} from "./health.ts";
import { withdraw } from "./machine_membership.ts";
import { currentRound, previousRound, roundSelection } from "./machine_queries.ts";
import type { CoordinatorState } from "./types.ts";
import {
  identities,
  identity,
  RunDriver,
  testState,
} from "../../tests/support/coordinator_fixtures.ts";

function assertRejected(fn: () => unknown, code: string, state: unknown): void {
  const before = structuredClone(state);
  assert.throws(fn, (e: unknown) => e instanceof CoordinatorError && e.code === code);
  assert.deepEqual(state, before);
}

/** Round 2 of a 5-client run whose round-1 witnesses did not see `missing`. */
function roundTwoWithout(missing: number[], withdrawInRound1: number[] = []): RunDriver {
  const d = new RunDriver(testState({ witnessNodes: 0 }));
  d.startEpoch(identities(5));
  d.warmupTimeout();
  d.fullRound();
  for (const i of withdrawInRound1) withdraw(d.state, i);
  d.witnessAll(identities(5).filter((_, i) => !missing.includes(i)));
  d.witnessTimeout();
  assert.equal(currentRound(d.state).height, 2);
  return d;
}

function proofOf(state: CoordinatorState, index: number) {
  return roundSelection(state.config, previousRound(state)!).committeeProof(index);
}

Deno.test("trainer health: score counts previous-round witnesses that saw the client", () => {
  const d = roundTwoWithout([3]);
  assert.equal(trainerHealthScore(d.state, identity(0)), 5);
  assert.equal(trainerHealthScore(d.state, identity(3)), 0);
  assert.equal(trainerHealthy(d.state, identity(0)), true);
  assert.equal(trainerHealthy(d.state, identity(3)), false);
  assert.equal(isHealthy(d.state, identity(0), proofOf(d.state, 0)), true);
  assert.equal(isHealthy(d.state, identity(3), proofOf(d.state, 3)), false);
  // Someone else's proof proves nothing.
  assert.equal(isHealthy(d.state, identity(0), proofOf(d.state, 1)), false);
});

Deno.test("healthCheck drops the unhealthy client; it leaves at the end of the round", () => {
  const d = roundTwoWithout([3]);
  const n = healthCheck(d.state, identity(0), [{ id: identity(3), proof: proofOf(d.state, 3) }]);
  assert.equal(n, 1);
  assert.equal(d.state.epochState.clients[3].state, "Dropped");
  // Reporting it again changes nothing.
  assert.equal(
    healthCheck(d.state, identity(1), [{ id: identity(3), proof: proofOf(d.state, 3) }]),
    0,
  );
  d.fullRound();
  assert.deepEqual(d.state.epochState.exitedClients.map((c) => [c.epochIndex, c.exitedHeight]), [[
    3,
    3,
  ]]);
});

Deno.test("healthCheck is atomic: one healthy client fails the whole report", () => {
  const d = roundTwoWithout([3]);
  assertRejected(
    () =>
      healthCheck(d.state, identity(0), [
        { id: identity(3), proof: proofOf(d.state, 3) },
        { id: identity(2), proof: proofOf(d.state, 2) },
      ]),
    "InvalidHealthCheck",
    d.state,
  );
});

Deno.test("healthCheck rejects forged proofs, mismatched ids, outsiders and empty reports", () => {
  const d = roundTwoWithout([3]);
  const forged = { ...proofOf(d.state, 3), position: (proofOf(d.state, 3).position + 1) % 5 };
  assertRejected(
    () => healthCheck(d.state, identity(0), [{ id: identity(3), proof: forged }]),
    "InvalidCommitteeProof",
    d.state,
  );
  assertRejected(
    () => healthCheck(d.state, identity(0), [{ id: identity(4), proof: proofOf(d.state, 3) }]),
    "InvalidHealthCheck",
    d.state,
  );
  assertRejected(
    () => healthCheck(d.state, identity(77), [{ id: identity(3), proof: proofOf(d.state, 3) }]),
    "InvalidHealthCheck",
    d.state,
  );
  assertRejected(() => healthCheck(d.state, identity(0), []), "InvalidHealthCheck", d.state);
});

Deno.test("healthCheck needs round >= 2 and a round in progress", () => {
  const d = new RunDriver(testState());
  d.startEpoch(identities(3));
  assertRejected(() => healthCheck(d.state, identity(0), []), "WrongRunState", d.state);
  d.warmupTimeout();
  d.fullRound();
  const proof = roundSelection(d.state.config, previousRound(d.state)!).committeeProof(0);
  assertRejected(
    () => healthCheck(d.state, identity(1), [{ id: identity(0), proof }]),
    "InvalidHealthCheck",
    d.state,
  );
});

Deno.test("healthCheck resolves previous-round indices after a client left mid-list", () => {
  // Client 1 withdraws during round 1 and is gone in round 2; client 4 went unseen.
  const d = roundTwoWithout([4], [1]);
  assert.equal(d.state.epochState.clients.length, 4);
  assert.equal(previousRound(d.state)!.clientsLen, 5);
  const n = healthCheck(d.state, identity(0), [{ id: identity(4), proof: proofOf(d.state, 4) }]);
  assert.equal(n, 1);
  assert.deepEqual(
    d.state.epochState.clients.map((c) => [c.epochIndex, c.state]),
    [[0, "Healthy"], [2, "Healthy"], [3, "Healthy"], [4, "Dropped"]],
  );
});

Deno.test("unhealthyTrainers: exactly the unseen, still-Healthy trainers, none before round 2", () => {
  const d = roundTwoWithout([1, 3]);
  const report = unhealthyTrainers(d.state);
  assert.deepEqual(report.map((c) => c.proof.index), [1, 3]);
  assert.equal(healthCheck(d.state, identity(0), report), 2);
  assert.deepEqual(unhealthyTrainers(d.state), []);
  const early = new RunDriver(testState());
  early.startEpoch(identities(3));
  early.warmupTimeout();
  early.witnessAll([]);
  early.witnessTimeout();
  assert.equal(currentRound(early.state).height, 1);
  assert.deepEqual(unhealthyTrainers(early.state), []);
});
