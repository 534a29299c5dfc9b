import assert from "node:assert/strict";
import { join } from "node:path";
import { writeModelDir } from "./checkpoint.ts";
import { HubCheckpointError, loadHubCheckpoint, resolveHubRepo } from "./hub.ts";
import { tinyModel } from "./testing/fixtures.ts";

const noEnv = () => undefined;

async function withTemp(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "hub_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("repo ids resolve: mapping, path, mirror, then the HF cache", async () => {
  await withTemp(async (dir) => {
    const model = tinyModel(4);
    const save = (folder: string) => writeModelDir(join(dir, folder), model);
    await save("mapped");
    await save("mapped-rev");
    await save("owner/as-path");
    await save("mirror/owner/mirrored");
    await save("cache/models--owner--cached/snapshots/abc123");
    await save("cache/models--owner--cached/snapshots/def456");
    await Deno.mkdir(join(dir, "cache/models--owner--cached/refs"));
    await Deno.writeTextFile(join(dir, "cache/models--owner--cached/refs/main"), "abc123\n");
    const options = {
      baseDir: dir,
      hubDir: "mirror",
      hfCache: join(dir, "cache"),
      mapping: { "owner/x": "mapped", "owner/x@v2": "mapped-rev" },
      env: noEnv,
    };
    const at = (repoId: string, revision: string | null = null) =>
      resolveHubRepo({ repoId, revision }, options);
    assert.equal(await at("owner/x"), join(dir, "mapped"));
    assert.equal(await at("owner/x", "v2"), join(dir, "mapped-rev"));
    assert.equal(await at("owner/x", "v3"), join(dir, "mapped"));
    assert.equal(await at("owner/as-path"), join(dir, "owner/as-path"));
    assert.equal(await at("owner/mirrored"), join(dir, "mirror/owner/mirrored"));
    assert.equal(
      await at("owner/cached"),
      join(dir, "cache/models--owner--cached/snapshots/abc123"),
    );
    assert.equal(
      await at("owner/cached", "def456"),
      join(dir, "cache/models--owner--cached/snapshots/def456"),
    );
    await assert.rejects(() => at("owner/cached", "0000"), /snapshots\/0000"/);
    await assert.rejects(
      () =>
        resolveHubRepo({ repoId: "owner/x", revision: null }, {
          ...options,
          mapping: { "owner/x": "nope" },
        }),
      /mapped to ".*nope", which has no config.json/,
    );
  });
});

Deno.test("a missing repo names every place looked at; the env picks the defaults", async () => {
  await withTemp(async (dir) => {
    const env = (name: string) =>
      ({ PSYCHE_HUB_DIR: join(dir, "m"), HF_HOME: join(dir, "hf") } as Record<string, string>)[
        name
      ];
    await assert.rejects(
      () => resolveHubRepo({ repoId: "o/n", revision: null }, { baseDir: dir, env }),
      (e) => {
        assert.ok(e instanceof HubCheckpointError);
        assert.equal(e.repoId, "o/n");
        assert.ok(e.message.includes(join(dir, "o/n")), e.message);
        assert.ok(e.message.includes(join(dir, "m", "o/n")), e.message);
        assert.ok(e.message.includes(join(dir, "hf", "hub", "models--o--n", "refs", "main")));
        return true;
      },
    );
  });
});

Deno.test("loadHubCheckpoint reads weights, or none from a config-only folder", async () => {
  await withTemp(async (dir) => {
    const model = tinyModel(5);
    await writeModelDir(join(dir, "full"), model);
    const full = await loadHubCheckpoint({ repoId: "full", revision: null }, {
      baseDir: dir,
      env: noEnv,
    });
    assert.deepEqual(full.weights, model.weights);
    assert.deepEqual(full.config, model.config);
    await Deno.remove(join(dir, "full", "model.safetensors"));
    const bare = await loadHubCheckpoint({ repoId: "full", revision: null }, {
      baseDir: dir,
      env: noEnv,
    });
    assert.equal(bare.weights, null);
    await Deno.writeTextFile(join(dir, "full", "config.json"), "{}");
    await assert.rejects(
      () => loadHubCheckpoint({ repoId: "full", revision: null }, { baseDir: dir, env: noEnv }),
      /Cannot load Hub repo "full" from ".*full": /,
    );
  });
});

Deno.test("the bundled tiny model resolves as a repo id", async () => {
  const hub = await loadHubCheckpoint({ repoId: "config/models/llama-tiny", revision: null }, {
    env: noEnv,
  });
  assert.equal(hub.config.hiddenSize, 64);
  assert.equal(hub.weights, null);
});
