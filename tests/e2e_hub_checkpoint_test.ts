/**
 * End to end, checkpoints to the Hub: a TCP coordinator and two clients of the tiny model with
 * `--hub-repo`, uploading to a local fake Hub (client/testing/fake_hub.ts). The Hub itself is
 * unreachable from these machines, so the fake answers the endpoints `@huggingface/hub` calls;
 * the clients run the real library and code path, pointed at it with `--hub-url`.
 *
 * Epoch 0: the Hub answers 500. The elected checkpointer tries again once (`--hub-upload-attempts
 * 2`), logs the failure, nobody reports, the Cooldown lasts its full `cooldown_time`, and training
 * goes on. Epoch 1: the Hub works. The
 * elected checkpointer (one of two clients: a third, at least one) uploads its folder, the fake
 * Hub receives exactly its files, the report names the commit oid, the run's checkpoint becomes
 * that revision, and the Cooldown ends well before its timer. The other client never uploads.
 * With `--delete-old-steps --keep-steps 1` each client keeps one step folder.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type SeenEvent, startTinyTestnet } from "../client/testing/testnet.ts";
import { FakeHub } from "../client/testing/fake_hub.ts";
import type { Checkpoint } from "../coordinator/core/mod.ts";

const COOLDOWN = 8;
const REPO = "owner/tiny";
const CLIENTS = ["client-1", "client-2"];

const time = (e: SeenEvent) => Date.parse(String(e.event.time));

Deno.test({
  name: "an elected checkpointer uploads to the Hub, its report ends Cooldown; a failed " +
    "upload is logged and training goes on",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using hub = FakeHub.start({ token: "hf_e2e", repos: [REPO] });
  hub.failing = true;
  const checkpoints = await Deno.makeTempDir({ prefix: "e2e-hub-ckpt-" });
  const checkpoint: { current: Checkpoint | null } = { current: null };
  try {
    await using testnet = await startTinyTestnet({
      runId: "e2e-hub",
      initMinClients: 2,
      minClients: 1,
      witnessNodes: 1,
      epochTime: 8,
      warmupTime: 4,
      cooldownTime: COOLDOWN,
      maxRoundTrainTime: 6,
    }, {
      numClients: 2,
      checkpointDir: checkpoints,
      checkpointClients: "all",
      clientArgs: [
        "--hub-repo",
        REPO,
        "--hub-url",
        hub.url,
        "--hub-upload-attempts",
        "2",
        "--delete-old-steps",
        "--keep-steps",
        "1",
      ],
      clientEnv: () => ({ HF_TOKEN: "hf_e2e" }),
    });
    const { watcher, lines } = testnet;
    testnet.observe((state) => checkpoint.current = state.model.checkpoint);
    try {
      const coordinator = (name: string) => watcher.named(name, "coordinator");
      const cooldowns = () => {
        const changes = coordinator("state_changed");
        return changes.flatMap((e, i) => {
          if (e.event.to !== "Cooldown") return [];
          const end = changes.slice(i + 1).find((x) => x.event.from === "Cooldown");
          return end === undefined
            ? []
            : [{ epoch: Number(e.event.epoch), ms: time(end) - time(e) }];
        });
      };
      // Epoch 0: the upload fails; Cooldown runs its course.
      const failed = await watcher.waitFor(
        "the first upload to fail",
        () => CLIENTS.flatMap((l) => watcher.named("hub_upload_failed", l))[0],
        120_000,
      );
      assert.match(String(failed.event.error), /HTTP 500/);
      hub.failing = false;
      const retries = watcher.named("hub_upload_retry", failed.label);
      assert.deepEqual(retries.map((e) => [e.event.step, e.event.attempt]), [[
        failed.event.step,
        1,
      ]]);
      await watcher.waitFor("the first Cooldown to end", () => cooldowns().length >= 1, 60_000);
      // Log stamps, not the coordinator's clock: a few ms either way (an early end is seconds).
      assert.ok(
        cooldowns()[0].ms >= COOLDOWN * 1000 - 250,
        `nobody reported: Cooldown 0 lasted ${cooldowns()[0].ms} ms`,
      );
      // Epoch 1: uploaded and reported; the report ends Cooldown early.
      const reported = await watcher.waitFor(
        "a checkpoint reported to the coordinator",
        () => CLIENTS.flatMap((l) => watcher.named("hub_reported", l))[0],
        120_000,
      );
      await watcher.waitFor("the second Cooldown to end", () => cooldowns().length >= 2, 30_000);
      const second = cooldowns()[1];
      assert.ok(second.ms < COOLDOWN * 1000 - 1000, `Cooldown 1 lasted ${second.ms} ms`);
      // Training went on after the failure: both clients trained in epoch 1.
      for (const label of CLIENTS) {
        assert.ok(
          watcher.named("train", label).some((e) => Number(e.event.epoch) >= 1),
          `${label} trained after the failed upload`,
        );
      }
      // Exactly one commit, by the elected client, holding exactly its folder's bytes.
      assert.equal(hub.commits.length, 1);
      const [commit] = hub.commits;
      assert.equal(reported.event.revision, commit.oid);
      const uploader = reported.label;
      const other = CLIENTS.find((l) => l !== uploader)!;
      const step = Number(reported.event.step);
      const uploaded = watcher.named("hub_upload", uploader).find((e) =>
        Number(e.event.step) === step
      );
      assert.ok(uploaded !== undefined);
      // One checkpointer per Cooldown: the other client was not elected and uploaded nothing.
      const atStep = (name: string, label: string) =>
        watcher.named(name, label).filter((e) => Number(e.event.step) === step);
      assert.deepEqual(atStep("checkpointer", other).map((e) => e.event.elected), [false]);
      assert.deepEqual(atStep("hub_upload", other), [], `${other} did not upload step ${step}`);
      assert.deepEqual(atStep("checkpointer", uploader).map((e) => e.event.elected), [true]);
      for (const e of watcher.named("checkpointer")) {
        assert.equal(e.event.checkpointers instanceof Array && e.event.checkpointers.length, 1);
      }
      assert.equal(
        CLIENTS.flatMap((l) => watcher.named("hub_upload", l)).length,
        2,
        "one upload per Cooldown (the failed one, then this one)",
      );
      await watcher.waitFor(
        "the coordinator's checkpoint to name the revision",
        () => checkpoint.current?.kind === "P2P" && checkpoint.current.repo.revision === commit.oid,
        10_000,
      );
      assert.deepEqual(coordinator("checkpoint").map((e) => e.event.client).length, 1);
      // The folder the upload came from is still there (keep 1, and it is the newest).
      const folder = join(checkpoints, uploader, `e2e-hub-step${step}`);
      for (const [name, bytes] of commit.files) {
        assert.deepEqual(bytes, await Deno.readFile(join(folder, name)), name);
      }
      assert.deepEqual([...commit.files.keys()].sort(), uploaded.event.files);
      // --keep-steps 1: the first checkpoint folder went once the second was in place.
      for (const label of CLIENTS) {
        assert.ok(watcher.named("checkpoint_deleted", label).length >= 1, `${label} deleted one`);
      }
    } catch (e) {
      console.error(lines.slice(-120).join("\n"));
      throw e;
    }
  } finally {
    await Deno.remove(checkpoints, { recursive: true });
  }
});
