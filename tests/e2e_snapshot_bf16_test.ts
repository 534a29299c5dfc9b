/**
 * End-to-end bf16 snapshots (`[model.LLM] snapshot_dtype = "bf16"`) on a real local testnet:
 * two clients train the first epoch; at its Cooldown each rounds its f32 masters to bf16 and
 * serves them, so both report the same rounded digest and serve half the bytes of f32 (the
 * manifest's sizes); a third client joins for the next epoch, fetches those bf16 blobs over P2P,
 * holds the run's digest, and then trains and applies bit-identically with the others.
 *
 * Mutation check (done by hand, see the report of the change): with
 * `PSYCHE_FAULT_SKIP_SNAPSHOT_ROUNDING=1` on one client its snapshot digest differs and this
 * test fails.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startTinyTestnet } from "../client/testing/testnet.ts";
import { assertJoinerInStep, joinAfterFirstEpoch } from "./support/mid_run_join.ts";

Deno.test({
  name: "bf16 snapshots: every client rounds alike, serves half the bytes, a joiner trains in step",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using testnet = await startTinyTestnet({
    runId: "e2e-bf16",
    initMinClients: 2,
    minClients: 1,
    epochTime: 10,
    maxRoundTrainTime: 5,
    globalBatchSize: 6,
    snapshotDtype: "bf16",
  }, { numClients: 2 });
  const { watcher, lines } = testnet;
  const dtypes = new Set<string>();
  testnet.observe((s) => dtypes.add(s.model.snapshotDtype));
  try {
    const { joiner, epoch } = await joinAfterFirstEpoch(testnet);
    assert.deepEqual([...dtypes], ["bf16"], "every client reads bf16 from the coordinator");

    // Both rounded at Cooldown, to the same parameters, and serve them as bf16 blobs.
    const snapshots = ["client-1", "client-2"].map((l) =>
      watcher.named("model_snapshot", l).find((e) => Number(e.event.epoch) === epoch - 1)
    );
    assert.ok(snapshots.every((e) => e !== undefined), "both served a snapshot");
    const [a, b] = snapshots.map((e) => e!.event);
    assert.equal(a.rounded, true);
    assert.equal(a.snapshot_dtype, "bf16");
    assert.equal(a.params_hash, b.params_hash, "both rounded to the same bits");
    assert.equal(a.bytes, b.bytes);
    const lastApply = watcher.named("apply", "client-1")
      .filter((e) => Number(e.event.epoch) === epoch - 1).at(-1)!;
    // The epoch's last rounds may train nothing: the last apply labels step a.step or earlier.
    assert.ok(Number(lastApply.event.params_step) <= Number(a.step));
    assert.notEqual(lastApply.event.params_hash, a.params_hash, "the rounding changed the masters");
    // The manifest's sizes: 2 bytes per parameter plus the small config blob (f32 would be 4).
    const params = Number(watcher.named("model", "client-1")[0].event.params);
    const bytes = Number(a.bytes);
    assert.ok(
      bytes >= 2 * params && bytes < 2 * params + 4096,
      `${bytes} bytes served for ${params} parameters: not bf16`,
    );

    // The joiner fetches the bf16 blobs and holds the run's rounded parameters.
    const model = await watcher.waitFor(
      "the joiner to load its model",
      () => watcher.named("model", joiner)[0],
      60_000,
    );
    assert.equal(model.event.weights, "p2p", "the joiner fetched the model from its peers");
    assert.equal(model.event.params_hash, a.params_hash);
    assert.equal(model.event.params_step, a.step);

    // It trains, and everyone applies the same results to the same parameters.
    const applied = await assertJoinerInStep(watcher, joiner, epoch);
    assert.equal(applied.event.applied, 3, "the joiner's result is applied by everyone");
    assert.equal(watcher.named("diverged").length, 0, "nobody diverged");
  } catch (e) {
    console.error(lines.slice(-100).join("\n"));
    throw e;
  }
});
