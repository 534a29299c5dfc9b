/**
 * Hub downloads with the real `@huggingface/hub` library against a local fake Hub
 * (client/testing/fake_hub.ts): huggingface.co is unreachable from these machines. The repo is
 * filled by the client's own upload (client/checkpoints/), then read back through the cache.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { downloadHubRepo, HubDownloadError, hubFileUrl, watchedFetch } from "./hub_download.ts";
import { FakeHub } from "../testing/fake_hub.ts";
import { uploadCheckpoint } from "../checkpoints/mod.ts";
import { tinyModel } from "../../model/testing/fixtures.ts";
import { loadHubCheckpoint, writeModelDir } from "../../model/mod.ts";

const TOKEN = "hf_dl";

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

/** A fake Hub whose `owner/tiny` holds a checkpoint of `tinyModel(seed)` (sharded if asked). */
async function hubWithModel(seed: number, maxShardBytes?: number) {
  const hub = FakeHub.start({ token: TOKEN });
  const dir = await Deno.makeTempDir({ prefix: "hub_dl_src_" });
  const model = tinyModel(seed);
  await writeModelDir(dir, { ...model, maxShardBytes });
  const { revision } = await uploadCheckpoint(dir, {
    repoId: "owner/tiny",
    hubUrl: hub.url,
    token: TOKEN,
  });
  await Deno.remove(dir, { recursive: true });
  return { hub, model, revision };
}

Deno.test("a pinned revision downloads into the cache and loads from it", async () => {
  const { hub, model, revision } = await hubWithModel(6);
  const cache = await Deno.makeTempDir({ prefix: "hub_dl_" });
  try {
    const repo = { repoId: "owner/tiny", revision };
    const snapshot = await downloadHubRepo(repo, { cacheDir: cache, endpoint: hub.url });
    assert.equal(snapshot, join(cache, "models--owner--tiny", "snapshots", revision));
    const loaded = await loadHubCheckpoint(repo, { hfCache: cache, env: () => undefined });
    assert.deepEqual(loaded.weights, model.weights);
    assert.ok(
      hub.requests.every((r) => !r.path.includes("/revision/")),
      "a commit needs no lookup",
    );
  } finally {
    await hub[Symbol.asyncDispose]();
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("an unpinned repo resolves main's commit, writes refs/main; shards come too", async () => {
  const { hub, model, revision } = await hubWithModel(7, 2048);
  const cache = await Deno.makeTempDir({ prefix: "hub_dl_" });
  try {
    const repo = { repoId: "owner/tiny", revision: null };
    const heard = new Map<string, [number, number][]>();
    const snapshot = await downloadHubRepo(repo, {
      cacheDir: cache,
      endpoint: hub.url,
      token: TOKEN,
      progress: (file) => {
        heard.set(file, []);
        return (done, total) => heard.get(file)!.push([done, total]);
      },
    });
    // Every shard said how far it got, up to its size; the config and the index are not counted.
    assert.ok(heard.size > 1 && [...heard.keys()].every((f) => f.endsWith(".safetensors")));
    for (const [file, reports] of heard) {
      const size = (await Deno.stat(join(snapshot, file))).size;
      assert.deepEqual(reports.at(-1), [size, size], file);
    }
    assert.equal(snapshot, join(cache, "models--owner--tiny", "snapshots", revision));
    assert.equal(
      await Deno.readTextFile(join(cache, "models--owner--tiny", "refs", "main")),
      revision,
    );
    const files = [];
    for await (const e of Deno.readDir(snapshot)) files.push(e.name);
    assert.ok(files.filter((f) => f.endsWith(".safetensors")).length > 1, files.join());
    const loaded = await loadHubCheckpoint(repo, { hfCache: cache, env: () => undefined });
    assert.deepEqual(loaded.weights, model.weights);
  } finally {
    await hub[Symbol.asyncDispose]();
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("a missing repo, revision or Hub outage is a HubDownloadError naming it", async () => {
  const { hub } = await hubWithModel(8);
  const cache = await Deno.makeTempDir({ prefix: "hub_dl_" });
  try {
    const endpoint = hub.url;
    await assert.rejects(
      () =>
        downloadHubRepo({ repoId: "owner/tiny", revision: "f".repeat(40) }, {
          cacheDir: cache,
          endpoint,
        }),
      (e) => e instanceof HubDownloadError && e.url.endsWith("config.json"),
    );
    hub.failing = true;
    await assert.rejects(
      () =>
        downloadHubRepo({ repoId: "owner/tiny", revision: null }, { cacheDir: cache, endpoint }),
      (e) => e instanceof HubDownloadError && /internal server error/.test(e.message),
    );
    await assert.rejects(
      () => downloadHubRepo({ repoId: "/abs/path", revision: null }, { cacheDir: cache, endpoint }),
      RangeError,
    );
    const left: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for await (const e of Deno.readDir(dir)) {
        if (e.isDirectory) await walk(join(dir, e.name));
        else left.push(join(dir, e.name));
      }
    };
    await walk(cache);
    assert.deepEqual(left, [], "a failed download leaves no file");
  } finally {
    await hub[Symbol.asyncDispose]();
    await Deno.remove(cache, { recursive: true });
  }
});

/** The files under `dir`, recursively, relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (at: string, prefix: string) => {
    for await (const entry of Deno.readDir(at)) {
      const rel = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
      if (entry.isDirectory) await walk(join(at, entry.name), rel);
      else found.push(rel);
    }
  };
  await walk(dir, "");
  return found.sort();
}

Deno.test("a Hub that stops sending mid-file is cut by the stall watchdog, leaving no file", async () => {
  const { hub, revision } = await hubWithModel(8);
  const cache = await Deno.makeTempDir({ prefix: "hub_dl_" });
  try {
    hub.stallDownloads = true;
    await assert.rejects(
      () =>
        downloadHubRepo({ repoId: "owner/tiny", revision }, {
          cacheDir: cache,
          endpoint: hub.url,
          stallTimeoutMs: 300,
        }),
      (e) =>
        e instanceof HubDownloadError && e.url.endsWith("/config.json") &&
        /the Hub sent nothing for 0.3 s/.test(e.message),
    );
    const left = await filesUnder(cache);
    assert.ok(
      left.every((f) => !f.endsWith(".partial") && !f.endsWith("config.json")),
      left.join(),
    );
  } finally {
    await hub[Symbol.asyncDispose]();
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("an abort ends a stalled download at once", async () => {
  const { hub, revision } = await hubWithModel(9);
  const cache = await Deno.makeTempDir({ prefix: "hub_dl_" });
  try {
    hub.stallDownloads = true;
    const controller = new AbortController();
    const download = downloadHubRepo({ repoId: "owner/tiny", revision }, {
      cacheDir: cache,
      endpoint: hub.url,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error("client leaving")), 200);
    await assert.rejects(() => download, /client leaving/);
    assert.deepEqual(
      (await filesUnder(cache)).filter((f) => f.endsWith(".partial") || f.endsWith(".json")),
      [],
    );
  } finally {
    await hub[Symbol.asyncDispose]();
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("the watchdog measures silence, not total time: a slow, moving body passes", async () => {
  const chunks = 6;
  const slow: typeof fetch = () => {
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((r) => setTimeout(r, 40));
        if (sent++ === chunks) controller.close();
        else controller.enqueue(new Uint8Array([sent]));
      },
    });
    return Promise.resolve(new Response(body));
  };
  // Six 40 ms gaps (240 ms in all) under a 150 ms watchdog.
  const watched = watchedFetch(slow, undefined, 150);
  const bytes = new Uint8Array(await (await watched("http://x/")).arrayBuffer());
  assert.deepEqual([...bytes], [1, 2, 3, 4, 5, 6]);
});

Deno.test("the watchdog cuts a body whose fetch ignores the abort, and cancels it", async () => {
  // Deno's fetch has been seen to leave a pending body read unended when its signal aborts;
  // this fetch never ends one at all: only the watchdog's own race can cut it.
  let cancelled: unknown;
  const deaf: typeof fetch = () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array([1]));
      },
      cancel(reason) {
        cancelled = reason;
      },
    });
    return Promise.resolve(new Response(body));
  };
  const watched = watchedFetch(deaf, undefined, 100);
  const response = await watched("http://x/file");
  await assert.rejects(() => response.arrayBuffer(), /the Hub sent nothing for 0.1 s/);
  assert.ok(
    cancelled instanceof Error && /sent nothing/.test(cancelled.message),
    String(cancelled),
  );

  const caller = new AbortController();
  const aborted = watchedFetch(deaf, caller.signal, 60_000);
  const pending = (await aborted("http://x/file")).arrayBuffer();
  setTimeout(() => caller.abort(new Error("client leaving")), 50);
  await assert.rejects(() => pending, /client leaving/);
});
