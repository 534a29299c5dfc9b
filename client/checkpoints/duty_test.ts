/**
 * The checkpoint duty with the real upload against the local fake Hub (huggingface.co is not
 * reachable from these machines: client/testing/fake_hub.ts), a recording backend, and
 * coordinator states from the pure core.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CheckpointDuty, type WrittenCheckpoint } from "./duty.ts";
import { type HubUpload, uploadCheckpoint } from "./hub_upload.ts";
import { FakeHub } from "../testing/fake_hub.ts";
import type { ClientEventName, ClientEvents, ClientLogger } from "../log.ts";
import {
  type Checkpoint,
  cooldownWitness,
  type CoordinatorState,
  currentRound,
  roundSelection,
} from "../../coordinator/core/mod.ts";
import {
  identities,
  RunDriver,
  testState,
  witnessIndices,
} from "../../tests/support/coordinator_fixtures.ts";
import { tinyModel } from "../../model/testing/fixtures.ts";
import { writeModelDir } from "../../model/mod.ts";
import { toHex } from "../../common/mod.ts";

const TOKEN = "hf_duty";
const DIGEST = new Uint8Array(32).fill(0x42);

class Recorder implements ClientLogger {
  events: { event: ClientEventName; fields: Record<string, unknown> }[] = [];
  log<K extends ClientEventName>(event: K, fields: ClientEvents[K]): void {
    this.events.push({ event, fields: fields as Record<string, unknown> });
  }
  named(event: ClientEventName) {
    return this.events.filter((e) => e.event === event).map((e) => e.fields);
  }
}

/** A run in Cooldown (epoch 0) with the last round's witnesses' votes for DIGEST, or none. */
function cooldownState(voted: boolean): CoordinatorState {
  const d = new RunDriver(testState({ epochTime: 1000, totalSteps: 3 }));
  d.startEpoch(identities(3));
  d.warmupTimeout();
  while (d.state.runState !== "Cooldown") d.fullRound();
  if (voted) {
    const selection = roundSelection(d.state.config, currentRound(d.state));
    for (const i of witnessIndices(d.state)) {
      cooldownWitness(
        d.state,
        d.state.epochState.clients[i].id,
        selection.witnessProof(i),
        DIGEST,
        d.now,
      );
    }
  }
  return d.state;
}

async function setup(options: { deleteOldSteps?: boolean; keepSteps?: number } = {}) {
  const root = await Deno.makeTempDir({ prefix: "duty_" });
  const hub = FakeHub.start({ token: TOKEN });
  const logger = new Recorder();
  const reports: Checkpoint[] = [];
  const write = async (step: number) => {
    const dir = join(root, `run-step${step}`);
    await writeModelDir(dir, tinyModel(step));
    return dir;
  };
  const make = (upload?: typeof uploadCheckpoint) =>
    new CheckpointDuty({
      checkpointDir: root,
      hub: { repoId: "owner/tiny", hubUrl: hub.url, token: TOKEN, attempts: 2 },
      firstRetryDelayMs: 5,
      retention: {
        deleteOldSteps: options.deleteOldSteps ?? false,
        keepSteps: options.keepSteps ?? 1,
      },
      backend: {
        sendCheckpoint: (repo) => {
          reports.push(repo);
          return Promise.resolve();
        },
      },
      logger,
      upload,
    });
  const written = (dir: string, step: number, upload: boolean): WrittenCheckpoint => ({
    runId: "run",
    epoch: 0,
    step,
    dir,
    digest: toHex(DIGEST),
    checkpointers: [0],
    upload,
  });
  const cleanup = async () => {
    await hub[Symbol.asyncDispose]();
    await Deno.remove(root, { recursive: true });
  };
  return { root, hub, logger, reports, write, make, written, cleanup };
}

Deno.test("an elected checkpointer uploads, waits for the vote, then reports the commit oid", async () => {
  const t = await setup();
  try {
    const duty = t.make();
    const state = cooldownState(false);
    const step = state.progress.step;
    duty.noteState(state);
    duty.written(t.written(await t.write(step), step, true));
    await duty.settle();
    assert.equal(t.hub.commits.length, 1);
    const revision = t.hub.commits[0].oid;
    assert.deepEqual(t.reports, [], "no quorum in the state yet: nothing reported");
    duty.noteState(cooldownState(true));
    await duty.settle();
    assert.deepEqual(t.reports, [{ kind: "Hub", repo: { repoId: "owner/tiny", revision } }]);
    assert.deepEqual(t.logger.events.map((e) => e.event), [
      "checkpointer",
      "hub_upload",
      "hub_upload_phase",
      "hub_upload_phase",
      "hub_upload_phase",
      "hub_uploaded",
      "hub_reported",
    ]);
    assert.deepEqual(t.logger.named("checkpointer"), [
      { epoch: 0, step, elected: true, checkpointers: [0] },
    ]);
    assert.deepEqual(t.logger.named("hub_upload")[0].files, ["config.json", "model.safetensors"]);
    assert.equal(t.logger.named("hub_uploaded")[0].revision, revision);
  } finally {
    await t.cleanup();
  }
});

Deno.test("a client that is not elected uploads nothing", async () => {
  const t = await setup();
  try {
    const duty = t.make();
    const state = cooldownState(true);
    duty.noteState(state);
    duty.written(t.written(await t.write(state.progress.step), state.progress.step, false));
    await duty.settle();
    assert.deepEqual(t.hub.requests, []);
    assert.deepEqual(t.reports, []);
    assert.deepEqual(t.logger.events.map((e) => e.event), ["checkpointer"]);
    assert.equal(t.logger.named("checkpointer")[0].elected, false);
  } finally {
    await t.cleanup();
  }
});

Deno.test("a Hub answering 500 is retried, then logged once; nothing is reported or thrown", async () => {
  const t = await setup();
  try {
    t.hub.failing = true;
    const duty = t.make();
    const state = cooldownState(true);
    duty.noteState(state);
    duty.written(t.written(await t.write(state.progress.step), state.progress.step, true));
    await duty.settle();
    const [failed] = t.logger.named("hub_upload_failed");
    assert.equal(failed.repo, "owner/tiny");
    assert.match(String(failed.error), /HTTP 500/);
    const retries = t.logger.named("hub_upload_retry");
    assert.deepEqual(retries.map((r) => [r.attempt, r.delay_ms]), [[1, 5]]);
    assert.equal(t.logger.named("hub_upload_failed").length, 1);
    assert.deepEqual(t.reports, []);
    assert.deepEqual(t.logger.named("hub_uploaded"), []);
  } finally {
    await t.cleanup();
  }
});

Deno.test("a revision uploaded after its Cooldown ended is not reported", async () => {
  const t = await setup();
  try {
    const duty = t.make();
    const state = cooldownState(true);
    const step = state.progress.step;
    const over = structuredClone(state);
    over.runState = "Finished";
    over.progress.epoch = 1;
    duty.noteState(over);
    duty.written(t.written(await t.write(step), step, true));
    await duty.settle();
    assert.equal(t.hub.commits.length, 1);
    assert.deepEqual(t.reports, []);
    assert.match(
      String(t.logger.named("hub_report_skipped")[0].reason),
      /Cooldown of epoch 0 is over/,
    );
  } finally {
    await t.cleanup();
  }
});

Deno.test("--delete-old-steps keeps N, and never the folder being uploaded", async () => {
  const t = await setup({ deleteOldSteps: true, keepSteps: 1 });
  try {
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const slow: typeof uploadCheckpoint = async (dir, target, options): Promise<HubUpload> => {
      await gate;
      return uploadCheckpoint(dir, target, options);
    };
    const duty = t.make(slow);
    duty.noteState(cooldownState(true));
    await t.write(1);
    await t.write(2);
    duty.written(t.written(await t.write(3), 3, true)); // uploads slowly
    duty.written(t.written(await t.write(4), 4, false)); // the next Cooldown's, not elected
    const names = async () => {
      const out: string[] = [];
      for await (const e of Deno.readDir(t.root)) out.push(e.name);
      return out.sort();
    };
    // Wait for the pass of step 4: 1 and 2 go, 3 (uploading) and 4 (newest) stay.
    for (let i = 0; i < 100 && (await names()).length > 2; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual(await names(), ["run-step3", "run-step4"]);
    release();
    await duty.settle();
    assert.equal(t.hub.commits.length, 1, "step 3's upload finished from its folder");
    assert.deepEqual(await names(), ["run-step4"], "then it went too");
    assert.deepEqual(t.logger.named("checkpoint_deleted").map((e) => e.step), [1, 2, 3]);
  } finally {
    await t.cleanup();
  }
});
