import assert from "node:assert/strict";
import { DataError } from "./errors.ts";
import { HttpDataProvider, httpLocationUrls } from "./http.ts";
import { backoffDelay, HttpRangeClient } from "./http_range.ts";
import { checkProviderCompliance } from "./testing/compliance.ts";
import { closing, rows, writeFixtureDataset } from "./testing/fixtures.ts";
import { type Fault, startTestHttpServer } from "./testing/http_server.ts";

const noSleep = { sleep: () => Promise.resolve(), baseDelayMs: 1 };

Deno.test("HTTP provider serves the same sequences as the files, plain and shuffled", async () => {
  await using data = await writeFixtureDataset([150, 97, 128], { npy: [2] });
  await using server = startTestHttpServer(data.dir);
  // Mixed raw and .npy files (000.ds, 001.ds, 002.npy), listed explicitly.
  const urls = data.files.map((f) => `${server.url}/${f.name}`);
  await using provider = closing(
    await HttpDataProvider.open(urls, { seqLen: 16, tokenSize: "TwoBytes" }),
  );
  await checkProviderCompliance(provider, data, 16);
  const seed = new Uint8Array(32).fill(42);
  await using shuffled = closing(
    await HttpDataProvider.open(urls, {
      seqLen: 16,
      tokenSize: "TwoBytes",
      shuffle: { kind: "Seeded", seed },
    }),
  );
  await checkProviderCompliance(shuffled, data, 16, { kind: "Seeded", seed });
});

Deno.test("one range request per contiguous run of a batch", async () => {
  await using data = await writeFixtureDataset([64, 64]);
  await using server = startTestHttpServer(data.dir);
  const provider = await HttpDataProvider.open({
    kind: "NumberedFiles",
    urlTemplate: `${server.url}/{}.ds`,
    startIndex: 0,
    nLeftPadZeros: 3,
    numFiles: 2,
  }, { seqLen: 8, tokenSize: "TwoBytes" });
  const before = server.requests.length;
  await provider.getSamples({ start: 2, end: 13 });
  const ranges = server.requests.slice(before).map((r) => r.range);
  assert.deepEqual(ranges.sort((a, b) => a![0] - b![0]), [[0, 95], [32, 127]]);
});

Deno.test("NumberedFiles expands the template; bad templates name the key", () => {
  const base = { kind: "NumberedFiles" as const, startIndex: 98, nLeftPadZeros: 2, numFiles: 3 };
  assert.deepEqual(httpLocationUrls({ ...base, urlTemplate: "h/{}.ds" }), [
    "h/98.ds",
    "h/99.ds",
    "h/100.ds",
  ]);
  assert.throws(
    () => httpLocationUrls({ ...base, urlTemplate: "h/{}/{}.ds" }),
    (e: unknown) => e instanceof DataError && e.key === "url_template",
  );
  assert.throws(() => httpLocationUrls({ ...base, urlTemplate: "h/{}", numFiles: 0 }), /num_files/);
  assert.throws(
    () => httpLocationUrls({ kind: "Gcp", bucketName: "b", filterDirectory: "" }),
    /not supported/,
  );
});

/** Serves `data`, with `fault` for the GET requests numbered in `faulty` (by GET count). */
async function faultyRead(fault: Fault, faultyGets: number[], maxAttempts = 4) {
  const data = await writeFixtureDataset([256]);
  let gets = 0;
  const server = startTestHttpServer(
    data.dir,
    (r) => r.method === "GET" && faultyGets.includes(gets++) ? fault : "none",
  );
  const sleeps: number[] = [];
  const provider = await HttpDataProvider.open([`${server.url}/000.ds`], {
    seqLen: 32,
    tokenSize: "TwoBytes",
    maxAttempts,
    // Long enough that a healthy request on a loaded 2-core CI machine never times out.
    timeoutMs: 1000,
    baseDelayMs: 10,
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
  });
  return {
    provider,
    server,
    sleeps,
    data,
    async [Symbol.asyncDispose]() {
      await server.close();
      await data[Symbol.asyncDispose]();
    },
  };
}

for (
  const fault of [
    "drop-mid-body",
    "short-range",
    "wrong-content-range",
    "status-500",
    "stall",
  ] as const
) {
  Deno.test(`HTTP provider retries past a server that answers "${fault}"`, async () => {
    await using f = await faultyRead(fault, [0, 1]);
    const batch = await f.provider.getSamples({ start: 1, end: 2 });
    assert.deepEqual(rows(batch)[0], f.data.files[0].tokens.slice(32, 64));
    assert.deepEqual(f.sleeps, [10, 20]);
  });

  Deno.test(`HTTP provider fails clearly when "${fault}" persists`, async () => {
    await using f = await faultyRead(fault, [0, 1, 2], 3);
    await assert.rejects(f.provider.getSamples({ start: 0, end: 0 }), (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.match(e.message, /000\.ds: range 0-63 failed after 3 attempts; last error: /);
      const expected: Record<typeof fault, RegExp> = {
        "drop-mid-body": /connection lost|short read|request failed/,
        "short-range": /Content-Range bytes 0-31/,
        "wrong-content-range": /Content-Range bytes 2-65/,
        "status-500": /HTTP 500/,
        "stall": /timed out after 1000 ms/,
      };
      assert.match(e.message, expected[fault]);
      return true;
    });
  });
}

Deno.test("HTTP 404 and an ignored Range fail at once, without retries", async () => {
  await using data = await writeFixtureDataset([64]);
  await using server = startTestHttpServer(data.dir, (r) => r.range ? "ignore-range" : "none");
  const client = new HttpRangeClient(noSleep);
  await assert.rejects(client.size(`${server.url}/missing.ds`), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.match(e.message, /missing\.ds: HTTP 404 Not Found for HEAD/);
    assert.equal(e.retryable, false);
    return true;
  });
  await assert.rejects(
    HttpDataProvider.open([`${server.url}/nope.ds`], {
      seqLen: 4,
      tokenSize: "TwoBytes",
      ...noSleep,
    }),
    /nope\.ds: HTTP 404/,
  );
  const before = server.requests.length;
  await assert.rejects(
    client.range(`${server.url}/000.ds`, 0, 8),
    /server ignored the Range header/,
  );
  assert.equal(server.requests.length, before + 1);
});

Deno.test("a caller's abort stops retries at once", async () => {
  await using f = await faultyRead("stall", [0, 1, 2, 3]);
  const controller = new AbortController();
  const pending = f.provider.getSamples({ start: 0, end: 0 }, { signal: controller.signal });
  setTimeout(() => controller.abort(new Error("stop")), 20);
  await assert.rejects(pending, /stop/);
});

Deno.test("backoff doubles from the base and is capped", () => {
  assert.deepEqual([1, 2, 3, 4, 5].map((r) => backoffDelay(r, 100, 1000)), [
    100,
    200,
    400,
    800,
    1000,
  ]);
});

Deno.test("a NumberedFiles list with a missing file names that file", async () => {
  await using data = await writeFixtureDataset([64, 64, 64]);
  await Deno.remove(`${data.dir}/001.ds`);
  await using server = startTestHttpServer(data.dir);
  await assert.rejects(
    HttpDataProvider.open({
      kind: "NumberedFiles",
      urlTemplate: `${server.url}/{}.ds`,
      startIndex: 0,
      nLeftPadZeros: 3,
      numFiles: 3,
    }, { seqLen: 8, tokenSize: "TwoBytes", ...noSleep }),
    (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.equal(e.file, `${server.url}/001.ds`);
      assert.match(e.message, /001\.ds: HTTP 404 Not Found for HEAD/);
      return true;
    },
  );
});

Deno.test("a whole small document is fetched with retries, within its size limit", async () => {
  const dir = await Deno.makeTempDir({ prefix: "psyche-http-" });
  try {
    await Deno.writeTextFile(`${dir}/mix.json`, '{"shuffle": "DontShuffle"}');
    await using server = startTestHttpServer(dir, (r) => r.n === 0 ? "status-500" : "none");
    const client = new HttpRangeClient(noSleep);
    assert.equal(await client.text(`${server.url}/mix.json`), '{"shuffle": "DontShuffle"}');
    assert.equal(server.requests.length, 2);
    await assert.rejects(
      client.text(`${server.url}/mix.json`, { maxBytes: 10 }),
      /mix\.json: 26 bytes is more than the 10 expected/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
