import assert from "node:assert/strict";
import { hubReportDecision } from "./hub_report.ts";
import { cooldownWitness, currentRound, roundSelection } from "../../coordinator/core/mod.ts";
import {
  identities,
  RunDriver,
  testState,
  witnessIndices,
} from "../../tests/support/coordinator_fixtures.ts";
import { toHex } from "../../common/mod.ts";

function inCooldown(): RunDriver {
  const d = new RunDriver(testState({ epochTime: 1000, totalSteps: 3 }));
  d.startEpoch(identities(4));
  d.warmupTimeout();
  while (d.state.runState !== "Cooldown") d.fullRound();
  return d;
}

function vote(d: RunDriver, fill: (k: number) => number): void {
  const selection = roundSelection(d.state.config, currentRound(d.state));
  witnessIndices(d.state).forEach((i, k) => {
    const id = d.state.epochState.clients[i].id;
    cooldownWitness(
      d.state,
      id,
      selection.witnessProof(i),
      new Uint8Array(32).fill(fill(k)),
      d.now,
    );
  });
}

Deno.test("hub report: waits for the vote, sends for the chosen digest, skips another", () => {
  const d = inCooldown();
  const mine = { epoch: 0, step: d.state.progress.step, digest: toHex(new Uint8Array(32).fill(7)) };
  const waiting = hubReportDecision(d.state, mine);
  assert.equal(waiting.kind, "wait");
  assert.match((waiting as { reason: string }).reason, /no quorum yet \(0 votes, 2 agreeing/);
  vote(d, () => 7);
  assert.deepEqual(hubReportDecision(d.state, mine), { kind: "send" });
  const other = { ...mine, digest: toHex(new Uint8Array(32).fill(8)) };
  const skipped = hubReportDecision(d.state, other);
  assert.equal(skipped.kind, "skip");
  assert.match(
    (skipped as { reason: string }).reason,
    new RegExp(`vote chose parameters ${"07".repeat(32)}, this upload holds ${"08".repeat(32)}`),
  );
});

Deno.test("hub report: a split vote waits; a Cooldown that is over skips", () => {
  const d = inCooldown();
  const mine = { epoch: 0, step: d.state.progress.step, digest: toHex(new Uint8Array(32).fill(1)) };
  vote(d, (k) => k % 2 + 1);
  assert.equal(hubReportDecision(d.state, mine).kind, "wait");
  d.tick(d.state.config.cooldownTime);
  const over = hubReportDecision(d.state, mine);
  assert.equal(over.kind, "skip");
  assert.match(
    (over as { reason: string }).reason,
    /Cooldown of epoch 0 is over \(the run is Finished in epoch 1\)/,
  );
  assert.equal(hubReportDecision(inCooldown().state, { ...mine, epoch: 1 }).kind, "skip");
});
