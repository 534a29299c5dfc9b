/**
 * Property tests of the coordinator over random event sequences, hostile ones included:
 * unknown senders, duplicate and forged witnesses, proofs of other clients, mis-sized
 * blooms, health checks of healthy clients, bad checkpoints, withdraws of nobody, pause
 * and resume at any time, clocks that jump backwards.
 *
 * Properties, after every event:
 * - a call either succeeds or throws a CoordinatorError, never anything else;
 * - a call that throws leaves the state byte-identical (its state encoding is unchanged);
 * - a call's outcome is Unchanged exactly when its state encoding did not change;
 * - the state satisfies every invariant and encodes/decodes losslessly;
 * - run states only move along legal edges and data indices only grow.
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { decodeCoordinatorState, encodeCoordinatorState } from "../coordinator/encoding/mod.ts";
import {
  emptyBloom,
  identity,
  testState,
  warmupReport,
  witnessReport,
} from "./support/coordinator_fixtures.ts";
import { checkStateInvariants, TransitionRecorder } from "./support/coordinator_invariants.ts";
import {
  type Checkpoint,
  checkpoint,
  CoordinatorError,
  type CoordinatorState,
  createBloom,
  currentRound,
  healthCheck,
  type NodeIdentity,
  pause,
  previousRound,
  resume,
  roundSelection,
  tick,
  unhealthyTrainers,
  warmupWitness,
  withdraw,
  withdrawAll,
  type Witness,
  witness,
} from "../coordinator/core/mod.ts";
import { equalBytes } from "../common/mod.ts";

/** Identities 0..N-1 may join; N..N+1 never do (outsiders). */
const N = 7;

type Forgery = "none" | "position" | "flag" | "bloom" | "merkle" | "index";

type Event =
  | { kind: "tick"; dt: number; joined: number; seed: bigint }
  | { kind: "warmupWitness"; from: number; index: number; forgery: Forgery; seed: bigint }
  | { kind: "witness"; from: number; index: number; forgery: Forgery; seen: number }
  | {
    kind: "healthCheck";
    from: number;
    targets: Array<{ id: number; index: number; forge: boolean }>;
  }
  | { kind: "checkpoint"; from: number; index: number; report: number }
  | { kind: "withdraw"; index: number }
  | { kind: "withdrawAll" }
  | { kind: "pause"; dt: number }
  | { kind: "resume"; dt: number };

const who = fc.integer({ min: 0, max: N + 1 });
const forgery = fc.constantFrom<Forgery>(
  "none",
  "none",
  "none",
  "position",
  "flag",
  "bloom",
  "merkle",
  "index",
);
const seed = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });

const event: fc.Arbitrary<Event> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("tick" as const),
      dt: fc.integer({ min: -3, max: 12 }),
      joined: fc.integer({ min: 0, max: (1 << (N + 2)) - 1 }),
      seed,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("warmupWitness" as const),
      from: who,
      index: who,
      forgery,
      seed,
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("witness" as const),
      from: who,
      index: who,
      forgery,
      seen: fc.integer({ min: 0, max: (1 << N) - 1 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("healthCheck" as const),
      from: who,
      targets: fc.array(fc.record({ id: who, index: who, forge: fc.boolean() }), { maxLength: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("checkpoint" as const),
      from: who,
      index: who,
      report: fc.integer({ min: 0, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("withdraw" as const),
      index: fc.integer({ min: -1, max: N + 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("withdrawAll" as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("pause" as const),
      dt: fc.integer({ min: -2, max: 5 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("resume" as const),
      dt: fc.integer({ min: -2, max: 5 }),
    }),
  },
);

const REPORTS: Checkpoint[] = [
  { kind: "Hub", repo: { repoId: "org/next", revision: "r1" } },
  { kind: "Gcs", repo: { bucket: "bucket", prefix: null } },
  { kind: "Hub", repo: { repoId: "", revision: null } },
  { kind: "P2P", repo: { repoId: "org/x", revision: null } },
];

/** The client index of identity `i` in the current list, or `i` itself if absent. */
function forge(state: CoordinatorState, w: Witness, f: Forgery): Witness {
  switch (f) {
    case "none":
      return w;
    case "position":
      return { ...w, proof: { ...w.proof, position: w.proof.position + 1 } };
    case "flag":
      return { ...w, proof: { ...w.proof, witness: !w.proof.witness } };
    case "bloom":
      return { ...w, participantBloom: createBloom(64, new BigUint64Array(1)) };
    case "merkle":
      return { ...w, broadcastMerkle: new Uint8Array(8) };
    case "index":
      return { ...w, proof: { ...w.proof, index: state.epochState.clients.length + 3 } };
  }
}

function witnessFor(state: CoordinatorState, index: number, seen: number): Witness {
  const round = currentRound(state);
  if (index >= round.clientsLen) {
    return {
      proof: { index, position: index, witness: true },
      participantBloom: emptyBloom(state),
      broadcastBloom: emptyBloom(state),
      broadcastMerkle: new Uint8Array(32),
    };
  }
  const seenIds = [];
  for (let i = 0; i < N; i++) if ((seen >> i) & 1) seenIds.push(identity(i));
  return witnessReport(state, index, seenIds);
}

function healthTargets(
  state: CoordinatorState,
  targets: Array<{ id: number; index: number; forge: boolean }>,
) {
  const prev = previousRound(state);
  return targets.map(({ id, index, forge }) => {
    const proof = prev !== null && index < prev.clientsLen
      ? roundSelection(state.config, prev).committeeProof(index)
      : { committee: "Trainer" as const, position: index, index };
    return { id: identity(id), proof: forge ? { ...proof, position: proof.position + 1 } : proof };
  });
}

class Run {
  state: CoordinatorState;
  now = 100;
  recorder: TransitionRecorder;
  rejected = 0;
  accepted = 0;

  constructor(config = {}) {
    this.state = testState({ minClients: 2, initMinClients: 2, maxClients: 8, ...config }, 100);
    this.recorder = new TransitionRecorder(this.state);
  }

  #time(dt: number): number {
    this.now = Math.max(0, this.now + dt);
    return this.now;
  }

  apply(e: Event): void {
    const s = this.state;
    switch (e.kind) {
      case "tick": {
        const pending: NodeIdentity[] = [];
        for (let i = 0; i < N + 2; i++) if ((e.joined >> i) & 1) pending.push(identity(i));
        const now = this.#time(e.dt);
        if (
          s.runState === "Paused" || s.runState === "Finished" || s.runState === "Uninitialized"
        ) {
          this.#expect(() => tick(s, pending, now, e.seed), "Halted");
        } else {
          this.#run(() => tick(s, pending, now, e.seed));
        }
        return;
      }
      case "warmupWitness": {
        const report = forge(s, warmupReport(s, e.index), e.forgery);
        this.#run(() => warmupWitness(s, identity(e.from), report, this.now, e.seed));
        return;
      }
      case "witness": {
        if (s.runState !== "RoundTrain" && s.runState !== "RoundWitness") {
          this.#run(() => witness(s, identity(e.from), warmupReport(s, e.index), this.now));
          return;
        }
        const report = forge(s, witnessFor(s, e.index, e.seen), e.forgery);
        this.#run(() => witness(s, identity(e.from), report, this.now));
        return;
      }
      case "healthCheck": {
        const checks = healthTargets(s, e.targets);
        this.#run(() => healthCheck(s, identity(e.from), checks));
        return;
      }
      case "checkpoint":
        this.#run(() => checkpoint(s, identity(e.from), e.index, REPORTS[e.report], this.now));
        return;
      case "withdraw":
        this.#run(() => withdraw(s, e.index));
        return;
      case "withdrawAll":
        this.#run(() => withdrawAll(s));
        return;
      case "pause": {
        const now = this.#time(e.dt);
        this.#run(() => pause(s, now));
        return;
      }
      case "resume": {
        const now = this.#time(e.dt);
        this.#run(() => resume(s, now));
        return;
      }
    }
  }

  /** Runs a call: success, or a CoordinatorError with the state byte-identical. */
  call(fn: () => unknown): boolean {
    return this.#run(fn);
  }

  #run(fn: () => unknown): boolean {
    const before = encodeCoordinatorState(this.state);
    let ok = true;
    try {
      const result = fn();
      this.accepted++;
      if (typeof result === "object" && result !== null && "kind" in result) {
        const same = equalBytes(encodeCoordinatorState(this.state), before);
        assert.equal(same, result.kind === "Unchanged", `outcome ${result.kind} vs state change`);
      }
    } catch (err) {
      if (!(err instanceof CoordinatorError)) throw err;
      this.rejected++;
      ok = false;
      assert.deepEqual(
        encodeCoordinatorState(this.state),
        before,
        `state changed by rejected call: ${err.message}`,
      );
    }
    this.#check();
    return ok;
  }

  #expect(fn: () => unknown, code: string): void {
    const before = encodeCoordinatorState(this.state);
    assert.throws(fn, (e: unknown) => e instanceof CoordinatorError && e.code === code);
    assert.deepEqual(encodeCoordinatorState(this.state), before);
    this.#check();
  }

  #check(): void {
    checkStateInvariants(this.state);
    this.recorder.observe(this.state);
    const bytes = encodeCoordinatorState(this.state);
    assert.deepEqual(
      encodeCoordinatorState(decodeCoordinatorState(bytes)),
      bytes,
      "encoding round-trip",
    );
  }
}

Deno.test("property: random and hostile event sequences keep the machine sound", () => {
  let accepted = 0;
  let rejected = 0;
  const edges = new Set<string>();
  fc.assert(
    fc.property(
      fc.array(event, { minLength: 1, maxLength: 80, size: "max" }),
      fc.integer({ min: 0, max: 3 }),
      (events, w) => {
        const run = new Run({ witnessNodes: w === 3 ? 0 : w });
        for (const e of events) run.apply(e);
        accepted += run.accepted;
        rejected += run.rejected;
        for (const edge of run.recorder.edges) edges.add(edge);
      },
    ),
    { numRuns: 250, seed: 0x5eed },
  );
  // The generator must reach deep states, not only reject everything.
  assert.ok(accepted > 1000 && rejected > 1000, `accepted ${accepted}, rejected ${rejected}`);
  for (
    const edge of ["WaitingForMembers->Warmup", "Warmup->RoundTrain", "RoundTrain->RoundWitness"]
  ) {
    assert.ok(edges.has(edge), `never reached ${edge}`);
  }
});

/** A mostly-honest driver: events that make progress, mixed with hostile ones. */
const honestTick = fc.record({
  kind: fc.constant("tick" as const),
  dt: fc.integer({ min: 1, max: 6 }),
  joined: fc.constant((1 << N) - 1),
  seed,
});

/** All witnesses report what they saw (a random set of the clients). */
const honestWitness = fc.record({
  kind: fc.constant("witness" as const),
  from: fc.constant(0),
  index: fc.constant(0),
  forgery: fc.constant<Forgery>("none"),
  seen: fc.integer({ min: 0, max: (1 << N) - 1 }),
});
/** A client reports exactly the unhealthy trainers. */
const honestHealthCheck = fc.record({
  kind: fc.constant("healthCheck" as const),
  from: fc.constant(0),
  targets: fc.constant<Array<{ id: number; index: number; forge: boolean }>>([]),
});

Deno.test("property: mostly-honest runs reach every run state through legal edges only", () => {
  const edges = new Set<string>();
  let healthChecks = 0;
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          { weight: 6, arbitrary: honestTick },
          { weight: 4, arbitrary: honestWitness },
          { weight: 1, arbitrary: honestHealthCheck },
          { weight: 3, arbitrary: event },
        ),
        {
          minLength: 50,
          maxLength: 200,
          size: "max",
        },
      ),
      (events) => {
        const run = new Run({ witnessNodes: 0, totalSteps: 12, epochTime: 40 });
        for (const e of events) {
          const s = run.state;
          const inRound = s.runState === "RoundTrain" || s.runState === "RoundWitness";
          // Honest witnesses: every current witness reports (what it saw) on a witness event.
          if (e.kind === "witness" && e.forgery === "none" && inRound) {
            for (const i of roundSelection(s.config, currentRound(s)).witnessIndices()) {
              run.apply({ ...e, index: i, from: indexToIdentity(s, i) });
            }
            continue;
          }
          // Honest health checks: a client reports exactly the unhealthy trainers.
          if (e.kind === "healthCheck" && e.from % 2 === 0 && inRound) {
            const checks = unhealthyTrainers(s);
            const from = s.epochState.clients[0]?.id;
            if (checks.length > 0 && from !== undefined) {
              assert.ok(
                run.call(() => healthCheck(s, from, checks)),
                "an honest report is accepted",
              );
              healthChecks++;
              assert.equal(unhealthyTrainers(s).length, 0, "everyone reported is dropped");
            }
            continue;
          }
          run.apply(e);
        }
        for (const edge of run.recorder.edges) edges.add(edge);
      },
    ),
    { numRuns: 60, seed: 0xc0ffee },
  );
  for (
    const edge of [
      "RoundWitness->RoundTrain",
      "RoundWitness->Cooldown",
      "Cooldown->WaitingForMembers",
      "Warmup->WaitingForMembers",
      "WaitingForMembers->Paused",
      "Paused->WaitingForMembers",
    ]
  ) {
    assert.ok(edges.has(edge), `never reached ${edge}`);
  }
  assert.ok(healthChecks > 10, `only ${healthChecks} honest health checks were accepted`);
});

/** The identity number (0..N+1) of client `index` of the current list. */
function indexToIdentity(state: CoordinatorState, index: number): number {
  const signer = state.epochState.clients[index]?.id.signer;
  for (let i = 0; i < N + 2; i++) {
    if (signer !== undefined && identity(i).signer.every((b, k) => b === signer[k])) return i;
  }
  return N + 1;
}

Deno.test("property: the machine is deterministic (same events, byte-identical states)", () => {
  fc.assert(
    fc.property(fc.array(event, { minLength: 1, maxLength: 60, size: "max" }), (events) => {
      const a = new Run();
      const b = new Run();
      for (const e of events) {
        a.apply(e);
        b.apply(e);
        assert.deepEqual(encodeCoordinatorState(a.state), encodeCoordinatorState(b.state));
      }
    }),
    { numRuns: 60, seed: 0xd00d },
  );
});
