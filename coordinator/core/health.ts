/**
 * Client health: a trainer is healthy when a quorum of the previous round's witnesses saw its
 * payload (its `sha256(signer)` is in their participant blooms); witnesses report the unhealthy
 * ones, and the coordinator drops them (Psyche's `health_check` in
 * shared/coordinator/src/coordinator.rs).
 *
 * Proofs name a client by its index in the previous round. Clients may have left since,
 * so the index is resolved with that round's client list (`roundClients`), and the
 * proof's client must be the one the check names.
 *
 * @module
 */

import { bloomContains } from "./bloom.ts";
import { CoordinatorError } from "./errors.ts";
import { assertNotHalted } from "./machine_core.ts";
import { currentRound, previousRound, roundClients, roundSelection } from "./machine_queries.ts";
import { sha256 } from "./hash.ts";
import { roundWitnessQuorum } from "./witness_quorum.ts";
import type { CommitteeProof, CoordinatorState, NodeIdentity } from "./types.ts";
import { equalBytes, toHex } from "../../common/mod.ts";

/** One entry of a health-check report: who is unhealthy and their previous-round proof. */
export interface HealthCheck {
  id: NodeIdentity;
  proof: CommitteeProof;
}

/** How many of the previous round's witnesses saw `id`'s payload (0 with no previous round). */
export function trainerHealthScore(state: CoordinatorState, id: NodeIdentity): number {
  const prev = previousRound(state);
  if (prev === null) return 0;
  const item = sha256(id.signer);
  let score = 0;
  for (const w of prev.witnesses) if (bloomContains(w.participantBloom, item)) score++;
  return score;
}

/** Whether a quorum of the previous round's witnesses saw `id`'s payload. */
export function trainerHealthy(state: CoordinatorState, id: NodeIdentity): boolean {
  const prev = previousRound(state);
  if (prev === null) return false;
  return trainerHealthScore(state, id) >= roundWitnessQuorum(state.config, prev);
}

/**
 * Whether `id` was healthy in the previous round, given its committee proof there. A
 * proof that does not verify, or that belongs to another client, is false. Only trainers
 * can be judged: a verifier or tie-breaker counts as healthy, as in Psyche (those
 * committees are not implemented), so nobody can report it.
 */
export function isHealthy(
  state: CoordinatorState,
  id: NodeIdentity,
  proof: CommitteeProof,
): boolean {
  const prev = previousRound(state);
  if (prev === null) return false;
  if (!roundSelection(state.config, prev).verifyCommittee(proof)) return false;
  const client = roundClients(state, prev.height)[proof.index];
  if (client === undefined || !equalBytes(client.id.signer, id.signer)) return false;
  return proof.committee !== "Trainer" || trainerHealthy(state, id);
}

/**
 * What a witness of the previous round reports (Psyche's `start_sending_health_checks`,
 * shared/client/src/state/train.rs): every trainer of the previous round that is still Healthy in
 * the epoch but was not seen by a quorum of that round's witnesses, with its committee proof. Empty
 * before round 2 (round 0's witnesses saw no payloads, so round 1 cannot judge anyone). One pass
 * over the round's clients (no per-client list rebuild).
 */
export function unhealthyTrainers(state: CoordinatorState): HealthCheck[] {
  const prev = previousRound(state);
  if (prev === null || prev.height < 1) return [];
  const selection = roundSelection(state.config, prev);
  const quorum = roundWitnessQuorum(state.config, prev);
  const out: HealthCheck[] = [];
  const prevClients = roundClients(state, prev.height);
  for (let i = 0; i < prevClients.length; i++) {
    const client = prevClients[i];
    if (client.state !== "Healthy" || selection.committee(i) !== "Trainer") continue;
    const item = sha256(client.id.signer);
    let score = 0;
    for (const w of prev.witnesses) {
      if (bloomContains(w.participantBloom, item) && ++score >= quorum) break;
    }
    if (score < quorum) out.push({ id: client.id, proof: selection.committeeProof(i) });
  }
  return out;
}

/**
 * A witness of the previous round reports unhealthy clients; each one still Healthy is
 * marked Dropped (it leaves at the end of the round). Returns how many were dropped.
 *
 * Atomic as in Psyche: the whole report fails with `InvalidHealthCheck` (or
 * `InvalidCommitteeProof`) if any entry is wrong: an unverifiable proof, a proof of a
 * different client, a non-trainer, a client that is healthy. Requires a round in progress
 * whose previous round had height >= 1 (round 0's witnesses saw no payloads), and a
 * sender that is a client of this epoch.
 */
export function healthCheck(
  state: CoordinatorState,
  from: NodeIdentity,
  checks: readonly HealthCheck[],
): number {
  assertNotHalted(state, "accept a health check");
  if (state.runState !== "RoundTrain" && state.runState !== "RoundWitness") {
    throw new CoordinatorError("WrongRunState", `health check in ${state.runState}`);
  }
  const height = currentRound(state).height;
  if (height < 2) {
    throw new CoordinatorError(
      "InvalidHealthCheck",
      `health checks start at round 2, now ${height}`,
    );
  }
  const prev = previousRound(state);
  if (prev === null) throw new Error("Coordinator bug: no previous round at height >= 2");
  const clients = state.epochState.clients;
  if (
    !(from?.signer instanceof Uint8Array) ||
    !clients.some((c) => equalBytes(c.id.signer, from.signer))
  ) {
    throw new CoordinatorError("InvalidHealthCheck", "the sender is not a client of this epoch");
  }
  if (!Array.isArray(checks) || checks.length === 0 || checks.length > prev.clientsLen) {
    throw new CoordinatorError(
      "InvalidHealthCheck",
      `a report lists 1..${prev.clientsLen} clients, found ${checks?.length}`,
    );
  }
  const selection = roundSelection(state.config, prev);
  const prevClients = roundClients(state, prev.height);
  const targets = new Set<string>();
  for (let i = 0; i < checks.length; i++) {
    const { id, proof } = checks[i] ?? {};
    if (!(id?.signer instanceof Uint8Array) || typeof proof !== "object" || proof === null) {
      throw new CoordinatorError("InvalidHealthCheck", `entry ${i} is malformed`);
    }
    if (!selection.verifyCommittee(proof)) {
      throw new CoordinatorError(
        "InvalidCommitteeProof",
        `entry ${i}: committee proof (index ${proof.index}) does not verify for round ${prev.height}`,
      );
    }
    if (!equalBytes(prevClients[proof.index].id.signer, id.signer)) {
      throw new CoordinatorError(
        "InvalidHealthCheck",
        `entry ${i}: proof index ${proof.index} is another client`,
      );
    }
    if (proof.committee !== "Trainer") {
      throw new CoordinatorError("InvalidHealthCheck", `entry ${i}: only trainers can be checked`);
    }
    if (trainerHealthy(state, id)) {
      throw new CoordinatorError(
        "InvalidHealthCheck",
        `entry ${i}: client ${proof.index} is healthy`,
      );
    }
    targets.add(toHex(id.signer));
  }
  let dropped = 0;
  for (const client of clients) {
    if (client.state === "Healthy" && targets.has(toHex(client.id.signer))) {
      client.state = "Dropped";
      dropped++;
    }
  }
  return dropped;
}
