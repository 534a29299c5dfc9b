import assert from "node:assert/strict";
import { solana } from "./testing/solana_cli.ts";
import { loadProgramBytes, startLocalnet } from "../localnet/mod.ts";
import { loadWallet } from "../rpc/mod.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

Deno.test("operator commands open, configure, authorize, resume and dump a run", async () => {
  await using net = await startLocalnet({
    port: 0,
    wsPort: 0,
    programBytes: await loadProgramBytes(),
  });
  const dir = await Deno.makeTempDir({ prefix: "solana-cli-" });
  try {
    const rpc = ["--rpc", net.url];
    const key = (name: string) => ["--wallet-private-key-path", `${dir}/${name}.json`];
    for (const name of ["operator", "authorizer", "friend"]) {
      assert.equal((await solana(["keygen", "--out", `${dir}/${name}.json`])).code, 0);
    }
    const friend = (await loadWallet(`${dir}/friend.json`)).signer.address;
    const authorizer = (await loadWallet(`${dir}/authorizer.json`)).signer.address;
    const airdrop = await solana([
      "airdrop",
      "--lamports",
      "5000000000",
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(airdrop.code, 0, airdrop.err);

    const run = ["--run-id", "llama-tiny-brown"];
    const relay =
      "/ip4/203.0.113.7/tcp/4001/p2p/12D3KooWHFrmLWTTDD4NodngtRMEVYgxrsDMp4F9iSwYntZ9WjHa";
    const created = await solana([
      "create-run",
      ...run,
      "--relay",
      relay,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(created.code, 0, created.err);
    assert.match(created.out, /created run "llama-tiny-brown" at \w+/);
    assert.match(created.out, /run "llama-tiny-brown": 1 relay\(s\), 0 bootstrap peer\(s\)/);

    // A tick on a run with no config: the program's Halted, exit code 1.
    const tick = await solana(["tick", ...run, ...rpc, ...key("operator")]);
    assert.equal(tick.code, 1);
    assert.match(tick.err, /Halted/);

    const state = `${ROOT}config/llama-tiny/state.toml`;
    const wrongRun = await solana([
      "update-config",
      "--run-id",
      "other",
      "--config-path",
      state,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(wrongRun.code, 2);
    assert.match(wrongRun.err, /is for run "llama-tiny-brown", but --run-id is "other"/);
    // The chain keeps whole seconds: a fractional duration is refused by name, not rounded.
    const fractional = `${dir}/fractional.toml`;
    const text = await Deno.readTextFile(state);
    await Deno.writeTextFile(
      fractional,
      text.replace(/^round_witness_time = .*$/m, "round_witness_time = 0.1"),
    );
    const refused = await solana([
      "update-config",
      ...run,
      "--config-path",
      fractional,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(refused.code, 2);
    assert.match(
      refused.err,
      /fractional\.toml: config\.round_witness_time = 0\.1: the Solana program keeps durations in whole seconds/,
    );
    const updated = await solana([
      "update-config",
      ...run,
      "--config-path",
      state,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(updated.code, 0, updated.err);
    const named = await solana([
      "update-config",
      ...run,
      "--name",
      "tiny",
      "--vocab-size",
      "32000",
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(named.code, 0, named.err);
    assert.match(named.out, /updated run "llama-tiny-brown": name, vocabSize/);
    const peer = relay.replace("203.0.113.7", "198.51.100.9");
    const met = await solana([
      "update-config",
      ...run,
      "--relay",
      relay,
      "--bootstrap-peer",
      peer,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(met.code, 0, met.err);
    assert.match(met.out, /updated run "llama-tiny-brown": 1 relay\(s\), 1 bootstrap peer\(s\)/);

    const grant = await solana([
      "join-authorization",
      "create",
      ...run,
      "--authorizer",
      authorizer,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(grant.code, 0, grant.err);
    // The authorizer signs delegations; it needs the main authority to find the run.
    const operator = (await loadWallet(`${dir}/operator.json`)).signer.address;
    await solana(["airdrop", "--lamports", "1000000000", ...rpc, ...key("authorizer")]);
    const delegated = await solana([
      "join-authorization",
      "delegate",
      ...run,
      "--delegate",
      friend,
      "--main-authority",
      operator,
      ...rpc,
      ...key("authorizer"),
    ]);
    assert.equal(delegated.code, 0, delegated.err);

    const resumed = await solana(["set-paused", ...run, "resume", ...rpc, ...key("operator")]);
    assert.equal(resumed.code, 0, resumed.err);

    // Rates: only the main authority may set them; a rate left out keeps its value.
    const rates = ["set-future-epoch-rates", ...run, "--earning-rate-total-shared", "1000"];
    const stranger = await solana([
      ...rates,
      "--main-authority",
      operator,
      ...rpc,
      ...key("authorizer"),
    ]);
    assert.equal(stranger.code, 1);
    assert.match(stranger.err, /NotMainAuthority/);
    const earning = await solana([...rates, ...rpc, ...key("operator")]);
    assert.equal(earning.code, 0, earning.err);
    assert.match(earning.out, /run "llama-tiny-brown": earning rate 1000 from the next epoch/);
    const slashing = await solana([
      "set-future-epoch-rates",
      ...run,
      "--slashing-rate-per-client",
      "3",
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(slashing.code, 0, slashing.err);

    const dump = await solana(["json-dump-run", ...run, "--main-authority", operator, ...rpc]);
    assert.equal(dump.code, 0, dump.err);
    const json = JSON.parse(dump.out);
    assert.equal(json.state.runState, "WaitingForMembers");
    assert.equal(json.state.config.maxClients, 16);
    assert.equal(json.permissionless, false);
    assert.equal(json.delegates.length, 1);
    assert.deepEqual(json.metadata, {
      name: "tiny",
      description: "",
      numParameters: 0,
      vocabSize: 32000,
    });
    assert.deepEqual(json.meetingAddresses, [
      { kind: "Relay", address: relay },
      { kind: "Bootstrap", address: peer },
    ]);
    assert.deepEqual(json.futureEpochRates, {
      earningRateTotalShared: "1000",
      slashingRatePerClient: "3",
    });
    assert.deepEqual(json.currentEpochRates, {
      earningRateTotalShared: "0",
      slashingRatePerClient: "0",
    }, "an epoch takes the rates when it enters Warmup");
    assert.deepEqual(json.registry, []);
    assert.equal(
      json.nonce,
      "10",
      "init, meeting addresses, update, metadata, meeting addresses, grant, delegate, resume, " +
        "two rates",
    );

    // Only a halted run closes; its rent comes back and the account is gone.
    const live = await solana(["close-run", ...run, ...rpc, ...key("operator")]);
    assert.equal(live.code, 1);
    assert.match(live.err, /NotHalted/);
    assert.equal(
      (await solana(["set-paused", ...run, "pause", ...rpc, ...key("operator")])).code,
      0,
    );
    const before = net.ledger.account(friend)?.lamports ?? 0n;
    const closed = await solana([
      "close-run",
      ...run,
      "--spill",
      friend,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(closed.code, 0, closed.err);
    assert.ok((net.ledger.account(friend)?.lamports ?? 0n) > before + 1_000_000_000n, "rent");
    const gone = await solana(["json-dump-run", ...run, "--main-authority", operator, ...rpc]);
    assert.match(gone.err, /no account at/);
    // By default the rent goes back to the wallet that closes (an Uninitialized run is halted).
    const other = ["--run-id", "other"];
    assert.equal((await solana(["create-run", ...other, ...rpc, ...key("operator")])).code, 0);
    const own = await solana(["close-run", ...other, ...rpc, ...key("operator")]);
    assert.equal(own.code, 0, own.err);
    assert.match(own.out, new RegExp(`rent to ${operator}`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a run that does not exist is an error naming the account", async () => {
  await using net = await startLocalnet({
    port: 0,
    wsPort: 0,
    programBytes: await loadProgramBytes(),
  });
  const r = await solana([
    "json-dump-run",
    "--run-id",
    "nothing",
    "--main-authority",
    "11111111111111111111111111111111",
    "--rpc",
    net.url,
  ]);
  assert.equal(r.code, 1);
  assert.match(r.err, /no account at \w+/);
});
