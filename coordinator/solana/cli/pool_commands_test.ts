/**
 * The mining pool's operator commands against the localnet (litesvm with the real SPL Token
 * program): a pool's whole cycle from the command line, and refusals by name with exit code 1.
 * Mints and token accounts are written into the ledger directly (no SPL Token CLI here).
 */
import assert from "node:assert/strict";
import { type Address } from "@solana/kit";
import { solana } from "./testing/solana_cli.ts";
import { loadProgramBytes, LOCALNET_POOL_PROGRAM_ID, startLocalnet } from "../localnet/mod.ts";
import { loadWallet } from "../rpc/mod.ts";
import { buildPoolOnce } from "../toolchain/mod.ts";
import { rewardsVaultAddress } from "../pool/mod.ts";
import { newTokenAccount, tokenBalance as balance } from "../testing/litesvm_accounts.ts";

Deno.test("pool commands: create, deposit, freeze, declare and claim on the localnet", async () => {
  await using net = await startLocalnet({
    port: 0,
    wsPort: 0,
    programBytes: await loadProgramBytes(),
    poolProgramBytes: (await buildPoolOnce()).bytes,
  });
  const svm = net.ledger.svm;
  const dir = await Deno.makeTempDir({ prefix: "solana-pool-cli-" });
  try {
    const rpc = ["--rpc", net.url];
    const key = (name: string) => ["--wallet-private-key-path", `${dir}/${name}.json`];
    const wallets: Record<string, Address> = {};
    for (const name of ["operator", "alice", "bob"]) {
      assert.equal((await solana(["keygen", "--out", `${dir}/${name}.json`])).code, 0);
      wallets[name] = (await loadWallet(`${dir}/${name}.json`)).signer.address;
      const a = await solana(["airdrop", "--lamports", "1000000000", ...rpc, ...key(name)]);
      assert.equal(a.code, 0, a.err);
    }
    const collateral = await newTokenAccount(svm, null);
    const rewards = await newTokenAccount(svm, null);
    const alice = {
      from: await newTokenAccount(svm, { mint: collateral, owner: wallets.alice, amount: 1000n }),
      to: await newTokenAccount(svm, { mint: rewards, owner: wallets.alice, amount: 0n }),
    };
    const bob = {
      from: await newTokenAccount(svm, { mint: collateral, owner: wallets.bob, amount: 1000n }),
      to: await newTokenAccount(svm, { mint: rewards, owner: wallets.bob, amount: 0n }),
    };
    const where = ["--pool-authority", wallets.operator, "--index", "4"];

    const created = await solana([
      "pool-create",
      "--index",
      "4",
      "--collateral-mint",
      collateral,
      "--rewards-mint",
      rewards,
      "--max-deposit",
      "500",
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(created.code, 0, created.err);
    assert.match(created.out, /created pool 4 at \w+: collateral vault \w+, rewards vault \w+/);
    const pool = created.out.match(/at (\w+):/)![1] as Address;

    for (const [who, from, amount] of [["alice", alice.from, "300"], ["bob", bob.from, "100"]]) {
      const d = await solana([
        "pool-deposit",
        ...where,
        "--amount",
        amount,
        "--from",
        from,
        ...rpc,
        ...key(who),
      ]);
      assert.equal(d.code, 0, d.err);
      assert.match(d.out, new RegExp(`deposited ${amount} into pool ${pool}; ${amount} in all`));
    }
    // Over the cap: the program's error by name, exit 1.
    const over = await solana([
      "pool-deposit",
      "--pool",
      pool,
      "--amount",
      "101",
      "--from",
      bob.from,
      ...rpc,
      ...key("bob"),
    ]);
    assert.equal(over.code, 1);
    assert.match(over.err, /CapExceeded \(7014\)/);
    // Only the authority freezes.
    const stranger = await solana([
      "pool-update",
      "--pool",
      pool,
      "--freeze",
      ...rpc,
      ...key("bob"),
    ]);
    assert.equal(stranger.code, 1);
    assert.match(stranger.err, /NotPoolAuthority/);
    const frozen = await solana(["pool-update", ...where, "--freeze", ...rpc, ...key("operator")]);
    assert.equal(frozen.code, 0, frozen.err);
    assert.match(frozen.out, /deposits frozen, cap 500, 400 deposited/);
    const late = await solana([
      "pool-deposit",
      ...where,
      "--amount",
      "1",
      "--from",
      alice.from,
      ...rpc,
      ...key("alice"),
    ]);
    assert.equal(late.code, 1);
    assert.match(late.err, /PoolFrozen/);

    // The run paid the pool 1,001 reward units (written into the vault here).
    const vault = await rewardsVaultAddress(LOCALNET_POOL_PROGRAM_ID, pool);
    const acc = svm.getAccount(vault);
    assert.ok(acc.exists);
    const data = Uint8Array.from(acc.data);
    new DataView(data.buffer).setBigUint64(64, 1001n, true);
    svm.setAccount({ ...acc, data });
    const tooMuch = await solana([
      "pool-claimable",
      ...where,
      "--total",
      "1002",
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(tooMuch.code, 1);
    assert.match(tooMuch.err, /RewardsNotFunded/);
    const declared = await solana([
      "pool-claimable",
      ...where,
      "--total",
      "1001",
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(declared.code, 0, declared.err);

    const dump = await solana(["json-dump-pool", ...where, "--lender", wallets.alice, ...rpc]);
    assert.equal(dump.code, 0, dump.err);
    const json = JSON.parse(dump.out);
    assert.equal(json.pool.totalDeposited, "400");
    assert.equal(json.pool.totalClaimable, "1001");
    assert.equal(json.lender.claimableNow, "750"); // floor(300 * 1001 / 400)

    for (const [who, to] of [["alice", alice.to], ["bob", bob.to]]) {
      const c = await solana(["pool-claim", ...where, "--to", to, ...rpc, ...key(who)]);
      assert.equal(c.code, 0, c.err);
    }
    assert.equal(balance(svm, alice.to), 750n);
    assert.equal(balance(svm, bob.to), 250n); // floor(100 * 1001 / 400)
    assert.equal(balance(svm, vault), 1n, "the rounding remainder stays in the vault");
    const again = await solana(["pool-claim", ...where, "--to", alice.to, ...rpc, ...key("alice")]);
    assert.equal(again.code, 1);
    assert.match(again.err, /NothingToClaim \(7022\)/);

    // The authority takes the collateral out for the run.
    const out = await newTokenAccount(svm, {
      mint: collateral,
      owner: wallets.operator,
      amount: 0n,
    });
    const extracted = await solana([
      "pool-extract",
      ...where,
      "--amount",
      "400",
      "--to",
      out,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(extracted.code, 0, extracted.err);
    assert.equal(balance(svm, out), 400n);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
