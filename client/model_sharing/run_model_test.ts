import assert from "node:assert/strict";
import { join } from "node:path";
import "../../net/p2p/mod.ts";
import { runInitSeed } from "../model_source.ts";
import { createP2PNode } from "../../net/p2p/mod.ts";
import { PayloadService } from "../../net/p2p/mod.ts";
import { testPublic, testSecret } from "../testing/p2p.ts";
import {
  loadRunModel,
  type LoadRunModelOptions,
  ModelUnavailableError,
  UnsupportedCheckpointError,
} from "./run_model.ts";
import { serveModel, weightBytes } from "./serve.ts";
import type { ModelLoadPhase, ModelLoadProgress } from "./load_progress.ts";
import { FakeHub } from "../testing/fake_hub.ts";
import { uploadCheckpoint } from "../checkpoints/mod.ts";
import { tinyModel } from "../../model/testing/fixtures.ts";
import { initParams, writeModelDir } from "../../model/mod.ts";
import { digestBytes } from "../../shaders/mod.ts";

const repo = { repoId: "repo", revision: null };

/** A peer serving `served` (when given) and this client, plus a temp folder. */
async function setup(served: { step: number; weights: Float32Array } | null) {
  const keys = [1, 2].map(testPublic);
  const nodes = await Promise.all(
    [1, 2].map((n) => createP2PNode({ secretKey: testSecret(n), allowedPeers: keys })),
  );
  const dir = await Deno.makeTempDir({ prefix: "run_model_test_" });
  const [peer, self] = await Promise.all(
    nodes.map((node) => PayloadService.start(node, { retry: { retries: 0 } })),
  );
  await nodes[1].connect(nodes[0].addresses()[0]);
  if (served !== null) {
    serveModel(peer, { ...tinyModel(21), weights: served.weights }, { step: served.step });
  }
  const base: Omit<LoadRunModelOptions, "checkpoint" | "step" | "recordedDigest"> = {
    runId: "run",
    payloads: self,
    providers: [keys[0]],
    hub: { baseDir: dir },
    manifestTimeoutMs: 2000,
  };
  return {
    dir,
    base,
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const digestOf = (weights: Float32Array) => digestBytes(weightBytes({ weights }));

/** A `progress` option that keeps every report, and the phases in the order they began. */
function progressRecorder() {
  /** `run`: which phase begun (an index into `phases`) the report belongs to. */
  const reports: { phase: ModelLoadPhase; run: number; done: number; total: number }[] = [];
  const phases: ModelLoadPhase[] = [];
  const progress: ModelLoadProgress = (phase) => {
    const run = phases.push(phase) - 1;
    return (done, total) => reports.push({ phase, run, done, total });
  };
  /** The reports of the last `phase` begun, checked to grow and to end at their total. */
  const of = (phase: ModelLoadPhase) => {
    const own = reports.filter((r) => r.run === phases.lastIndexOf(phase));
    assert.ok(own.length > 0, `no ${phase} report`);
    assert.ok(own.every((r, i) => i === 0 || r.done > own[i - 1].done), `${phase} grows`);
    assert.equal(own.at(-1)!.done, own.at(-1)!.total, `${phase} ends at its total`);
    return own;
  };
  return { progress, phases, reports, of };
}

Deno.test("a fresh run takes what its checkpoint says: seeded init, weights, override", async () => {
  const env = await setup(null);
  try {
    const fresh = tinyModel(0);
    await writeModelDir(join(env.dir, "repo"), fresh);
    await Deno.remove(join(env.dir, "repo", "model.safetensors"));
    const start = { ...env.base, step: 1, recordedDigest: null };
    const seen = progressRecorder();
    const seeded = await loadRunModel({
      ...start,
      checkpoint: { kind: "Hub", repo },
      progress: seen.progress,
    });
    assert.equal(seeded.source, "seeded");
    // The folder holds no weights: its read says nothing, the seeded init and digest do.
    assert.deepEqual(seen.phases, ["read", "seeded_init", "digest"]);
    assert.ok(!seen.reports.some((r) => r.phase === "read"));
    assert.equal(seen.of("seeded_init").at(-1)!.total, 4 * fresh.layout.paramCount);
    assert.equal(seen.of("digest").at(-1)!.total, seeded.weights.byteLength);
    const init = initParams(fresh.layout, fresh.config, runInitSeed("run"));
    assert.deepEqual(seeded.weights, init);
    assert.equal(seeded.digest, digestOf(init));
    const trained = tinyModel(21);
    await writeModelDir(join(env.dir, "repo"), trained);
    const loaded = await loadRunModel({ ...start, checkpoint: { kind: "Dummy", repo } });
    assert.equal(loaded.source, "loaded");
    assert.equal(loaded.origin, join(env.dir, "repo"));
    assert.deepEqual(loaded.weights, trained.weights);
    // The override wins over a P2P checkpoint.
    const forced = await loadRunModel({
      ...start,
      checkpoint: { kind: "P2P", repo },
      override: "repo",
    });
    assert.equal(forced.source, "loaded");
    await assert.rejects(
      () => loadRunModel({ ...start, checkpoint: { kind: "Ephemeral" } }),
      UnsupportedCheckpointError,
    );
  } finally {
    await env.stop();
  }
});

Deno.test("a P2P epoch takes the peers' model; with a record, only the recorded one", async () => {
  const trained = tinyModel(21);
  const env = await setup({ step: 9, weights: trained.weights });
  try {
    const seen = progressRecorder();
    const p2p = await loadRunModel({
      ...env.base,
      checkpoint: { kind: "P2P", repo },
      step: 9,
      recordedDigest: digestOf(trained.weights),
      progress: seen.progress,
    });
    assert.equal(p2p.source, "p2p");
    assert.deepEqual(seen.phases, ["fetch", "digest"]);
    assert.ok(seen.of("fetch").length > 1, "a report per blob");
    assert.equal(seen.of("digest").at(-1)!.total, trained.weights.byteLength);
    assert.deepEqual(p2p.weights, trained.weights);
    assert.match(p2p.origin, /^p2p:[0-9a-f]{64}$/);
    assert.ok(p2p.served !== null);
    await assert.rejects(
      () =>
        loadRunModel({
          ...env.base,
          checkpoint: { kind: "P2P", repo },
          step: 9,
          recordedDigest: "cd".repeat(32),
        }),
      (e) =>
        e instanceof ModelUnavailableError &&
        /no source has the parameters of step 9 \(digest cdcd/.test(e.message) &&
        /no peer serves the parameters of step 9/.test(e.message),
    );
  } finally {
    await env.stop();
  }
});

Deno.test("after training, the seeded init is refused, and a folder counts only with a record", async () => {
  const env = await setup(null);
  try {
    const fresh = tinyModel(0);
    await writeModelDir(join(env.dir, "repo"), fresh);
    await Deno.remove(join(env.dir, "repo", "model.safetensors"));
    // The coordinator fell back to the Hub repo at step 30 (no client returned): no peer has
    // the model, and the seeded init is not the run's once the run recorded other parameters.
    await assert.rejects(
      () =>
        loadRunModel({
          ...env.base,
          providers: [],
          checkpoint: { kind: "Dummy", repo },
          step: 30,
          recordedDigest: null,
          runDigests: ["ee".repeat(32)],
        }),
      (e) =>
        e instanceof ModelUnavailableError &&
        /the run recorded other parameters \(eeee.*it does not restart from its init/.test(
          e.message,
        ),
    );
    // A run that never recorded anything (its epochs ended before anyone trained) has only
    // ever had its init: the seeded init is still the run's at a later step.
    const init = await loadRunModel({
      ...env.base,
      providers: [],
      checkpoint: { kind: "P2P", repo },
      step: 30,
      recordedDigest: null,
      runDigests: [],
    });
    assert.equal(init.source, "seeded");
    // The client's own checkpoint of step 30 is taken when it has the recorded digest.
    const trained = tinyModel(21);
    const mine = join(env.dir, "run-step30");
    await writeModelDir(mine, trained);
    const local = await loadRunModel({
      ...env.base,
      providers: [],
      checkpoint: { kind: "Dummy", repo },
      step: 30,
      recordedDigest: digestOf(trained.weights),
      localCheckpoints: [mine, join(env.dir, "missing")],
    });
    assert.equal(local.source, "loaded");
    assert.equal(local.origin, mine);
    // ...and refused without a record to check it against.
    await assert.rejects(
      () =>
        loadRunModel({
          ...env.base,
          providers: [],
          checkpoint: { kind: "Dummy", repo },
          step: 30,
          recordedDigest: null,
          runDigests: ["ee".repeat(32)],
          localCheckpoints: [mine],
        }),
      /recorded no digest to check them against/,
    );
  } finally {
    await env.stop();
  }
});

/**
 * A checkpointer's upload, `P2P { owner/tiny @ revision }` after the epoch, read by a joiner no
 * peer serves: from a local fake Hub (client/testing/fake_hub.ts; huggingface.co is unreachable
 * from these machines) through the real `@huggingface/hub` library.
 */
Deno.test("a joiner loads the Hub upload when its digest is the run's, and refuses it otherwise", async () => {
  const env = await setup(null);
  await using hub = FakeHub.start();
  try {
    const trained = tinyModel(21);
    const upload = join(env.dir, "upload");
    await writeModelDir(upload, trained);
    const { revision } = await uploadCheckpoint(upload, {
      repoId: "owner/tiny",
      hubUrl: hub.url,
      token: "hf_x",
    });
    const cacheDir = join(env.dir, "hf-cache");
    const joiner = {
      ...env.base,
      providers: [],
      checkpoint: { kind: "P2P" as const, repo: { repoId: "owner/tiny", revision } },
      step: 40,
      runDigests: [digestOf(trained.weights)],
      hubDownload: { endpoint: hub.url, cacheDir },
    };
    const loaded = await loadRunModel({ ...joiner, recordedDigest: digestOf(trained.weights) });
    assert.equal(loaded.source, "loaded");
    assert.equal(loaded.origin, join(cacheDir, "models--owner--tiny", "snapshots", revision));
    assert.deepEqual(loaded.weights, trained.weights);
    // On disk now: the next load reads the cache without asking the Hub.
    const asked = hub.requests.length;
    const again = await loadRunModel({
      ...joiner,
      recordedDigest: digestOf(trained.weights),
      hub: { ...env.base.hub, hfCache: cacheDir },
    });
    assert.deepEqual(again.weights, trained.weights);
    assert.equal(hub.requests.length, asked);
    // The run recorded other parameters for step 40: refused, naming both digests.
    const other = "ab".repeat(32);
    await assert.rejects(
      () => loadRunModel({ ...joiner, recordedDigest: other }),
      (e) =>
        e instanceof ModelUnavailableError &&
        e.message.includes(
          `have digest ${digestOf(trained.weights)}, but the run recorded ${other} for step 40`,
        ),
    );
  } finally {
    await env.stop();
  }
});

Deno.test("a stale mirror of the repo gives way to the revision downloaded", async () => {
  const env = await setup(null);
  await using hub = FakeHub.start();
  try {
    const trained = tinyModel(21);
    await writeModelDir(join(env.dir, "upload"), trained);
    const { revision } = await uploadCheckpoint(join(env.dir, "upload"), {
      repoId: "owner/tiny",
      hubUrl: hub.url,
      token: "hf_x",
    });
    await writeModelDir(join(env.dir, "mirror", "owner", "tiny"), tinyModel(5)); // older weights
    const seen = progressRecorder();
    const loaded = await loadRunModel({
      progress: seen.progress,
      ...env.base,
      hub: { baseDir: env.dir, hubDir: "mirror" },
      providers: [],
      checkpoint: { kind: "Hub", repo: { repoId: "owner/tiny", revision } },
      step: 40,
      recordedDigest: digestOf(trained.weights),
      hubDownload: { endpoint: hub.url, cacheDir: join(env.dir, "hf-cache") },
    });
    assert.deepEqual(loaded.weights, trained.weights);
    assert.match(loaded.origin, /hf-cache/);
    // The mirror read and digested (and refused), the weights file downloaded, read, digested.
    assert.deepEqual(seen.phases, ["read", "digest", "download", "read", "digest"]);
    assert.equal(seen.of("read").at(-1)!.total, 4 * trained.layout.paramCount);
    assert.equal(
      seen.of("download").at(-1)!.total,
      (await Deno.stat(
        join(loaded.origin, "model.safetensors"),
      )).size,
    );
    // Without the Hub, the mirror's mismatch is the error, naming both digests.
    hub.failing = true;
    await assert.rejects(
      () =>
        loadRunModel({
          ...env.base,
          hub: { baseDir: env.dir, hubDir: "mirror" },
          providers: [],
          checkpoint: { kind: "Hub", repo: { repoId: "owner/tiny", revision: "c".repeat(40) } },
          step: 40,
          recordedDigest: digestOf(trained.weights),
          hubDownload: { endpoint: hub.url, cacheDir: join(env.dir, "hf-cache") },
        }),
      (e) =>
        e instanceof ModelUnavailableError &&
        e.message.includes(`but the run recorded ${digestOf(trained.weights)} for step 40`) &&
        /the download from http:\/\/127\.0\.0\.1:\d+ failed/.test(e.message),
    );
  } finally {
    await env.stop();
  }
});
