/**
 * End-to-end P2P model sharing on a real local testnet (after Psyche's
 * `client_join_in_training_and_get_model_using_p2p`): two clients train the first epoch; a third
 * joins mid-run, waits for the next epoch, whose checkpoint is `P2P`, fetches the model from the
 * other two during Warmup (its parameters equal theirs after their last apply), trains, and
 * applies the same results to the same parameters as the others.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startTinyTestnet } from "../client/testing/testnet.ts";
import { assertJoinerInStep, joinAfterFirstEpoch } from "./support/mid_run_join.ts";

Deno.test({
  name: "a client joining mid-run gets the model over P2P and ends with the others' parameters",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using testnet = await startTinyTestnet({
    runId: "e2e-join",
    initMinClients: 2,
    minClients: 1,
    epochTime: 10,
    maxRoundTrainTime: 5,
    globalBatchSize: 6,
  }, { numClients: 2 });
  const { watcher, lines } = testnet;
  const checkpoints = new Map<number, string>();
  testnet.observe((s) => {
    if (s.runState === "Warmup") checkpoints.set(s.progress.epoch, s.model.checkpoint.kind);
  });
  try {
    const { joiner, epoch } = await joinAfterFirstEpoch(testnet);
    // The others' parameters after their last apply of the first epoch.
    const finals = ["client-1", "client-2"].map((l) =>
      watcher.named("apply", l).filter((e) => Number(e.event.epoch) === epoch - 1).at(-1)
    );
    assert.ok(finals.every((e) => e !== undefined), "both applied in the first epoch");
    assert.equal(finals[0]!.event.params_hash, finals[1]!.event.params_hash);

    const model = await watcher.waitFor(
      "the joiner to load its model",
      () => watcher.named("model", joiner)[0],
      60_000,
    );
    assert.equal(checkpoints.get(epoch), "P2P", "the second epoch starts from a P2P checkpoint");
    assert.equal(model.event.weights, "p2p", "the joiner fetched the model from its peers");
    assert.equal(model.event.params_hash, finals[0]!.event.params_hash);

    // It trains, and everyone applies the same results to the same parameters.
    const applied = await assertJoinerInStep(watcher, joiner, epoch);
    assert.ok(watcher.named("train", joiner).length > 0, "the joiner trained");
    assert.equal(applied.event.applied, 3, "the joiner's result is applied by everyone");
  } catch (e) {
    console.error(lines.slice(-100).join("\n"));
    throw e;
  }
});
