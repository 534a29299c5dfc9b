import assert from "node:assert/strict";
import fc from "fast-check";
import { nextTickDeadline, tick } from "./machine.ts";
import { pause } from "./machine_membership.ts";
import type { CoordinatorConfig, CoordinatorState } from "./types.ts";
import { identities, RunDriver, testState } from "../../tests/support/coordinator_fixtures.ts";
import { fromMillis, toMillis } from "../../common/mod.ts";

/** A run configured the way a loopback TCP run may be: sub-second timers. */
const FAST: Partial<CoordinatorConfig> = {
  waitingForMembersExtraTime: 0.05,
  warmupTime: 0.25,
  maxRoundTrainTime: 0.5,
  roundWitnessTime: 0.1,
  cooldownTime: 0.2,
  epochTime: 3.6,
};
/** A wall-clock start with milliseconds, as the TCP server's clock gives. */
const T0 = 1763718509.123;

/** `t` minus one millisecond. */
const justBefore = (t: number) => fromMillis(toMillis(t) - 1);

Deno.test("fractional timers fire at their exact millisecond, not one earlier", () => {
  const d = new RunDriver(testState(FAST, T0));
  const four = identities(4);

  assert.deepEqual(tick(d.state, four, T0 + 0.049, 1n), { kind: "Unchanged" });
  assert.deepEqual(tick(d.state, four, 1763718509.173, 1n), { kind: "Changed" });
  assert.equal(d.state.runState, "Warmup");
  assert.equal(d.state.runStateStartUnixTimestamp, 1763718509.173);
  assert.equal(d.state.epochState.startTimestamp, 1763718509.173);

  assert.deepEqual(tick(d.state, null, 1763718509.422, 2n), { kind: "Unchanged" });
  tick(d.state, null, 1763718509.423, 2n);
  assert.equal(d.state.runState, "RoundTrain");

  d.now = 1763718509.423;
  d.witnessFirst(2); // a quorum of 4: RoundWitness at once, and the others have its window
  assert.equal(d.state.runState, "RoundWitness");
  assert.deepEqual(tick(d.state, null, 1763718509.522, 3n), { kind: "Unchanged" });
  tick(d.state, null, 1763718509.523, 3n);
  assert.equal(d.state.runState, "RoundTrain");
  assert.equal(d.state.progress.step, 2);
});

Deno.test("nextTickDeadline: start + the state's timer, null when only an event can move it", () => {
  const s = testState(FAST, T0);
  assert.equal(nextTickDeadline(s, 1), null, "fewer pending than initMinClients");
  assert.equal(nextTickDeadline(s, 2), 1763718509.173);
  const d = new RunDriver(s);
  d.startEpoch(identities(2));
  assert.equal(nextTickDeadline(s, 0), addMs(d.now, 250));
  d.warmupTimeout();
  assert.equal(nextTickDeadline(s, 0), addMs(d.now, 500));
  d.witnessAll();
  // Every expected witness reported: nothing left to wait for, the round ends in the next ms.
  assert.equal(nextTickDeadline(s, 0), addMs(d.now, 1));

  const four = new RunDriver(testState(FAST, T0));
  four.startEpoch(identities(4));
  four.warmupTimeout();
  four.witnessFirst(2); // a quorum, not everyone: the window stays open for the rest
  assert.equal(nextTickDeadline(four.state, 0), addMs(four.now, 100));

  const whole = testState({}, 10);
  assert.equal(nextTickDeadline(whole, 2), 11, "whole seconds give whole seconds");
  const paused = testState({}, 10);
  pause(paused, 10);
  assert.equal(nextTickDeadline(paused, 2), null);
});

Deno.test("nextTickDeadline: a zero warmup ends one millisecond after it began", () => {
  const d = new RunDriver(testState({ warmupTime: 0 }, 10));
  d.startEpoch(identities(2));
  assert.equal(nextTickDeadline(d.state, 0), 11.001);
  assert.deepEqual(tick(d.state, null, 11, 1n), { kind: "Unchanged" });
  tick(d.state, null, 11.001, 1n);
  assert.equal(d.state.runState, "RoundTrain");
});

function addMs(t: number, ms: number): number {
  return fromMillis(toMillis(t) + ms);
}

/** Drives a fresh run `steps` transitions forward with witnesses, returns it. */
function runTo(config: Partial<CoordinatorConfig>, start: number, steps: number): CoordinatorState {
  const d = new RunDriver(testState(config, start, { coldStartWarmupSteps: 0 }));
  const pending = identities(3);
  for (let i = 0; i < steps; i++) {
    const at = nextTickDeadline(d.state, pending.length);
    if (at === null) break;
    if (d.state.runState === "RoundTrain" && i % 2 === 0) {
      d.now = d.state.runStateStartUnixTimestamp; // the witnesses report as the round begins
      d.witnessAll();
    } else {
      d.now = at;
      tick(d.state, pending, at, d.nextSeed());
    }
  }
  return d.state;
}

Deno.test("property: a tick one millisecond before the deadline leaves the run state, at it moves", () => {
  const ms = (min: number, max: number) => fc.integer({ min, max }).map(fromMillis);
  const config = fc.record({
    waitingForMembersExtraTime: ms(1, 5000),
    warmupTime: ms(0, 5000),
    maxRoundTrainTime: ms(1, 5000),
    roundWitnessTime: ms(1, 5000),
    cooldownTime: ms(1, 5000),
    epochTime: ms(5001, 60_000),
  });
  const start = fc.oneof(fc.integer({ min: 0, max: 2e9 }), ms(0, 2e12));
  fc.assert(
    fc.property(config, start, fc.integer({ min: 0, max: 30 }), (c, t0, steps) => {
      const state = runTo(c, t0, steps);
      const deadline = nextTickDeadline(state, 3);
      if (deadline === null) return;
      const before = structuredClone(state);
      const from = state.runState;
      tick(before, identities(3), justBefore(deadline), 1n);
      assert.equal(before.runState, from);
      tick(state, identities(3), deadline, 1n);
      assert.notEqual(state.runState, from);
    }),
    { numRuns: 150 },
  );
});
