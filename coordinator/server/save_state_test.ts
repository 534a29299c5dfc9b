import assert from "node:assert/strict";
import { join } from "node:path";
import { RunDriver, testState } from "../../tests/support/coordinator_fixtures.ts";
import { identities, witnessIndices } from "../../tests/support/coordinator_fixtures.ts";
import {
  coordinatorFromToml,
  resumableRunConfig,
  savedStateFileName,
  saveRunConfig,
} from "./save_state.ts";
import { cooldownWitness, currentRound, roundSelection } from "../core/mod.ts";
import { runConfigToToml } from "../config/mod.ts";

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
  // The last round's witnesses report the parameters the next epoch starts from.
  const digest = new Uint8Array(32).fill(0xab);
  for (const index of witnessIndices(state)) {
    const proof = roundSelection(state.config, currentRound(state)).witnessProof(index);
    cooldownWitness(state, state.epochState.clients[index].id, proof, digest, run.now);
  }
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
    assert.match(await Deno.readTextFile(path), new RegExp(`params_digest = "${"ab".repeat(32)}"`));
    assert.deepEqual(resumed.paramsDigests, [{ step: state.progress.step, digest }]);
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

Deno.test("a saved digest that is not 64 hex digits is refused naming the key", () => {
  const state = testState({}, 0);
  const toml = (digest: string) =>
    runConfigToToml(resumableRunConfig(state, 3)).replace(
      /\[progress\]\n/,
      `[progress]\nparams_digest = "${digest}"\n`,
    );
  assert.throws(
    () => coordinatorFromToml(toml("xyz"), "saved.toml", 0),
    /progress\.params_digest.*64 lower-case hex digits/s,
  );
  assert.throws(() => coordinatorFromToml(toml("0".repeat(64)), "saved.toml", 0), /not all zero/);
  const ok = coordinatorFromToml(toml("1f".repeat(32)), "saved.toml", 0);
  assert.deepEqual(ok.paramsDigests, [{ step: 1, digest: new Uint8Array(32).fill(0x1f) }]);
});
