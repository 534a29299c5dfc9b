import assert from "node:assert/strict";
import { type Address, generateKeyPairSigner, getAddressEncoder, lamports } from "@solana/kit";
import type { LiteSVM } from "litesvm";
import { accountSnapshot, parseDashboardArgs, readFunds } from "./dashboard.ts";
import { initialAccount } from "../reference/mod.ts";
import { main } from "./main.ts";
import {
  DEFAULT_POOL_PROGRAM_ID,
  DEFAULT_TREASURER_PROGRAM_ID,
  loadWallet,
  SolanaRpcClient,
} from "../rpc/mod.ts";
import { UsageError } from "../../../common/mod.ts";
import { loadProgramBytes, startLocalnet } from "../localnet/mod.ts";
import { SPL_TOKEN_PROGRAM_ADDRESS } from "../abi/mod.ts";
import {
  TREASURY_BYTES,
  TREASURY_MAGIC_TEXT,
  TREASURY_OFFSETS,
  treasuryAddress,
} from "../treasurer/mod.ts";
import { POOL_BYTES, POOL_MAGIC_TEXT, POOL_OFFSETS } from "../pool/mod.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const KEY = "11111111111111111111111111111111";

Deno.test("dashboard flags: the run is found by main authority or address, not both", () => {
  const byMain = parseDashboardArgs(["--run-id", "r", "--main-authority", KEY]);
  assert.notEqual(byMain, "help");
  if (byMain === "help") return;
  assert.deepEqual(byMain.run, {
    mainAuthority: KEY,
    programId: "PsyCoord11111111111111111111111111111111111",
  });
  assert.equal(byMain.pollMs, 1000);
  assert.equal(byMain.port, 0);
  const byAddress = parseDashboardArgs(["--run-id", "r", "--coordinator", KEY, "--port", "8080"]);
  assert.ok(byAddress !== "help" && "coordinator" in byAddress.run && byAddress.port === 8080);
  assert.throws(() => parseDashboardArgs(["--run-id", "r"]), /--main-authority PUBKEY or/);
  assert.throws(
    () => parseDashboardArgs(["--run-id", "r", "--coordinator", KEY, "--main-authority", KEY]),
    UsageError,
  );
  assert.throws(() => parseDashboardArgs(["--main-authority", KEY]), /needs --run-id/);
  assert.throws(
    () => parseDashboardArgs(["--run-id", "r", "--coordinator", "not-a-key"]),
    /--coordinator must be a base58 public key/,
  );
  assert.throws(
    () => parseDashboardArgs(["--run-id", "r", "--coordinator", KEY, "--poll-ms", "5"]),
    /--poll-ms must be/,
  );
  assert.throws(
    () => parseDashboardArgs(["--run-id", "r", "--coordinator", KEY, "--rpc", "nowhere"]),
    /--rpc must be a URL/,
  );
});

Deno.test("dashboard flags: --pool is repeatable; the programs default to the localnet's", () => {
  const args = parseDashboardArgs([
    "--run-id",
    "r",
    "--coordinator",
    KEY,
    "--pool",
    KEY,
    "--pool",
    DEFAULT_POOL_PROGRAM_ID,
    "--pool",
    KEY,
  ]);
  assert.ok(args !== "help");
  assert.deepEqual(args.pools, [KEY, DEFAULT_POOL_PROGRAM_ID], "each pool once");
  assert.equal(args.poolProgramId, DEFAULT_POOL_PROGRAM_ID);
  assert.equal(args.treasurerProgramId, DEFAULT_TREASURER_PROGRAM_ID);
  assert.throws(
    () => parseDashboardArgs(["--run-id", "r", "--coordinator", KEY, "--pool", "nope"]),
    /--pool must be a base58 public key, found "nope"/,
  );
  assert.throws(
    () =>
      parseDashboardArgs(["--run-id", "r", "--coordinator", KEY, "--treasurer-program-id", "x"]),
    /--treasurer-program-id must be a base58 public key/,
  );
});

/** Writes `data` at `at` into the ledger, owned by `owner`. */
function put(svm: LiteSVM, at: Address, owner: Address, data: Uint8Array): void {
  svm.setAccount({
    address: at,
    data,
    executable: false,
    lamports: lamports(svm.minimumBalanceForRentExemption(BigInt(data.length))),
    programAddress: owner,
    space: BigInt(data.length),
  });
}

Deno.test("readFunds: the run's treasury and the named pools, read from the localnet", async () => {
  await using net = await startLocalnet({
    port: 0,
    wsPort: 0,
    programBytes: await loadProgramBytes(),
  });
  const svm = net.ledger.svm;
  const rpc = new SolanaRpcClient({ url: net.url });
  const coordinator = (await generateKeyPairSigner()).address;
  const opts = {
    treasurerProgramId: DEFAULT_TREASURER_PROGRAM_ID,
    pools: [] as Address[],
    poolProgramId: DEFAULT_POOL_PROGRAM_ID,
  };
  assert.deepEqual(await readFunds(rpc, coordinator, opts), { treasury: null, pools: [] });

  const enc = getAddressEncoder();
  const mint = (await generateKeyPairSigner()).address;
  const treasury = await treasuryAddress(DEFAULT_TREASURER_PROGRAM_ID, coordinator);
  const vault = (await generateKeyPairSigner()).address;
  const token = new Uint8Array(165);
  token.set(enc.encode(mint), 0);
  token.set(enc.encode(treasury), 32);
  new DataView(token.buffer).setBigUint64(64, 5_000n, true);
  token[108] = 1;
  put(svm, vault, SPL_TOKEN_PROGRAM_ADDRESS, token);
  const t = new Uint8Array(TREASURY_BYTES);
  t.set(new TextEncoder().encode(TREASURY_MAGIC_TEXT), 0);
  t[TREASURY_OFFSETS.version] = 1;
  t.set(enc.encode(coordinator), TREASURY_OFFSETS.coordinator);
  t.set(enc.encode(mint), TREASURY_OFFSETS.mint);
  t.set(enc.encode(vault), TREASURY_OFFSETS.vault);
  new DataView(t.buffer).setBigUint64(TREASURY_OFFSETS.totalClaimed, 120n, true);
  put(svm, treasury, DEFAULT_TREASURER_PROGRAM_ID, t);

  const pool = (await generateKeyPairSigner()).address;
  const p = new Uint8Array(POOL_BYTES);
  p.set(new TextEncoder().encode(POOL_MAGIC_TEXT), 0);
  p[POOL_OFFSETS.version] = 1;
  p.set(enc.encode(mint), POOL_OFFSETS.rewardsMint);
  p.set(enc.encode(mint), POOL_OFFSETS.collateralMint);
  const v = new DataView(p.buffer);
  v.setBigUint64(POOL_OFFSETS.totalDeposited, 900n, true);
  v.setBigUint64(POOL_OFFSETS.totalClaimable, 300n, true);
  v.setBigUint64(POOL_OFFSETS.totalClaimed, 100n, true);
  put(svm, pool, DEFAULT_POOL_PROGRAM_ID, p);

  const funds = await readFunds(rpc, coordinator, { ...opts, pools: [pool] });
  assert.deepEqual(funds, {
    treasury: { address: treasury, mint, vaultAmount: "5000", totalClaimed: "120" },
    pools: [{
      address: pool,
      collateralMint: mint,
      rewardsMint: mint,
      totalDeposited: "900",
      totalClaimable: "300",
      totalClaimed: "100",
    }],
  });
  const snapshot = accountSnapshot(
    initialAccount({
      runId: "r",
      mainAuthority: new Uint8Array(32).fill(1),
      joinAuthority: new Uint8Array(32).fill(2),
      permissionless: true,
    }),
    funds,
  );
  assert.deepEqual(snapshot.funds, funds);

  // A pool that is not there, or not the pool program's, is refused by address.
  const nowhere = (await generateKeyPairSigner()).address;
  await assert.rejects(
    readFunds(rpc, coordinator, { ...opts, pools: [nowhere] }),
    new RegExp(`no pool account at ${nowhere}`),
  );
  put(svm, nowhere, DEFAULT_TREASURER_PROGRAM_ID, p);
  await assert.rejects(
    readFunds(rpc, coordinator, { ...opts, pools: [nowhere] }),
    /belongs to \w+, not the pool program/,
  );
});

Deno.test("a run account's snapshot carries every registered wallet's earned and slashed points", () => {
  const account = initialAccount({
    runId: "r",
    mainAuthority: new Uint8Array(32).fill(1),
    joinAuthority: new Uint8Array(32).fill(2),
    permissionless: true,
  });
  const key = (b: number) => new Uint8Array(32).fill(b);
  account.registry.push(
    {
      signer: key(0xaa),
      p2pIdentity: key(0xaa),
      active: 1n,
      earned: 500n,
      deposit: 0n,
      slashed: 0n,
    },
    {
      signer: key(0xbb),
      p2pIdentity: key(0xbb),
      active: 0n,
      earned: 0xffff_ffff_ffff_ffffn,
      deposit: 0n,
      slashed: 5n,
    },
  );
  const snapshot = accountSnapshot(account);
  assert.deepEqual(snapshot.pending, ["aa".repeat(32)]);
  assert.deepEqual(snapshot.earned, {
    ["aa".repeat(32)]: "500",
    ["bb".repeat(32)]: "18446744073709551615",
  });
  assert.deepEqual(snapshot.slashed, { ["aa".repeat(32)]: "0", ["bb".repeat(32)]: "5" });
});

/** A `deno task` process whose stdout lines are read until one matches. */
function spawnTask(args: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  return {
    child,
    async waitFor(pattern: RegExp): Promise<RegExpMatchArray> {
      for (;;) {
        const found = buffered.match(pattern);
        if (found !== null) return found;
        const { value, done } = await lines.read();
        if (done) throw new Error(`${args[0]} ended before printing ${pattern}: ${buffered}`);
        buffered += value;
      }
    },
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await lines.cancel().catch(() => {});
      await child.status;
    },
  };
}

Deno.test({
  name: "deno task dashboard serves a Solana run's state from the localnet",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using localnet = spawnTask(["localnet", "--port", "0", "--ws-port", "0"]);
    const rpcUrl = (await localnet.waitFor(/rpc:\s+(http:\/\/\S+)/))[1];
    const dir = await Deno.makeTempDir({ prefix: "solana-dashboard-" });
    try {
      const quiet = { write: () => {}, error: (l: string) => console.error(l) };
      const wallet = ["--wallet-private-key-path", `${dir}/operator.json`, "--rpc", rpcUrl];
      const run = ["--run-id", "llama-bytes-brown"];
      for (
        const argv of [
          ["keygen", "--out", `${dir}/operator.json`],
          ["airdrop", "--lamports", "10000000000", ...wallet],
          ["create-run", ...run, "--permissionless", ...wallet],
          ["update-config", ...run, "--config-path", `${ROOT}config/demo/state.toml`, ...wallet],
          ["set-paused", ...run, "resume", ...wallet],
        ]
      ) {
        assert.equal(await main(argv, quiet), 0, `solana ${argv[0]}`);
      }
      const operator = (await loadWallet(`${dir}/operator.json`)).signer.address;

      await using dashboard = spawnTask([
        "dashboard",
        "--port",
        "0",
        "--rpc",
        rpcUrl,
        ...run,
        "--main-authority",
        operator,
        "--poll-ms",
        "200",
      ]);
      const url = (await dashboard.waitFor(/^dashboard (http:\/\/\S+)/m))[1];
      const view = await (await fetch(`${url}/view.json`)).json();
      assert.equal(view.runId, "llama-bytes-brown");
      assert.equal(view.runState, "WaitingForMembers");
      assert.equal(view.config.architecture, "HfLlama");
      assert.deepEqual(view.funds, { treasury: null, pools: [] }, "no treasury, no --pool");
      const metrics = await (await fetch(`${url}/metrics`)).text();
      assert.match(metrics, /run_id="llama-bytes-brown"/);
      assert.match(metrics, /psyche_run_state\{state="WaitingForMembers"\} 1/);

      // The poller follows the chain: pausing the run shows on the page.
      assert.equal(await main(["set-paused", ...run, "pause", ...wallet], quiet), 0);
      const deadline = Date.now() + 10_000;
      let state = "";
      while (Date.now() < deadline) {
        state = (await (await fetch(`${url}/view.json`)).json()).runState;
        if (state === "Paused") break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(state, "Paused");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
