/**
 * Invariants every reachable coordinator state satisfies, and a recorder that checks the
 * ones that span calls (legal run-state edges, data index strictly increasing round after
 * round). Simulations and property tests run these after every call.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CoordinatorState,
  currentRound,
  isLegalTransition,
  MAX_WITNESSES,
  MIN_ROUNDS_PER_EPOCH,
  NUM_STORED_ROUNDS,
  roundAssignments,
  roundBatchSize,
  roundByHeight,
  roundClients,
  roundSelection,
  RUN_STATES,
} from "../../coordinator/core/mod.ts";
import { toHex } from "../../common/mod.ts";

const IN_ROUND = new Set(["RoundTrain", "RoundWitness"]);

/** Throws an AssertionError naming the first invariant `state` breaks. */
export function checkStateInvariants(state: CoordinatorState): void {
  const { epochState: es, config, progress } = state;
  assert.ok(RUN_STATES.includes(state.runState), `unknown run state ${state.runState}`);
  assert.equal(es.rounds.length, NUM_STORED_ROUNDS, "ring buffer size");
  assert.ok(es.roundsHead >= 0 && es.roundsHead < NUM_STORED_ROUNDS, "roundsHead in range");
  assert.ok(progress.step >= 1, "step >= 1");
  assert.ok(es.clients.length <= config.maxClients, "client cap");
  if (state.pendingPause) {
    assert.ok(
      ["RoundTrain", "RoundWitness", "Cooldown"].includes(state.runState),
      `pendingPause in ${state.runState}`,
    );
  }
  assert.ok(es.lastStep === 0 || es.lastStep - es.startStep >= MIN_ROUNDS_PER_EPOCH, "lastStep");

  // Clients: ordered by epoch index, unique, exited ones not Healthy.
  const seenSigners = new Set<string>();
  const seenIndices = new Set<number>();
  for (let i = 0; i < es.clients.length; i++) {
    if (i > 0) {
      assert.ok(es.clients[i - 1].epochIndex < es.clients[i].epochIndex, "clients in epoch order");
    }
  }
  for (const c of [...es.clients, ...es.exitedClients]) {
    const key = toHex(c.id.signer);
    assert.ok(!seenSigners.has(key), `client with epochIndex ${c.epochIndex} listed twice`);
    assert.ok(!seenIndices.has(c.epochIndex), `epochIndex ${c.epochIndex} used twice`);
    seenSigners.add(key);
    seenIndices.add(c.epochIndex);
  }
  for (const c of es.exitedClients) assert.notEqual(c.state, "Healthy", "exited client is Healthy");

  if (IN_ROUND.has(state.runState) || state.runState === "Cooldown") {
    const cur = currentRound(state);
    if (IN_ROUND.has(state.runState)) {
      assert.equal(cur.clientsLen, es.clients.length, "clientsLen of the live round");
    }
    // Every stored round of this epoch: list rebuildable, data index contiguous, witnesses valid.
    for (let back = 0; back < NUM_STORED_ROUNDS && cur.height - back >= 0; back++) {
      const round = roundByHeight(state, cur.height - back);
      assert.ok(round !== null, `round ${cur.height - back} missing from the ring`);
      assert.equal(
        roundClients(state, round.height).length,
        round.clientsLen,
        `client list of round ${round.height}`,
      );
      const next = roundByHeight(state, round.height + 1);
      if (next !== null) {
        assert.equal(next.dataIndex, round.dataIndex + roundBatchSize(state, round), "data index");
      }
      assert.ok(round.witnesses.length <= MAX_WITNESSES, "witness cap");
      const selection = roundSelection(config, round);
      const indices = new Set<number>();
      for (const w of round.witnesses) {
        assert.ok(w.proof.witness && selection.verifyWitness(w.proof), "stored witness verifies");
        assert.ok(!indices.has(w.proof.index), "witness stored twice");
        indices.add(w.proof.index);
      }
    }
  }
}

/** The live round's batches cover its data range exactly once, contiguously, one per trainer. */
export function checkAssignment(state: CoordinatorState): void {
  const round = currentRound(state);
  const assignments = roundAssignments(state, round);
  let next = round.dataIndex;
  const owners = new Set<number>();
  for (const { batch, clientIndex } of assignments) {
    assert.equal(batch.start, next, "batches contiguous");
    assert.ok(batch.end >= batch.start, "non-empty batch");
    assert.ok(clientIndex >= 0 && clientIndex < round.clientsLen, "owner in range");
    assert.ok(!owners.has(clientIndex), "one batch per trainer");
    owners.add(clientIndex);
    next = batch.end + 1;
  }
  assert.equal(next, round.dataIndex + roundBatchSize(state, round), "batches cover the round");
}

/**
 * Follows a run across calls: each run-state change must be a legal edge, and each new
 * round (new epoch or height) must start at a strictly larger data index and assign its
 * batches exactly once ({@linkcode checkAssignment}).
 */
export class TransitionRecorder {
  #lastState: string;
  #lastRound: { epoch: number; height: number; dataIndex: number } | null = null;
  /** Every run-state change seen, in order, as `from->to`. */
  readonly edges: string[] = [];
  /** Data indices of the rounds seen, in order. */
  readonly roundStarts: number[] = [];

  constructor(state: CoordinatorState) {
    this.#lastState = state.runState;
  }

  /** Call after every call on the machine. */
  observe(state: CoordinatorState): void {
    const now = state.runState;
    if (now !== this.#lastState) {
      assert.ok(
        isLegalTransition(this.#lastState as never, now),
        `illegal transition ${this.#lastState} -> ${now}`,
      );
      this.edges.push(`${this.#lastState}->${now}`);
      this.#lastState = now;
    }
    if (now === "RoundTrain") {
      const r = currentRound(state);
      const last = this.#lastRound;
      const key = { epoch: state.progress.epoch, height: r.height, dataIndex: r.dataIndex };
      if (last === null || last.epoch !== key.epoch || last.height !== key.height) {
        if (last !== null) {
          assert.ok(
            key.dataIndex > last.dataIndex,
            `data index ${key.dataIndex} after ${last.dataIndex}`,
          );
        }
        this.#lastRound = key;
        this.roundStarts.push(key.dataIndex);
        checkAssignment(state);
      }
    }
  }
}
