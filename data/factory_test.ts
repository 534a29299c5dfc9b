import assert from "node:assert/strict";
import { basename, dirname } from "node:path";
import { DataError } from "./errors.ts";
import { providerForLocation } from "./factory.ts";
import { LocalDataProvider } from "./local.ts";
import type { DataProvider } from "./provider.ts";
import { startDataServer } from "./tcp_server.ts";
import { closing, rows, writeFixtureDataset } from "./testing/fixtures.ts";
import { startTestHttpServer } from "./testing/http_server.ts";
import type { DataLocation } from "../common/mod.ts";

const secretKey = new Uint8Array(32).fill(9);

Deno.test("Local, Http and Server locations give the same sequences for the same batch", async () => {
  await using data = await writeFixtureDataset([300, 211, 256]);
  const seed = Uint8Array.from({ length: 32 }, (_, i) => i * 3);
  const shuffle = { kind: "Seeded" as const, seed };
  await using http = startTestHttpServer(data.dir);
  await using served = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 32, tokenSize: "TwoBytes", shuffle }),
  );
  await using tcp = startDataServer({ provider: served, authorize: () => "Allowed" });
  const locations: DataLocation[] = [
    { kind: "Local", path: basename(data.dir) },
    {
      kind: "Http",
      location: {
        kind: "NumberedFiles",
        urlTemplate: `${http.url}/{}.ds`,
        startIndex: 0,
        nLeftPadZeros: 3,
        numFiles: 3,
      },
      tokenSizeInBytes: "TwoBytes",
      shuffle,
    },
    { kind: "Server", address: tcp.address },
  ];
  const providers: DataProvider[] = [];
  try {
    for (const location of locations) {
      providers.push(
        await providerForLocation(location, {
          seqLen: 32,
          shuffle,
          baseDir: dirname(data.dir),
          secretKey,
          vocabSize: 32000,
        }),
      );
    }
    // 300, 211 and 256 tokens hold 9 + 6 + 8 whole 32-token sequences.
    assert.deepEqual(providers.map((p) => p.numSequences), [23, 23, 23]);
    for (const batch of [{ start: 0, end: 22 }, { start: 5, end: 5 }, { start: 7, end: 12 }]) {
      const [local, ...others] = await Promise.all(providers.map((p) => p.getSamples(batch)));
      for (const other of others) assert.deepEqual(rows(other), rows(local));
    }
  } finally {
    await Promise.all(providers.map((p) => p.close()));
  }
});

Deno.test("Dummy gives zero sequences of the run's length", async () => {
  const p = await providerForLocation({ kind: "Dummy" }, { seqLen: 16 });
  const batch = await p.getSamples({ start: 10, end: 12 });
  assert.equal(batch.tokens.length, 48);
  assert.ok(batch.tokens.every((t) => t === 0));
});

Deno.test("unsupported locations and a mismatched server seq_len are clear errors", async () => {
  for (
    const location of [
      { kind: "WeightedHttp", url: "http://x/mix.json" },
      { kind: "Preprocessed", source: "repo" },
    ] as DataLocation[]
  ) {
    await assert.rejects(providerForLocation(location, { seqLen: 8 }), /is not supported/);
  }
  await assert.rejects(
    providerForLocation({ kind: "Server", address: "127.0.0.1:1" }, { seqLen: 8 }),
    /needs the client's secretKey/,
  );
  await using data = await writeFixtureDataset([64]);
  await using served = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 16, tokenSize: "TwoBytes" }),
  );
  await using tcp = startDataServer({ provider: served, authorize: () => "Allowed" });
  await assert.rejects(
    providerForLocation({ kind: "Server", address: tcp.address }, { seqLen: 8, secretKey }),
    (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.equal(e.key, "max_seq_len");
      assert.match(e.message, /serves sequences of 16 tokens, but the run's max_seq_len is 8/);
      return true;
    },
  );
});
