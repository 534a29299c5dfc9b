/**
 * The join deposit's operator commands against the localnet (litesvm with the real SPL Token and
 * Associated Token Account programs): set-join-deposit creates the vault and sets the amount, a
 * client's join pays, withdraw-deposit is refused by name while the registration is pending and
 * returns the deposit once it is not, sweep-forfeited pays the forfeits to the authority, and
 * json-dump-run shows it all. The mint and token accounts are written into the ledger directly,
 * and two states an epoch would reach (the registration's epoch over, a forfeit) are written into
 * the account: the program's rules for them are deposit_test.ts's.
 */
import assert from "node:assert/strict";
import {
  type Address,
  generateKeyPairSigner,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from "@solana/kit";
import { solana } from "./testing/solana_cli.ts";
import { type Ledger, loadProgramBytes, startLocalnet } from "../localnet/mod.ts";
import { loadWallet, SolanaRpcClient, TransactionSender } from "../rpc/mod.ts";
import {
  associatedTokenAddress,
  coordinatorInstruction,
  joinDepositAccounts,
  OFFSETS,
  structLayout,
} from "../abi/mod.ts";
import type { LiteSVM } from "litesvm";
import {
  tokenBalance as balance,
  writeTokenAt as writeToken,
} from "../testing/litesvm_accounts.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

/** The data of the last instruction of the latest transaction that touched `at`. */
function lastInstructionData(ledger: Ledger, at: Address): number[] {
  const [kept] = ledger.signaturesFor(at, { limit: 1 });
  const tx = getTransactionDecoder().decode(kept.bytes);
  const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  assert.ok("instructions" in message, "a legacy or v0 message");
  return [...(message.instructions.at(-1)?.data ?? [])];
}

/** Rewrites the account at `at` (states an epoch would reach, without running one). */
function patch(svm: LiteSVM, at: Address, edit: (view: DataView) => void): void {
  const acc = svm.getAccount(at);
  assert.ok(acc.exists);
  const data = Uint8Array.from(acc.data);
  edit(new DataView(data.buffer));
  svm.setAccount({ ...acc, data });
}

Deno.test("deposit commands: set the deposit, refuse and return a withdrawal, sweep forfeits", async () => {
  await using net = await startLocalnet({
    port: 0,
    wsPort: 0,
    programBytes: await loadProgramBytes(),
  });
  const svm = net.ledger.svm;
  const dir = await Deno.makeTempDir({ prefix: "solana-deposit-cli-" });
  try {
    const rpc = ["--rpc", net.url];
    const key = (name: string) => ["--wallet-private-key-path", `${dir}/${name}.json`];
    for (const name of ["operator", "client"]) {
      assert.equal((await solana(["keygen", "--out", `${dir}/${name}.json`])).code, 0);
      const a = await solana(["airdrop", "--lamports", "5000000000", ...rpc, ...key(name)]);
      assert.equal(a.code, 0, a.err);
    }
    const operator = (await loadWallet(`${dir}/operator.json`)).signer;
    const client = (await loadWallet(`${dir}/client.json`)).signer;
    const run = ["--run-id", "llama-tiny-brown"];
    const theirs = ["--main-authority", operator.address];
    const created = await solana([
      "create-run",
      ...run,
      "--permissionless",
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(created.code, 0, created.err);
    const coordinator = created.out.match(/ at (\w+)/)![1] as Address;
    const state = `${ROOT}config/llama-tiny/state.toml`;
    const updated = await solana([
      "update-config",
      ...run,
      "--config-path",
      state,
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(updated.code, 0, updated.err);

    const mint = (await generateKeyPairSigner()).address;
    writeToken(svm, mint, null);
    const wallet = await associatedTokenAddress(client.address, mint);
    writeToken(svm, wallet, { mint, owner: client.address, amount: 1_000n });

    // Only the main authority sets it; the vault is created with it.
    const stranger = await solana([
      "set-join-deposit",
      ...run,
      ...theirs,
      "--mint",
      mint,
      "--amount",
      "400",
      ...rpc,
      ...key("client"),
    ]);
    assert.equal(stranger.code, 1);
    assert.match(stranger.err, /NotMainAuthority/);
    const set = await solana([
      "set-join-deposit",
      ...run,
      "--mint",
      mint,
      "--amount",
      "400",
      ...rpc,
      ...key("operator"),
    ]);
    assert.equal(set.code, 0, set.err);
    const vault = set.out.match(/joining pays 400 of \w+ into vault (\w+)/)![1] as Address;
    assert.equal(balance(svm, vault), 0n);

    // The client joins, paying (as its backend would).
    const rpcClient = new SolanaRpcClient({ url: net.url });
    const sender = new TransactionSender({ rpcs: [rpcClient], payer: client });
    await sender.send([
      coordinatorInstruction({
        programId: net.ledger.programId,
        coordinator,
        signer: client,
        ix: { kind: "JoinRun", p2pIdentity: new Uint8Array(32).fill(1) },
        extraAccounts: joinDepositAccounts({ tokenAccount: wallet, vault }),
      }),
    ]);
    assert.equal(balance(svm, vault), 400n);
    assert.equal(balance(svm, wallet), 600n);

    // Pending for the next epoch: locked.
    const locked = await solana(["withdraw-deposit", ...run, ...theirs, ...rpc, ...key("client")]);
    assert.equal(locked.code, 1);
    assert.match(locked.err, /DepositLocked/);
    // Two epochs later (written into the account), the registration is neither pending nor in
    // the running epoch: the deposit comes back to the wallet's associated token account.
    patch(svm, coordinator, (v) => v.setBigUint64(OFFSETS.nextActive, 3n, true));
    const back = await solana(["withdraw-deposit", ...run, ...theirs, ...rpc, ...key("client")]);
    assert.equal(back.code, 0, back.err);
    assert.match(back.out, new RegExp(`deposit returned to ${wallet}`));
    assert.equal(balance(svm, wallet), 1_000n);
    assert.equal(balance(svm, vault), 0n);
    // The withdrawal named the client's registry slot (0), sparing the program its search.
    assert.deepEqual(lastInstructionData(net.ledger, coordinator), [16, 0, 0]);
    const again = await solana(["withdraw-deposit", ...run, ...theirs, ...rpc, ...key("client")]);
    assert.equal(again.code, 1);
    assert.match(again.err, /NoDeposit/);

    // A forfeit (written as an epoch end would leave it) is swept by the main authority only.
    const deposit = OFFSETS.joinDeposit + structLayout("join_deposit_t").offsets.forfeited;
    patch(svm, coordinator, (v) => v.setBigUint64(deposit, 400n, true));
    patch(svm, vault, (v) => v.setBigUint64(64, 400n, true));
    const treasury = await associatedTokenAddress(operator.address, mint);
    writeToken(svm, treasury, { mint, owner: operator.address, amount: 0n });
    const notYours = await solana(["sweep-forfeited", ...run, ...theirs, ...rpc, ...key("client")]);
    assert.equal(notYours.code, 1);
    assert.match(notYours.err, /NotMainAuthority/);
    const swept = await solana(["sweep-forfeited", ...run, ...rpc, ...key("operator")]);
    assert.equal(swept.code, 0, swept.err);
    assert.match(swept.out, new RegExp(`400 forfeited swept to ${treasury}`));
    assert.equal(balance(svm, treasury), 400n);

    const dump = await solana(["json-dump-run", ...run, ...rpc, ...key("operator")]);
    assert.equal(dump.code, 0, dump.err);
    const json = JSON.parse(dump.out);
    assert.deepEqual(json.joinDeposit, {
      amount: "400",
      held: "0",
      forfeited: "0",
      mint,
      vault,
    });
    assert.equal(json.registry[0].deposit, "0");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
