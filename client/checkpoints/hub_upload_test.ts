/**
 * The Hub upload against a local fake Hub (client/testing/fake_hub.ts): huggingface.co is not
 * reachable from these machines, so the real `@huggingface/hub` library runs against a
 * Deno.serve server that answers its preupload, LFS batch, LFS upload and commit endpoints.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { checkpointFiles, HubUploadError, uploadCheckpoint } from "./hub_upload.ts";
import { FakeHub } from "../testing/fake_hub.ts";
import { tinyModel } from "../../model/testing/fixtures.ts";
import { writeModelDir } from "../../model/mod.ts";

const TOKEN = "hf_test_token";

async function writtenCheckpoint(options: { maxShardBytes?: number } = {}): Promise<string> {
  const dir = join(await Deno.makeTempDir({ prefix: "hub_up_" }), "run-step7");
  await writeModelDir(dir, { ...tinyModel(3), ...options });
  return dir;
}

Deno.test("a checkpoint folder is committed with its exact bytes; the oid is the revision", async () => {
  await using hub = FakeHub.start({ token: TOKEN });
  const dir = await writtenCheckpoint();
  try {
    const phases: string[] = [];
    const upload = await uploadCheckpoint(dir, {
      repoId: "owner/tiny",
      hubUrl: hub.url,
      token: TOKEN,
    }, { title: "step 7", description: "run r", onPhase: (p) => phases.push(p) });
    assert.deepEqual(phases, ["preuploading", "uploadingLargeFiles", "committing"]);
    assert.equal(hub.commits.length, 1);
    const [commit] = hub.commits;
    assert.equal(upload.revision, commit.oid);
    assert.match(upload.revision, /^[0-9a-f]{40}$/);
    assert.equal(commit.title, "step 7");
    assert.deepEqual(commit.lfs, ["model.safetensors"], "safetensors go through LFS");
    const names = (await checkpointFiles(dir)).map((f) => f.path);
    assert.deepEqual(names, ["config.json", "model.safetensors"]);
    assert.deepEqual([...commit.files.keys()].sort(), names);
    for (const name of names) {
      assert.deepEqual(commit.files.get(name), await Deno.readFile(join(dir, name)), name);
    }
    assert.equal(upload.bytes, upload.files.reduce((n, f) => n + f.bytes, 0));
    assert.ok(hub.requests.some((r) => r.path.endsWith(".git/info/lfs/objects/batch")));
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});

Deno.test("a sharded checkpoint uploads every shard and the index", async () => {
  await using hub = FakeHub.start();
  const dir = await writtenCheckpoint({ maxShardBytes: 2048 });
  try {
    const upload = await uploadCheckpoint(dir, { repoId: "o/n", hubUrl: hub.url, token: TOKEN });
    const files = hub.files("o/n", upload.revision)!;
    const names = (await checkpointFiles(dir)).map((f) => f.path);
    assert.ok(names.includes("model.safetensors.index.json"), names.join());
    assert.ok(names.filter((n) => n.endsWith(".safetensors")).length > 1, names.join());
    for (const name of names) {
      assert.deepEqual(files.get(name), await Deno.readFile(join(dir, name)));
    }
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});

Deno.test("a Hub answering 500 on every try fails with the repo and the status", async () => {
  await using hub = FakeHub.start({ repos: ["owner/tiny"] });
  const dir = await writtenCheckpoint();
  try {
    hub.failing = true;
    const retries: { attempt: number; delayMs: number }[] = [];
    await assert.rejects(
      () =>
        uploadCheckpoint(dir, {
          repoId: "owner/tiny",
          hubUrl: hub.url,
          token: TOKEN,
          attempts: 3,
        }, {
          firstRetryDelayMs: 5,
          onRetry: ({ attempt, delayMs, error }) => {
            assert.equal(error.status, 500);
            retries.push({ attempt, delayMs });
          },
        }),
      (e) =>
        e instanceof HubUploadError && e.status === 500 && e.repoId === "owner/tiny" &&
        e.message.includes(`to ${hub.url}/owner/tiny: HTTP 500`),
    );
    assert.deepEqual(retries, [{ attempt: 1, delayMs: 5 }, { attempt: 2, delayMs: 10 }]);
    assert.equal(hub.commits.length, 0);
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});

Deno.test("a blip of 500s is retried and the upload lands once", async () => {
  await using hub = FakeHub.start({ repos: ["owner/tiny"] });
  const dir = await writtenCheckpoint();
  try {
    // The first try dies at its first request; the second in the middle of the upload.
    hub.failNext = 1;
    const retries: number[] = [];
    let requestsBefore = 0;
    const upload = await uploadCheckpoint(dir, {
      repoId: "owner/tiny",
      hubUrl: hub.url,
      token: TOKEN,
    }, {
      firstRetryDelayMs: 5,
      onRetry: ({ attempt }) => {
        retries.push(attempt);
        if (attempt === 1) {
          requestsBefore = hub.requests.length;
          hub.failNext = 0;
        }
      },
      onPhase: (phase) => {
        if (phase === "committing" && retries.length === 1 && hub.commits.length === 0) {
          hub.failNext = 1;
        }
      },
    });
    assert.deepEqual(retries, [1, 2]);
    assert.ok(requestsBefore > 0);
    const lfsPuts = hub.requests.filter((r) => r.method === "PUT" && r.path.startsWith("/lfs-"));
    assert.equal(lfsPuts.length, 1, "the weights stored before the failed commit are not resent");
    assert.equal(hub.commits.length, 1);
    assert.equal(upload.revision, hub.commits[0].oid);
    const files = hub.files("owner/tiny", upload.revision)!;
    assert.deepEqual(
      files.get("model.safetensors"),
      await Deno.readFile(join(dir, "model.safetensors")),
    );
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});

Deno.test("a repo that does not exist is created private, once", async () => {
  await using hub = FakeHub.start({ repos: [] });
  const dir = await writtenCheckpoint();
  try {
    let created = 0;
    const target = { repoId: "owner/new-run", hubUrl: hub.url, token: TOKEN };
    const first = await uploadCheckpoint(dir, target, { onRepoCreated: () => created++ });
    const second = await uploadCheckpoint(dir, target, { onRepoCreated: () => created++ });
    assert.equal(created, 1);
    assert.deepEqual(hub.created, [{ repoId: "owner/new-run", visibility: "private" }]);
    assert.deepEqual(hub.commits.map((c) => c.oid), [first.revision, second.revision]);
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});

Deno.test("refusals are not retried: a wrong token, a malformed repo id or token", async () => {
  await using hub = FakeHub.start({ token: TOKEN, repos: ["owner/tiny"] });
  const dir = await writtenCheckpoint();
  try {
    let retries = 0;
    const onRetry = () => retries++;
    await assert.rejects(
      () =>
        uploadCheckpoint(dir, { repoId: "owner/tiny", hubUrl: hub.url, token: "hf_wrong" }, {
          onRetry,
          firstRetryDelayMs: 5,
        }),
      (e) =>
        e instanceof HubUploadError && e.status === 401 && /Invalid credentials/.test(e.message),
    );
    assert.equal(retries, 0);
    assert.deepEqual(hub.created, []);
    await assert.rejects(
      () => uploadCheckpoint(dir, { repoId: "owner/tiny", hubUrl: hub.url, token: "nope" }),
      TypeError,
    );
    await assert.rejects(
      () => uploadCheckpoint(dir, { repoId: "../x", hubUrl: hub.url, token: TOKEN }),
      RangeError,
    );
    await assert.rejects(
      () =>
        uploadCheckpoint(dir, { repoId: "owner/tiny", hubUrl: hub.url, token: TOKEN, attempts: 0 }),
      RangeError,
    );
    assert.equal(hub.commits.length, 0);
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});

Deno.test("an abort during the wait before a retry ends the upload at once", async () => {
  await using hub = FakeHub.start({ repos: ["owner/tiny"] });
  const dir = await writtenCheckpoint();
  try {
    hub.failing = true;
    const controller = new AbortController();
    const started = performance.now();
    await assert.rejects(
      () =>
        uploadCheckpoint(dir, { repoId: "owner/tiny", hubUrl: hub.url, token: TOKEN }, {
          firstRetryDelayMs: 60_000,
          onRetry: () => controller.abort(new Error("client leaving")),
          signal: controller.signal,
        }),
      /client leaving/,
    );
    assert.ok(performance.now() - started < 30_000, "did not wait out the 60 s delay");
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});
