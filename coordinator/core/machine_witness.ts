/**
 * Witness reports: `warmupWitness` (a client has loaded the model) and `witness` (a round's elected
 * witness reports what it received), Psyche's `warmup_witness` and `witness` in
 * shared/coordinator/src/coordinator.rs.
 *
 * Both bind the proof to its sender: `proof.index` must be the index of `from` in the
 * round's client list. Psyche's `warmup_witness` skipped that check (§10.1 quirk 6), so
 * one client could fill Warmup with reports under other clients' indices and start
 * training before they had the model. Blooms must have exactly the size the run's client
 * cap gives (coordinator/core/bloom.ts), so a report cannot bloat the state.
 *
 * Same contract as the rest of the machine: mutate in place, or throw before mutating.
 *
 * @module
 */

import { witnessBloomParameters } from "./bloom.ts";
import { CoordinatorError } from "./errors.ts";
import {
  assertNotHalted,
  CHANGED,
  changeState,
  checkNow,
  checkSeed,
  leaveWarmup,
  type Outcome,
  UNCHANGED,
} from "./machine_core.ts";
import { currentRound, previousRound, roundClients, roundSelection } from "./machine_queries.ts";
import { expectedWitnesses, witnessQuorum } from "./witness_quorum.ts";
import {
  addDigestVote,
  checkDigestShape,
  checkVoteRoom,
  isNoDigest,
  NO_DIGEST,
} from "./params_digest.ts";
import {
  type Bloom,
  type CoordinatorState,
  MAX_WITNESSES,
  type NodeIdentity,
  type Round,
  type Witness,
  type WitnessProof,
} from "./types.ts";
import { equalBytes } from "../../common/mod.ts";

const bloomParamsCache = new Map<number, { numBits: number; numKeys: number }>();

function bloomParams(maxClients: number): { numBits: number; numKeys: number } {
  let params = bloomParamsCache.get(maxClients);
  if (params === undefined) {
    params = witnessBloomParameters(maxClients);
    bloomParamsCache.set(maxClients, params);
  }
  return params;
}

function checkBloom(name: string, bloom: Bloom, maxClients: number): void {
  const { numBits, numKeys } = bloomParams(maxClients);
  if (
    typeof bloom !== "object" || bloom === null || !(bloom.keys instanceof BigUint64Array) ||
    !(bloom.bits instanceof Uint8Array)
  ) {
    throw new CoordinatorError("InvalidWitness", `${name} is not a bloom filter`);
  }
  if (bloom.keys.length !== numKeys || bloom.bits.length * 8 !== numBits) {
    throw new CoordinatorError(
      "InvalidWitness",
      `${name} has ${bloom.keys.length} keys and ${bloom.bits.length * 8} bits, expected ` +
        `${numKeys} keys and ${numBits} bits for maxClients ${maxClients}`,
    );
  }
}

function isIndex(x: unknown): x is number {
  return typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
}

/** Throws `InvalidWitness` unless `proof` has integer index and position and a boolean flag. */
function checkProofShape(proof: WitnessProof | undefined): void {
  if (
    typeof proof !== "object" || proof === null || !isIndex(proof.index) ||
    !isIndex(proof.position) || typeof proof.witness !== "boolean"
  ) {
    throw new CoordinatorError("InvalidWitness", "proof must have integer index and position");
  }
}

/**
 * Throws unless `proof` claims a witness seat and the seat verifies against `round`'s
 * committee selection.
 */
function checkElectedWitness(state: CoordinatorState, round: Round, proof: WitnessProof): void {
  if (!proof.witness) {
    throw new CoordinatorError("InvalidWitness", `client ${proof.index} claims no witness seat`);
  }
  if (!roundSelection(state.config, round).verifyWitness(proof)) {
    throw new CoordinatorError(
      "InvalidCommitteeProof",
      `witness proof (index ${proof.index}, position ${proof.position}) does not verify ` +
        `for round ${round.height}`,
    );
  }
}

/**
 * The height of the round that ended before the current one, when `proof` is that round's
 * witness seat and not the current round's: a report that arrived after its quorum moved the
 * run on. Null otherwise. A report carries no round height, so this is how a late report is
 * told from a forged one.
 */
export function lateWitnessHeight(state: CoordinatorState, proof: WitnessProof): number | null {
  const previous = previousRound(state);
  if (previous === null || proof?.witness !== true) return null;
  if (roundSelection(state.config, currentRound(state)).verifyWitness(proof)) return null;
  return roundSelection(state.config, previous).verifyWitness(proof) ? previous.height : null;
}

/**
 * Throws `InvalidWitness` unless `witness` is well formed for this run: integer proof
 * fields, a boolean flag, blooms of the run's size, a 32-byte Merkle root.
 */
export function checkWitnessShape(state: CoordinatorState, witness: Witness): void {
  checkProofShape(witness?.proof);
  checkBloom("participantBloom", witness.participantBloom, state.config.maxClients);
  checkBloom("broadcastBloom", witness.broadcastBloom, state.config.maxClients);
  if (!(witness.broadcastMerkle instanceof Uint8Array) || witness.broadcastMerkle.length !== 32) {
    throw new CoordinatorError("InvalidWitness", "broadcastMerkle must be 32 bytes");
  }
}

function copyWitness(w: Witness): Witness {
  return {
    proof: { position: w.proof.position, index: w.proof.index, witness: w.proof.witness },
    participantBloom: {
      keys: w.participantBloom.keys.slice(),
      bits: w.participantBloom.bits.slice(),
    },
    broadcastBloom: { keys: w.broadcastBloom.keys.slice(), bits: w.broadcastBloom.bits.slice() },
    broadcastMerkle: w.broadcastMerkle.slice(),
  };
}

function checkSender(state: CoordinatorState, from: NodeIdentity, index: number): void {
  const client = state.epochState.clients[index];
  if (client === undefined) {
    throw new CoordinatorError(
      "InvalidWitness",
      `proof index ${index} is out of range (${state.epochState.clients.length} clients)`,
    );
  }
  if (!(from?.signer instanceof Uint8Array) || !equalBytes(client.id.signer, from.signer)) {
    throw new CoordinatorError("InvalidWitness", `proof index ${index} belongs to another client`);
  }
}

function checkRoom(witnesses: readonly Witness[], index: number): void {
  if (witnesses.some((w) => w.proof.index === index)) {
    throw new CoordinatorError("DuplicateWitness", `client ${index} already reported this round`);
  }
  if (witnesses.length >= MAX_WITNESSES) {
    throw new CoordinatorError("WitnessesFull", `the round already has ${MAX_WITNESSES} witnesses`);
  }
}

/**
 * A client reports it finished loading the model (Warmup). `witness.proof` must be
 * `{ index: <sender's index>, position: index }` and the sender Healthy; blooms are
 * unused but must have the run's size. Once the round's expected number of clients
 * (`witnessNodes`, or `min(clients, MAX_WITNESSES)`) reported, training starts at once
 * with `seed`, without waiting for the Warmup timer. Ignored (Unchanged) if training
 * already started; WrongRunState in any other state.
 *
 * `paramsDigest` is the digest of the model the client loaded: a vote for the parameters the
 * epoch starts from (all zero: no vote; coordinator/core/params_digest.ts).
 */
export function warmupWitness(
  state: CoordinatorState,
  from: NodeIdentity,
  report: Witness,
  now: number,
  seed: bigint,
  paramsDigest: Uint8Array = NO_DIGEST,
): Outcome {
  checkNow(now);
  checkSeed(seed);
  assertNotHalted(state, "accept a warmup witness");
  if (state.runState === "RoundTrain") return UNCHANGED;
  if (state.runState !== "Warmup") {
    throw new CoordinatorError("WrongRunState", `warmup witness in ${state.runState}`);
  }
  checkWitnessShape(state, report);
  checkDigestShape(paramsDigest);
  const { index, position } = report.proof;
  checkSender(state, from, index);
  if (position !== index) {
    throw new CoordinatorError(
      "InvalidWitness",
      `warmup proof position must equal its index ${index}, found ${position}`,
    );
  }
  const clients = state.epochState.clients;
  if (clients[index].state !== "Healthy") {
    throw new CoordinatorError("InvalidWitness", `client ${index} is ${clients[index].state}`);
  }
  const round = currentRound(state);
  checkRoom(round.witnesses, index);
  round.witnesses.push(copyWitness(report));
  addDigestVote(state, index, paramsDigest);
  if (round.witnesses.length >= expectedWitnesses(state.config, clients.length)) {
    return leaveWarmup(state, now, seed);
  }
  return CHANGED;
}

/**
 * An elected witness reports the round (RoundTrain or RoundWitness). The proof must be a
 * witness proof (`witness: true`) that verifies against the current round's selection
 * and belongs to the sender; one report per witness. When a quorum of the round's expected
 * witnesses reported during RoundTrain, the round moves to RoundWitness at once
 * (opportunistic witnessing); the rest report during RoundWitness. Psyche waits for every
 * expected witness, so one witness on a slow link held each round to `max_round_train_time`.
 *
 * `paramsDigest` is the digest of the parameters the round trains on (the witness's, after
 * the round's apply): a vote for the parameters of the round's step (all zero: no vote).
 */
export function witness(
  state: CoordinatorState,
  from: NodeIdentity,
  report: Witness,
  now: number,
  paramsDigest: Uint8Array = NO_DIGEST,
): Outcome {
  checkNow(now);
  assertNotHalted(state, "accept a witness");
  if (state.runState !== "RoundTrain" && state.runState !== "RoundWitness") {
    throw new CoordinatorError("WrongRunState", `witness in ${state.runState}`);
  }
  checkWitnessShape(state, report);
  checkDigestShape(paramsDigest);
  const proof = report.proof;
  const round = currentRound(state);
  const late = lateWitnessHeight(state, proof);
  if (late !== null) {
    throw new CoordinatorError(
      "InvalidCommitteeProof",
      `late: witness proof (index ${proof.index}) is for round ${late}, which already ended`,
    );
  }
  checkElectedWitness(state, round, proof);
  checkSender(state, from, proof.index);
  checkRoom(round.witnesses, proof.index);
  round.witnesses.push(copyWitness(report));
  addDigestVote(state, proof.index, paramsDigest);
  const quorum = witnessQuorum(expectedWitnesses(state.config, round.clientsLen));
  if (state.runState === "RoundTrain" && round.witnesses.length >= quorum) {
    changeState(state, "RoundWitness", now);
  }
  return CHANGED;
}

/**
 * A witness of the epoch's last round reports, during Cooldown, the digest of the parameters
 * after the epoch's last apply: a vote for the parameters the next epoch starts from, tallied
 * when Cooldown ends (coordinator/core/params_digest.ts). The proof must be a witness proof that
 * verifies against the last round's selection and belongs to the sender; one report per
 * witness; the digest must not be all zero.
 */
export function cooldownWitness(
  state: CoordinatorState,
  from: NodeIdentity,
  proof: WitnessProof,
  paramsDigest: Uint8Array,
  now: number,
): Outcome {
  checkNow(now);
  assertNotHalted(state, "accept a cooldown witness");
  if (state.runState !== "Cooldown") {
    throw new CoordinatorError("WrongRunState", `cooldown witness in ${state.runState}`);
  }
  checkProofShape(proof);
  checkDigestShape(paramsDigest);
  if (isNoDigest(paramsDigest)) {
    throw new CoordinatorError("InvalidWitness", "a cooldown witness must carry a digest");
  }
  const round = currentRound(state);
  checkElectedWitness(state, round, proof);
  // Proofs index the last round's client list; clients may have left at its end.
  const voter = roundClients(state, round.height)[proof.index];
  if (voter === undefined || !(from?.signer instanceof Uint8Array)) {
    throw new CoordinatorError("InvalidWitness", `proof index ${proof.index} is out of range`);
  }
  if (!equalBytes(voter.id.signer, from.signer)) {
    throw new CoordinatorError(
      "InvalidWitness",
      `proof index ${proof.index} belongs to another client`,
    );
  }
  if (voter.state !== "Healthy") {
    throw new CoordinatorError("InvalidWitness", `client ${proof.index} is ${voter.state}`);
  }
  checkVoteRoom(state, proof.index);
  addDigestVote(state, proof.index, paramsDigest);
  return CHANGED;
}
