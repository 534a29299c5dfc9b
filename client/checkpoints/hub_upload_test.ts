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

Deno.test("a Hub answering 500 or refusing the repo fails with the repo and the status", async () => {
  await using hub = FakeHub.start({ repos: ["owner/tiny"] });
  const dir = await writtenCheckpoint();
  try {
    hub.failing = true;
    await assert.rejects(
      () => uploadCheckpoint(dir, { repoId: "owner/tiny", hubUrl: hub.url, token: TOKEN }),
      (e) =>
        e instanceof HubUploadError && e.status === 500 && e.repoId === "owner/tiny" &&
        e.message.includes(`to ${hub.url}/owner/tiny: HTTP 500`),
    );
    hub.failing = false;
    await assert.rejects(
      () => uploadCheckpoint(dir, { repoId: "owner/other", hubUrl: hub.url, token: TOKEN }),
      (e) => e instanceof HubUploadError && e.status === 404 && /not found/.test(e.message),
    );
    await assert.rejects(
      () => uploadCheckpoint(dir, { repoId: "owner/tiny", hubUrl: hub.url, token: "nope" }),
      TypeError,
    );
    await assert.rejects(
      () => uploadCheckpoint(dir, { repoId: "../x", hubUrl: hub.url, token: TOKEN }),
      RangeError,
    );
    assert.equal(hub.commits.length, 0);
  } finally {
    await Deno.remove(join(dir, ".."), { recursive: true });
  }
});
