import assert from "node:assert/strict";
import { basename, dirname, join } from "node:path";
import { DataError } from "./errors.ts";
import { providerForLocation } from "./factory.ts";
import { LocalDataProvider } from "./local.ts";
import type { DataProvider } from "./provider.ts";
import { startDataServer } from "./tcp_server.ts";
import { closing, rows, writeFixtureDataset } from "./testing/fixtures.ts";
import { preprocessedParquet } from "./testing/parquet.ts";
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

Deno.test("a Hub repository for Preprocessed and a mismatched server seq_len are clear errors", async () => {
  await assert.rejects(
    providerForLocation({ kind: "Preprocessed", source: "org/dataset" }, {
      seqLen: 8,
      baseDir: "/nonexistent",
    }),
    (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.equal(e.key, "Preprocessed");
      assert.match(
        e.message,
        /^Preprocessed "org\/dataset" is not a folder here \(looked for \/nonexistent\/org\/dataset\)\. Downloading datasets from the Hugging Face Hub is not supported yet: .*huggingface-cli download --repo-type dataset org\/dataset/,
      );
      return true;
    },
  );
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

Deno.test("Preprocessed opens a folder of parquet files relative to the base folder", async () => {
  const root = await Deno.makeTempDir({ prefix: "psyche-factory-" });
  try {
    await Deno.mkdir(join(root, "sft"));
    const inputs = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]];
    await Deno.writeFile(
      join(root, "sft", "train-00000-of-00001.parquet"),
      preprocessedParquet({
        inputs,
      }),
    );
    await using p = closing(
      await providerForLocation({ kind: "Preprocessed", source: "sft" }, {
        seqLen: 4,
        baseDir: root,
        vocabSize: 13,
      }),
    );
    assert.equal(p.numSequences, 3);
    assert.deepEqual(rows(await p.getSamples({ start: 0, end: 2 })), inputs);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

/** An Http location of `n` numbered `.ds` files under `url`. */
const numbered = (url: string, numFiles: number) => ({
  location: {
    NumberedFiles: {
      url_template: `${url}/{}.ds`,
      start_index: 0,
      n_left_pad_zeros: 3,
      num_files: numFiles,
    },
  },
  token_size_in_bytes: "TwoBytes",
  shuffle: "DontShuffle",
});

Deno.test("WeightedHttp serves Psyche's own weighted HTTP test vector", async () => {
  // Psyche's test_http_multi_data_provider: two datasets of two 16-byte files (bytes 1, 2 and
  // 3, 4), sequences of 3 tokens, weights 1:1; samples 0..7 come from files 1,3,1,3,2,4,2,4.
  const root = await Deno.makeTempDir({ prefix: "psyche-weighted-" });
  try {
    for (const [d, fill] of [[0, [1, 2]], [1, [3, 4]]] as const) {
      await Deno.mkdir(join(root, `provider_${d}`));
      for (const [f, byte] of fill.entries()) {
        await Deno.writeFile(
          join(root, `provider_${d}`, `00${f}.ds`),
          new Uint8Array(16).fill(byte),
        );
      }
    }
    await using http = startTestHttpServer(root);
    await Deno.writeTextFile(
      join(root, "multi_config.json"),
      JSON.stringify({
        shuffle: "DontShuffle",
        providers: [0, 1].map((d) => [numbered(`${http.url}/provider_${d}`, 2), 1.0]),
      }),
    );
    await using mix = closing(
      await providerForLocation({ kind: "WeightedHttp", url: `${http.url}/multi_config.json` }, {
        seqLen: 3,
      }),
    );
    assert.equal(mix.numSequences, 8);
    const firsts = rows(await mix.getSamples({ start: 0, end: 7 })).map((r) => r[0]);
    const token = (byte: number) => byte * 257; // two bytes `byte` as a little-endian u16
    assert.deepEqual(firsts, [1, 3, 1, 3, 2, 4, 2, 4].map(token));
    // Psyche serves dataset 0's first sample past the end; we refuse, as every provider here.
    await assert.rejects(mix.getSamples({ start: 8, end: 8 }), /out of range/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("two clients opening the same seeded WeightedHttp mix get the same samples", async () => {
  await using data = await writeFixtureDataset([300, 211, 256]);
  await using http = startTestHttpServer(data.dir);
  const seed = Array.from({ length: 32 }, (_, i) => i * 5);
  await Deno.writeTextFile(
    join(data.dir, "mix.json"),
    JSON.stringify({
      shuffle: { Seeded: seed },
      providers: [
        [{ ...numbered(http.url, 2), shuffle: { Seeded: seed } }, 0.8],
        [{
          location: { SingleUrl: `${http.url}/002.ds` },
          token_size_in_bytes: "TwoBytes",
          shuffle: "DontShuffle",
        }, 0.2],
      ],
    }),
  );
  const location: DataLocation = { kind: "WeightedHttp", url: `${http.url}/mix.json` };
  await using a = closing(await providerForLocation(location, { seqLen: 16, vocabSize: 32000 }));
  await using b = closing(await providerForLocation(location, { seqLen: 16, vocabSize: 32000 }));
  // 18 + 13 sequences in the first dataset, 16 in the second.
  assert.equal(a.numSequences, 47);
  const all = { start: 0, end: 46 };
  const [x, y] = await Promise.all([a.getSamples(all), b.getSamples(all)]);
  assert.deepEqual(x.tokens, y.tokens);
  // About 80% of the samples are sequences of the first dataset (files 0 and 1), the rest of
  // the second (file 2).
  const windows = (files: number[]) =>
    new Set(
      files.flatMap((f) => {
        const t = data.files[f].tokens;
        return Array.from({ length: Math.floor(t.length / 16) }, (_, k) =>
          t.slice(16 * k, 16 * k + 16).join());
      }),
    );
  const [first, second] = [windows([0, 1]), windows([2])];
  const fromFirst = rows(x).filter((r) => first.has(r.join())).length;
  assert.equal(fromFirst + rows(x).filter((r) => second.has(r.join())).length, 47);
  assert.ok(fromFirst >= 36 && fromFirst <= 39, `${fromFirst}`);
});

Deno.test("a broken or missing WeightedHttp mix is a DataError naming the URL", async () => {
  const root = await Deno.makeTempDir({ prefix: "psyche-weighted-" });
  try {
    await using http = startTestHttpServer(root);
    await Deno.writeTextFile(
      join(root, "mix.json"),
      JSON.stringify({ shuffle: "DontShuffle", providers: [[numbered(http.url, 1), 0]] }),
    );
    await assert.rejects(
      providerForLocation({ kind: "WeightedHttp", url: `${http.url}/mix.json` }, { seqLen: 4 }),
      (e: unknown) => {
        assert.ok(e instanceof DataError);
        assert.equal(e.key, "WeightedHttp");
        assert.match(
          e.message,
          /^WeightedHttp mix http:\/\/127\.0\.0\.1:\d+\/mix\.json: 1 problem:\n {2}- providers\[0\]\[1\] = 0: expected a weight/,
        );
        return true;
      },
    );
    await Deno.writeTextFile(
      join(root, "mix.json"),
      JSON.stringify({ shuffle: "DontShuffle", providers: [[numbered(http.url, 1), 1]] }),
    );
    await assert.rejects(
      providerForLocation({ kind: "WeightedHttp", url: `${http.url}/mix.json` }, { seqLen: 4 }),
      /mix\.json: providers\[0\] cannot be opened: .*000\.ds: HTTP 404 Not Found for HEAD/,
    );
    await assert.rejects(
      providerForLocation({ kind: "WeightedHttp", url: `${http.url}/none.json` }, { seqLen: 4 }),
      /none\.json: HTTP 404 Not Found for GET/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
