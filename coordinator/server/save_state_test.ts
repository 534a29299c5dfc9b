import assert from "node:assert/strict";
import { join } from "node:path";
import { RunDriver, testState } from "../../tests/support/coordinator_fixtures.ts";
import { identities } from "../../tests/support/coordinator_fixtures.ts";
import {
  coordinatorFromToml,
  resumableRunConfig,
  savedStateFileName,
  saveRunConfig,
} from "./save_state.ts";

Deno.test("file names follow Psyche and keep the run id file-safe", () => {
  assert.equal(savedStateFileName("llama-20m", 12), "llama-20m-step12.toml");
  assert.equal(savedStateFileName("a/b c", 3), "a_b_c-step3.toml");
});

Deno.test("a run saved after an epoch resumes at its step and checkpoint", async () => {
  const state = testState({
    epochTime: 12,
    warmupTime: 3,
    maxRoundTrainTime: 2,
    initMinClients: 2,
    minClients: 2,
  }, 0);
  const run = new RunDriver(state);
  run.startEpoch(identities(2));
  run.warmupTimeout();
  for (let i = 0; i < 8 && state.runState !== "Cooldown"; i++) {
    run.tick(state.config.maxRoundTrainTime);
    run.fullRound();
  }
  assert.equal(state.runState, "Cooldown");
  const outcome = run.tick(state.config.cooldownTime);
  assert.deepEqual(outcome, { kind: "EpochEnd", success: true });
  assert.equal(state.model.checkpoint.kind, "P2P", "after Cooldown peers serve the model");

  const dir = await Deno.makeTempDir();
  try {
    const path = await saveRunConfig(dir, resumableRunConfig(state, 3));
    assert.equal(path, join(dir, `test-run-step${state.progress.step}.toml`));
    const resumed = coordinatorFromToml(await Deno.readTextFile(path), path, 500);
    assert.equal(resumed.runState, "WaitingForMembers");
    assert.deepEqual(resumed.progress, state.progress);
    assert.deepEqual(resumed.model, state.model);
    assert.deepEqual(resumed.config, state.config);
    assert.equal(resumed.epochState.clients.length, 0);
    assert.equal(resumed.runStateStartUnixTimestamp, 500);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the saved config keeps the configured warmup time, not an override", () => {
  const state = testState({}, 0);
  state.config.warmupTime = 99;
  assert.equal(resumableRunConfig(state, 20).config.warmupTime, 20);
  state.runState = "Paused";
  assert.equal(resumableRunConfig(state, 20).runState, "Paused");
});
