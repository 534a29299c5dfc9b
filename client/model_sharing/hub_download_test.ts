import assert from "node:assert/strict";
import { join } from "node:path";
import { downloadHubRepo, HubDownloadError, hubFileUrl } from "./hub_download.ts";
import { tinyModel } from "../../model/testing/fixtures.ts";
import {
  encodeSafetensors,
  llamaConfigToHf,
  loadHubCheckpoint,
  weightsToSafetensors,
} from "../../model/mod.ts";

Deno.test("hub file URLs follow the resolve API", () => {
  assert.equal(
    hubFileUrl({ repoId: "owner/name", revision: null }, "config.json"),
    "https://huggingface.co/owner/name/resolve/main/config.json",
  );
  assert.equal(
    hubFileUrl({ repoId: "o/n", revision: "a b" }, "sub/x.bin", "http://h:1/"),
    "http://h:1/o/n/resolve/a%20b/sub/x.bin",
  );
  assert.throws(() => hubFileUrl({ repoId: "../etc", revision: null }, "x"), /not of the form/);
});

Deno.test("a repo downloaded from a Hub-like server loads from the cache", async () => {
  const model = tinyModel(6);
  const files: Record<string, Uint8Array<ArrayBuffer>> = {
    "config.json": new TextEncoder().encode(
      JSON.stringify(llamaConfigToHf(model.config)),
    ) as Uint8Array<ArrayBuffer>,
    "model.safetensors": encodeSafetensors(
      weightsToSafetensors(model.layout, model.weights, "F32"),
    ).slice(),
  };
  const seen: { path: string; auth: string | null }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    seen.push({ path, auth: req.headers.get("authorization") });
    const m = /^\/owner\/tiny\/resolve\/(main|c0ffee)\/(.+)$/.exec(path);
    const body = m === null ? undefined : files[m[2]];
    if (body === undefined) return new Response("no", { status: 404 });
    return new Response(body, { headers: { "x-repo-commit": "c0ffee" } });
  });
  const cache = await Deno.makeTempDir({ prefix: "hub_dl_" });
  try {
    const endpoint = `http://127.0.0.1:${server.addr.port}`;
    const repo = { repoId: "owner/tiny", revision: null };
    const snapshot = await downloadHubRepo(repo, { cacheDir: cache, endpoint, token: "t0k" });
    assert.equal(snapshot, join(cache, "models--owner--tiny", "snapshots", "c0ffee"));
    assert.deepEqual(seen.map((s) => s.path), [
      "/owner/tiny/resolve/main/config.json",
      "/owner/tiny/resolve/c0ffee/model.safetensors",
    ], "later files come from the commit of the first");
    assert.ok(seen.every((s) => s.auth === "Bearer t0k"));
    const loaded = await loadHubCheckpoint(repo, { hfCache: cache, env: () => undefined });
    assert.deepEqual(loaded.weights, model.weights);
    await assert.rejects(
      () =>
        downloadHubRepo({ repoId: "owner/missing", revision: null }, { cacheDir: cache, endpoint }),
      (e) =>
        e instanceof HubDownloadError && /HTTP 404/.test(e.message) &&
        e.url.endsWith("config.json"),
    );
    const left = [];
    for await (const entry of Deno.readDir(cache)) left.push(entry.name);
    assert.deepEqual(left, ["models--owner--tiny"], "a failed download leaves no snapshot");
  } finally {
    await server.shutdown();
    await Deno.remove(cache, { recursive: true });
  }
});
