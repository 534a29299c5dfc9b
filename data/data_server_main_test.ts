import assert from "node:assert/strict";
import { fileURLToPath as fromFileUrl } from "node:url";
import { TcpDataProvider } from "./tcp_client.ts";
import { closing, writeFixtureDataset } from "./testing/fixtures.ts";
import { toHex } from "../common/mod.ts";
import { identityFromSecretKey } from "../net/mod.ts";

const main = fromFileUrl(new URL("./data_server_main.ts", import.meta.url));
const seedList = Array.from({ length: 32 }, () => 7).join(", ");

Deno.test("the data-server command serves only the keys it is told to allow", async () => {
  await using data = await writeFixtureDataset([256]);
  await Deno.writeTextFile(
    `${data.dir}/data.toml`,
    `dir = "."\ntoken_size = "TwoBytes"\nseq_len = 32\nshuffle_seed = [${seedList}]\n`,
  );
  const allowed = identityFromSecretKey(new Uint8Array(32).fill(1));
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      main,
      "--config",
      `${data.dir}/data.toml`,
      "--max-batch-sequences",
      "8",
      "--allow",
      toHex(allowed.publicKey),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let out = "";
    while (!/on (\S+:\d+)/.test(out)) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`data-server exited early: ${out}`);
      out += value;
    }
    assert.match(out, /serving .*: 8 sequences of 32 tokens, at most 8 per request/);
    const address = /on (\S+:\d+)/.exec(out)![1];
    await using ok = closing(
      await TcpDataProvider.connect(address, { secretKey: allowed.secretKey }),
    );
    assert.equal((await ok.getSamples({ start: 0, end: 7 })).count, 8);
    await using other = closing(
      await TcpDataProvider.connect(address, { secretKey: new Uint8Array(32).fill(2) }),
    );
    await assert.rejects(other.getSamples({ start: 0, end: 0 }), /NotInThisRound/);
  } finally {
    child.kill("SIGTERM");
    await lines.cancel();
    assert.equal((await child.status).code, 0);
  }
});

Deno.test("the data-server command refuses to allow a small-order key", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      main,
      "--config",
      "unused.toml",
      "--max-batch-sequences",
      "4",
      "--allow",
      "00".repeat(32),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  assert.match(
    new TextDecoder().decode(out.stderr),
    /--allow: Public key "0{64}" is a small-order point/,
  );
});
