/**
 * The treasurer's commands against the localnet (litesvm with the coordinator, the treasurer and
 * the real SPL Token program): a treasury's whole cycle from the command line, and refusals by
 * name with exit code 1. The points a run paid, the mint and the token accounts are written into
 * the ledger directly (epochs are trained in treasurer_test.ts; no SPL Token CLI here).
 */
import assert from "node:assert/strict";
import { type Address, getAddressEncoder } from "@solana/kit";
import type { LiteSVM } from "litesvm";
import { solana } from "./testing/solana_cli.ts";
import { loadProgramBytes, startLocalnet } from "../localnet/mod.ts";
import { loadWallet } from "../rpc/mod.ts";
import { buildTreasurerOnce } from "../toolchain/mod.ts";
import { OFFSETS, structLayout } from "../abi/mod.ts";
import { newTokenAccount, tokenBalance as balance } from "../testing/litesvm_accounts.ts";

/** Gives the run's account registrations of `wallets` holding `points` (what epochs would pay). */
function payPoints(svm: LiteSVM, coordinator: Address, wallets: Address[], points: bigint[]) {
  const acc = svm.getAccount(coordinator);
  assert.ok(acc.exists);
  const data = Uint8Array.from(acc.data);
  const v = new DataView(data.buffer);
  const registration = structLayout("registration_t");
  v.setUint16(OFFSETS.registryLen, wallets.length, true);
  wallets.forEach((w, i) => {
    data.set(getAddressEncoder().encode(w), OFFSETS.registry + i * registration.size);
    v.setBigUint64(OFFSETS.earned + 8 * i, points[i], true);
  });
  svm.setAccount({ ...acc, data });
}

Deno.test("treasurer commands: create, top up, dump and claim on the localnet", async () => {
  await using net = await startLocalnet({
    port: 0,
    wsPort: 0,
    programBytes: await loadProgramBytes(),
    treasurerProgramBytes: (await buildTreasurerOnce()).bytes,
  });
  const svm = net.ledger.svm;
  const dir = await Deno.makeTempDir({ prefix: "solana-treasurer-cli-" });
  try {
    const rpc = ["--rpc", net.url];
    const key = (name: string) => ["--wallet-private-key-path", `${dir}/${name}.json`];
    const wallets: Record<string, Address> = {};
    for (const name of ["operator", "alice", "bob"]) {
      assert.equal((await solana(["keygen", "--out", `${dir}/${name}.json`])).code, 0);
      wallets[name] = (await loadWallet(`${dir}/${name}.json`)).signer.address;
      const a = await solana(["airdrop", "--lamports", "5000000000", ...rpc, ...key(name)]);
      assert.equal(a.code, 0, a.err);
    }
    const run = ["--run-id", "paid-run", "--main-authority", wallets.operator];
    const created = await solana([
      "create-run",
      "--run-id",
      "paid-run",
      "--permissionless",
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(created.code, 0, created.err);
    const coordinator = created.out.match(/at (\w+)/)![1] as Address;
    const mint = await newTokenAccount(svm, null);
    const funds = await newTokenAccount(svm, {
      mint: mint,
      owner: wallets.operator,
      amount: 10_000n,
    });
    const alice = await newTokenAccount(svm, { mint: mint, owner: wallets.alice, amount: 0n });
    const bob = await newTokenAccount(svm, { mint: mint, owner: wallets.bob, amount: 0n });

    // Only the run's main authority creates its treasury.
    const stranger = await solana([
      "treasury-create",
      ...run,
      "--mint",
      mint,
      ...rpc,
      ...key("bob"),
    ]);
    assert.equal(stranger.code, 1);
    assert.match(stranger.err, /NotRunAuthority \(7113\)/);
    const treasury = await solana([
      "treasury-create",
      ...run,
      "--mint",
      mint,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(treasury.code, 0, treasury.err);
    assert.match(
      treasury.out,
      new RegExp(`created treasury \\w+ for run ${coordinator}: vault \\w+`),
    );
    const vault = treasury.out.match(/vault (\w+)/)![1] as Address;

    const topUp = await solana([
      "treasury-top-up",
      "--coordinator",
      coordinator,
      "--amount",
      "350",
      "--from",
      funds,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(topUp.code, 0, topUp.err);
    assert.match(topUp.out, /topped up treasury \w+ with 350; its vault holds 350/);

    // The run paid alice 300 points and bob 100.
    payPoints(svm, coordinator, [wallets.alice, wallets.bob], [300n, 100n]);
    const dump = await solana([
      "json-dump-treasury",
      ...run,
      "--participant",
      wallets.alice,
      ...rpc,
    ]);
    assert.equal(dump.code, 0, dump.err);
    const json = JSON.parse(dump.out);
    assert.equal(json.treasury.coordinator, coordinator);
    assert.equal(json.treasury.vaultAmount, "350");
    assert.deepEqual(
      [json.participant.created, json.participant.earned, json.participant.claimableNow],
      [false, "300", "300"],
    );

    const claim = (who: string, to: Address) =>
      solana(["treasury-claim", ...run, "--to", to, ...rpc, ...key(who)]);
    const a = await claim("alice", alice);
    assert.equal(a.code, 0, a.err);
    assert.match(a.out, /claimed 300 from treasury \w+ into \w+; 300 points paid/);
    assert.equal(balance(svm, alice), 300n);
    // 50 left for bob's 100: refused whole.
    const short = await claim("bob", bob);
    assert.equal(short.code, 1);
    assert.match(short.err, /InsufficientFunds \(7117\)/);
    assert.equal(balance(svm, bob), 0n);
    const more = await solana([
      "treasury-top-up",
      ...run,
      "--amount",
      "1000",
      "--from",
      funds,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(more.code, 0, more.err);
    const b = await claim("bob", bob);
    assert.equal(b.code, 0, b.err);
    assert.equal(balance(svm, bob), 100n);
    const again = await claim("alice", alice);
    assert.equal(again.code, 1);
    assert.match(again.err, /NothingToClaim \(7116\)/);
    // Another epoch paid alice 50 more: only those.
    payPoints(svm, coordinator, [wallets.alice, wallets.bob], [350n, 100n]);
    const later = await claim("alice", alice);
    assert.equal(later.code, 0, later.err);
    assert.match(later.out, /claimed 50 from treasury \w+ into \w+; 350 points paid/);
    assert.equal(balance(svm, alice), 350n);
    assert.equal(balance(svm, vault), 1350n - 450n);
    // The operator never trained: nothing to claim.
    const op = await claim(
      "operator",
      await newTokenAccount(svm, { mint: mint, owner: wallets.operator, amount: 0n }),
    );
    assert.equal(op.code, 1);
    assert.match(op.err, /NotRegistered \(7115\)/);
    const final = JSON.parse(
      (await solana(["json-dump-treasury", ...run, "--participant", wallets.bob, ...rpc])).out,
    );
    assert.equal(final.treasury.totalClaimed, "450");
    // The operator's participant account went with its refused claim (one transaction).
    assert.equal(final.treasury.participants, "2");
    assert.deepEqual([final.participant.claimed, final.participant.claimableNow], ["100", "0"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
