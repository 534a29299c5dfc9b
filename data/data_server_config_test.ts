import assert from "node:assert/strict";
import { DataError } from "./errors.ts";
import { loadDataServerConfig, startDataServerFromConfig } from "./data_server_config.ts";
import { TcpDataProvider } from "./tcp_client.ts";
import { closing, rows, writeFixtureDataset } from "./testing/fixtures.ts";
import { LocalDataProvider } from "./local.ts";

const seedList = Array.from({ length: 32 }, (_, i) => i + 1).join(", ");

Deno.test("a data server started from data.toml serves its shuffled folder", async () => {
  await using data = await writeFixtureDataset([128, 64]);
  await Deno.writeTextFile(
    `${data.dir}/data.toml`,
    `dir = "."\ntoken_size = "TwoBytes"\nseq_len = 16\nshuffle_seed = [${seedList}]\n`,
  );
  const running = await startDataServerFromConfig(`${data.dir}/data.toml`, {
    authorize: () => "Allowed",
  });
  try {
    await using client = closing(
      await TcpDataProvider.connect(running.server.address, { secretKey: new Uint8Array(32) }),
    );
    const seed = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
    await using local = closing(
      await LocalDataProvider.open(data.dir, {
        seqLen: 16,
        tokenSize: "TwoBytes",
        shuffle: { kind: "Seeded", seed },
      }),
    );
    assert.equal(client.numSequences, 12);
    const batch = { start: 0, end: 11 };
    assert.deepEqual(rows(await client.getSamples(batch)), rows(await local.getSamples(batch)));
  } finally {
    await running.close();
  }
});

Deno.test("a malformed data.toml is a DataError naming the file and key", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/data.toml`,
      `dir = "."\ntoken_size = "ThreeBytes"\nseq_len = 16\nshuffle_seed = [1, 2]\n`,
    );
    await assert.rejects(loadDataServerConfig(`${dir}/data.toml`), (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.equal(e.file, `${dir}/data.toml`);
      assert.equal(e.key, "token_size");
      assert.match(e.message, /token_size/);
      assert.match(e.message, /shuffle_seed/);
      return true;
    });
    await assert.rejects(loadDataServerConfig(`${dir}/missing.toml`), /Cannot read data config/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
