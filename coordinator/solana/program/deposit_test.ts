/**
 * The join deposit in litesvm, with the real SPL Token program: off by default (joins need no
 * token accounts); set_join_deposit (who may send it, which vaults it takes); joins that cannot
 * pay are refused with the account byte-identical; a paid join moves the tokens and later joins
 * pay nothing; a Healthy finisher withdraws exactly its deposit once; a client dropped by a
 * health check or ejected forfeits it (its next join cancelled) and the main authority sweeps the
 * forfeits; 20 sybil wallets without tokens cannot fill a run. Every coordinator instruction goes
 * through DualRun, so the reference model is held to the same accounts.
 */

import assert from "node:assert/strict";
import { AccountRole, type Address, type KeyPairSigner } from "@solana/kit";
import { testConfig, testModel } from "../../../tests/support/coordinator_fixtures.ts";
import { CoordinatorSvm } from "../testing/svm.ts";
import { DualRun, type DualSendOptions, keyOf } from "../testing/dual_run.ts";
import {
  dropByHealthCheck,
  ejectThenEndEpoch,
  endCooldown,
  leaveWarmup,
  startEpoch,
  TEST_P2P,
  trainToCooldown,
} from "../testing/epochs.ts";
import {
  type CoordinatorInstruction,
  depositPayoutAccounts,
  depositVaultAuthority,
  joinDepositAccounts,
  OFFSETS,
  programErrorNumber,
  structLayout,
} from "../abi/mod.ts";
import { addressBytes } from "../testing/svm.ts";
import type { CoordinatorConfig } from "../../core/mod.ts";

const svm = await CoordinatorSvm.create();
const DEPOSIT = 1_000n;
const JOIN: CoordinatorInstruction = { kind: "JoinRun", p2pIdentity: TEST_P2P };

/** A run with a vault for its deposit (not yet set), and `n` clients with `funds` tokens each. */
async function depositRun(
  n: number,
  opts: { funds?: bigint; config?: Partial<CoordinatorConfig>; resume?: boolean } = {},
) {
  const r = await DualRun.create({ svm });
  await r.expectOk({
    kind: "Update",
    config: testConfig({
      initMinClients: n,
      minClients: 2,
      epochTime: 20,
      warmupTime: 5,
      ...opts.config,
    }),
    model: testModel(),
  }, r.mainAuthority);
  r.setTime(1);
  if (opts.resume ?? true) await r.expectOk({ kind: "SetPaused", paused: false }, r.mainAuthority);
  const mint = await svm.createMint();
  const authority = await depositVaultAuthority(svm.programId, r.coordinator);
  const vault = await svm.createTokenAccount(mint, authority.address, 0n);
  const clients: KeyPairSigner[] = [];
  const wallets = new Map<KeyPairSigner, Address>();
  for (let i = 0; i < n; i++) {
    const c = await svm.newSigner();
    clients.push(c);
    wallets.set(c, await svm.createTokenAccount(mint, c.address, opts.funds ?? DEPOSIT));
  }
  /** set_join_deposit with vault `at` (`valid`: a plain token account of the PDA). */
  const setDeposit = (amount: bigint, at: Address = vault, valid = true) =>
    r.send({ kind: "SetJoinDeposit", amount }, r.mainAuthority, {
      extraAccounts: [{ address: at, role: AccountRole.READONLY }],
      deposit: {
        given: true,
        valid,
        vault: { key: addressBytes(at), mint: addressBytes(mint), bump: authority.bump },
      },
    });
  /** join_run's options for `c` paying from `from` (its own token account by default). */
  const paying = (c: KeyPairSigner, from = wallets.get(c)!): DualSendOptions => ({
    extraAccounts: joinDepositAccounts({ tokenAccount: from, vault }),
    deposit: {
      given: true,
      valid: true,
      funded: svm.tokenBalance(from) >= DEPOSIT && from === wallets.get(c),
    },
  });
  const payout = (to: Address): DualSendOptions => ({
    extraAccounts: depositPayoutAccounts({
      tokenAccount: to,
      vault,
      vaultAuthority: authority.address,
    }),
    deposit: { given: true, valid: true },
  });
  return { r, mint, vault, authority, clients, wallets, setDeposit, paying, payout };
}

/** The deposit the program's account says `c`'s registration holds. */
function depositOf(r: DualRun, c: KeyPairSigner): bigint {
  const account = svm.coordinatorAccount(r.coordinator);
  const key = keyOf(c);
  return account.registry.find((x) => x.signer.every((b, i) => b === key[i]))?.deposit ?? 0n;
}

Deno.test("deposit off by default: no join deposit, joins carry no token accounts", async () => {
  const { r, clients } = await depositRun(2);
  assert.deepEqual(svm.coordinatorAccount(r.coordinator).joinDeposit, {
    amount: 0n,
    held: 0n,
    forfeited: 0n,
    mint: null,
    vault: null,
    vaultAuthorityBump: 0,
  });
  for (const c of clients) await r.expectOk(JOIN, c);
  assert.deepEqual(clients.map((c) => depositOf(r, c)), [0n, 0n]);
  // Nothing to withdraw, nothing to sweep.
  await r.expectError({ kind: "WithdrawDeposit" }, clients[0], "NoDeposit");
  await r.expectError({ kind: "SweepForfeited" }, r.mainAuthority, "NoDeposit");
});

Deno.test("set_join_deposit: main authority only; the vault must be the PDA's plain token account", async () => {
  const { r, mint, vault, clients, setDeposit } = await depositRun(2);
  const before = svm.accountBytes(r.coordinator)!;
  await r.expectError({ kind: "SetJoinDeposit", amount: DEPOSIT }, clients[0], "NotMainAuthority", {
    extraAccounts: [{ address: vault, role: AccountRole.READONLY }],
  });
  await r.expectError(
    { kind: "SetJoinDeposit", amount: DEPOSIT },
    r.mainAuthority,
    "NotEnoughAccounts",
  );
  // A token account of another owner; a wallet (not a token account).
  const foreign = await svm.createTokenAccount(mint, clients[0].address, 0n);
  assert.equal((await setDeposit(DEPOSIT, foreign, false)).error, "InvalidDepositAccounts");
  assert.equal(
    (await setDeposit(DEPOSIT, clients[0].address, false)).error,
    "InvalidDepositAccounts",
  );
  assert.deepEqual(svm.accountBytes(r.coordinator), before, "a refusal changed the account");
  assert.ok((await setDeposit(DEPOSIT)).ok);
  const d = svm.coordinatorAccount(r.coordinator).joinDeposit;
  assert.equal(d.amount, DEPOSIT);
  assert.deepEqual(d.vault, addressBytes(vault));
  assert.deepEqual(d.mint, addressBytes(mint));
});

Deno.test("with the deposit on, a join that cannot pay is refused and changes nothing", async () => {
  const { r, vault, clients, wallets, setDeposit, paying } = await depositRun(2, { funds: 999n });
  assert.ok((await setDeposit(DEPOSIT)).ok);
  const before = svm.accountBytes(r.coordinator)!;
  const [a, b] = clients;
  await r.expectError(JOIN, a, "DepositRequired");
  await r.expectError(JOIN, a, "InsufficientDeposit", paying(a)); // 999 < 1000
  // Another's token account (b's, though it signs as a).
  await r.expectError(JOIN, a, "InsufficientDeposit", paying(a, wallets.get(b)!));
  // Another account than the vault.
  await r.expectError(JOIN, a, "InvalidDepositAccounts", {
    extraAccounts: joinDepositAccounts({ tokenAccount: wallets.get(a)!, vault: wallets.get(b)! }),
    deposit: { given: true, valid: false },
  });
  assert.deepEqual(svm.accountBytes(r.coordinator), before);
  assert.equal(svm.tokenBalance(vault), 0n);
  assert.equal(svm.tokenBalance(wallets.get(a)!), 999n);
});

Deno.test("a paid join moves the deposit once; a Healthy finisher withdraws exactly it, once", async () => {
  const { r, vault, clients, wallets, setDeposit, paying, payout } = await depositRun(3, {
    funds: 2_500n,
  });
  assert.ok((await setDeposit(DEPOSIT)).ok);
  let t = await startEpoch(r, clients, paying);
  assert.equal(svm.tokenBalance(vault), 3n * DEPOSIT);
  assert.deepEqual(clients.map((c) => svm.tokenBalance(wallets.get(c)!)), [1_500n, 1_500n, 1_500n]);
  assert.equal(svm.coordinatorAccount(r.coordinator).joinDeposit.held, 3n * DEPOSIT);
  const [a, b] = clients;
  // In the running epoch, the deposit is locked.
  await r.expectError({ kind: "WithdrawDeposit" }, a, "DepositLocked", payout(wallets.get(a)!));
  // Joining for the next epoch pays nothing more (no token accounts needed).
  await r.expectOk(JOIN, b);
  assert.equal(svm.tokenBalance(vault), 3n * DEPOSIT);
  await leaveWarmup(r, clients);
  t = await trainToCooldown(r, clients, t);
  await endCooldown(r, t);
  assert.equal(r.model!.state.runState, "WaitingForMembers");
  // a finished Healthy and is not pending: it withdraws its deposit, once.
  await r.expectOk({ kind: "WithdrawDeposit" }, a, payout(wallets.get(a)!));
  assert.equal(svm.tokenBalance(wallets.get(a)!), 2_500n);
  assert.equal(svm.tokenBalance(vault), 2n * DEPOSIT);
  assert.equal(depositOf(r, a), 0n);
  await r.expectError({ kind: "WithdrawDeposit" }, a, "NoDeposit", payout(wallets.get(a)!));
  // b is pending for the next epoch: locked until that one ends.
  await r.expectError({ kind: "WithdrawDeposit" }, b, "DepositLocked", payout(wallets.get(b)!));
  // Wrong vault authority: refused.
  const c = clients[2];
  await r.expectError({ kind: "WithdrawDeposit" }, c, "InvalidDepositAccounts", {
    extraAccounts: depositPayoutAccounts({
      tokenAccount: wallets.get(c)!,
      vault,
      vaultAuthority: c.address,
    }),
    deposit: { given: true, valid: false },
  });
  await r.expectError({ kind: "WithdrawDeposit" }, c, "NotEnoughAccounts");
  assert.equal(svm.tokenBalance(vault), 2n * DEPOSIT);
  // A join after withdrawing pays again.
  await r.expectError(JOIN, a, "DepositRequired");
  await r.expectOk(JOIN, a, paying(a));
  assert.equal(depositOf(r, a), DEPOSIT);
});

Deno.test("withdraw_deposit's registration hint: only the signer's own slot is taken", async () => {
  const { r, vault, clients, wallets, setDeposit, paying, payout } = await depositRun(4, {
    funds: 2_500n,
  });
  assert.ok((await setDeposit(DEPOSIT)).ok);
  let t = await startEpoch(r, clients, paying);
  await leaveWarmup(r, clients);
  t = await trainToCooldown(r, clients, t);
  await endCooldown(r, t);
  const slotOf = (c: KeyPairSigner) =>
    svm.coordinatorAccount(r.coordinator).registry.findIndex((x) =>
      x.signer.every((b, i) => b === keyOf(c)[i])
    );
  const [a, b, c, d] = clients;
  assert.deepEqual(clients.map(slotOf), [0, 1, 2, 3]);
  const withdraw = (registration: number): CoordinatorInstruction => ({
    kind: "WithdrawDeposit",
    registration,
  });
  // A hint the signer holds: its own deposit, nothing else.
  await r.expectOk(withdraw(slotOf(a)), a, payout(wallets.get(a)!));
  assert.equal(svm.tokenBalance(wallets.get(a)!), 2_500n);
  assert.deepEqual(clients.map((x) => depositOf(r, x)), [0n, DEPOSIT, DEPOSIT, DEPOSIT]);
  // Another wallet's slot is not taken: the search finds the signer's own registration.
  await r.expectOk(withdraw(slotOf(d)), b, payout(wallets.get(b)!));
  assert.deepEqual(clients.map((x) => depositOf(r, x)), [0n, 0n, DEPOSIT, DEPOSIT]);
  assert.equal(svm.tokenBalance(wallets.get(b)!), 2_500n);
  assert.equal(svm.tokenBalance(wallets.get(d)!), 1_500n);
  // A wallet without a registration naming a slot that holds a deposit gets nothing.
  const outsider = await svm.newSigner();
  await r.expectError(withdraw(slotOf(d)), outsider, "NoDeposit", payout(wallets.get(d)!));
  // Slots past the registry fall back to the search too.
  await r.expectOk(withdraw(4), c, payout(wallets.get(c)!));
  await r.expectError(withdraw(0xffff), c, "NoDeposit", payout(wallets.get(c)!));
  assert.deepEqual(clients.map((x) => depositOf(r, x)), [0n, 0n, 0n, DEPOSIT]);
  // A hint cut short or followed by more bytes is refused before anything moves.
  const hinted = svm.instruction(r.coordinator, withdraw(slotOf(d)), {
    signer: d,
    extraAccounts: payout(wallets.get(d)!).extraAccounts,
  });
  for (const data of [Uint8Array.of(16, 3), Uint8Array.of(16, 3, 0, 0)]) {
    const res = await svm.sendRaw([{ ...hinted, data }]);
    assert.equal(res.code, programErrorNumber("InvalidInstruction"), `data ${[...data]}`);
  }
  r.check();
  assert.equal(svm.tokenBalance(vault), DEPOSIT);
  await r.expectOk(withdraw(slotOf(d)), d, payout(wallets.get(d)!));
  assert.equal(svm.tokenBalance(vault), 0n);
});

Deno.test("a client dropped by a health check forfeits its deposit; the authority sweeps it", async () => {
  const { r, vault, mint, authority, clients, wallets, setDeposit, paying, payout } =
    await depositRun(3, { funds: 3_000n });
  assert.ok((await setDeposit(DEPOSIT)).ok);
  let t = await startEpoch(r, clients, paying);
  await leaveWarmup(r, clients);
  const lazy = clients[2];
  const dropped = await dropByHealthCheck(r, clients, lazy, clients[0], t);
  // The dropped client joins for the next epoch while still holding its deposit.
  await r.expectOk(JOIN, lazy);
  t = await trainToCooldown(r, clients, dropped.t, dropped.seen);
  await endCooldown(r, t);
  const d = svm.coordinatorAccount(r.coordinator).joinDeposit;
  assert.equal(d.forfeited, DEPOSIT);
  assert.equal(d.held, 2n * DEPOSIT);
  assert.equal(depositOf(r, lazy), 0n);
  const reg = r.model!.registry.find((x) => x.signer.every((b, i) => b === keyOf(lazy)[i]))!;
  assert.notEqual(
    reg.active,
    r.model!.nextActive,
    "the forfeiting client's next join is cancelled",
  );
  await r.expectError({ kind: "WithdrawDeposit" }, lazy, "NoDeposit", payout(wallets.get(lazy)!));
  assert.equal(svm.tokenBalance(vault), 3n * DEPOSIT, "the forfeit stays in the vault");
  // Its next join pays again.
  await r.expectError(JOIN, lazy, "DepositRequired");
  // The healthy ones withdraw; the main authority sweeps the forfeit to a treasury account.
  for (const c of clients.slice(0, 2)) {
    await r.expectOk({ kind: "WithdrawDeposit" }, c, payout(wallets.get(c)!));
  }
  const treasury = await svm.createTokenAccount(mint, r.mainAuthority.address, 0n);
  await r.expectError({ kind: "SweepForfeited" }, clients[0], "NotMainAuthority", payout(treasury));
  await r.expectOk({ kind: "SweepForfeited" }, r.mainAuthority, payout(treasury));
  assert.equal(svm.tokenBalance(treasury), DEPOSIT);
  assert.equal(svm.tokenBalance(vault), 0n);
  await r.expectError({ kind: "SweepForfeited" }, r.mainAuthority, "NoDeposit", payout(treasury));
  // With nothing owed, the vault may change.
  const other = await svm.createTokenAccount(mint, authority.address, 0n);
  assert.ok((await setDeposit(DEPOSIT, other)).ok);
});

Deno.test("a client ejected by verification forfeits its deposit", async () => {
  const { r, vault, mint, authority, clients, wallets, setDeposit, paying, payout } =
    await depositRun(3);
  assert.ok((await setDeposit(DEPOSIT)).ok);
  const t = await startEpoch(r, clients, paying);
  await leaveWarmup(r, clients);
  const ejected = clients[1];
  await ejectThenEndEpoch(r, svm, clients, ejected, t);
  assert.equal(depositOf(r, ejected), 0n);
  assert.equal(svm.coordinatorAccount(r.coordinator).joinDeposit.forfeited, DEPOSIT);
  await r.expectError(
    { kind: "WithdrawDeposit" },
    ejected,
    "NoDeposit",
    payout(wallets.get(ejected)!),
  );
  assert.equal(svm.tokenBalance(vault), 3n * DEPOSIT);
  // The vault cannot change while it owes deposits.
  const other = await svm.createTokenAccount(mint, authority.address, 0n);
  assert.equal((await setDeposit(DEPOSIT, other)).error, "DepositVaultInUse");
});

Deno.test("20 sybil wallets without tokens cannot fill a run that requires a deposit", async () => {
  const config = { globalBatchSizeStart: 20, globalBatchSizeEnd: 20, initMinClients: 20 };
  // Without a deposit, 20 wallets fill the batch and a real joiner is turned away.
  const open = await depositRun(1, { config, resume: false });
  const sybils: KeyPairSigner[] = [];
  for (let i = 0; i < 20; i++) sybils.push(await svm.newSigner());
  for (const s of sybils) await open.r.expectOk(JOIN, s);
  await open.r.expectError(JOIN, open.clients[0], "MoreClientsThanBatches");
  // With one, none of them joins, and the real joiner pays and joins.
  const priced = await depositRun(1, { config, resume: false });
  assert.ok((await priced.setDeposit(DEPOSIT)).ok);
  for (const s of sybils) await priced.r.expectError(JOIN, s, "DepositRequired");
  await priced.r.expectOk(JOIN, priced.clients[0], priced.paying(priced.clients[0]));
  assert.equal(svm.tokenBalance(priced.vault), DEPOSIT);
});

Deno.test("a full registry never reuses a registration that holds a deposit", async () => {
  const { r, mint, clients, wallets, setDeposit, paying, payout } = await depositRun(2);
  assert.ok((await setDeposit(DEPOSIT)).ok);
  let t = await startEpoch(r, clients, paying);
  await leaveWarmup(r, clients);
  t = await trainToCooldown(r, clients, t);
  await endCooldown(r, t);
  // Both registrations grow stale (joined for epoch 0) but hold their deposits; the other 254
  // joined the epoch that just ended, so none of them is stale either.
  const nextActive = r.model!.nextActive;
  const registration = structLayout("registration_t");
  const activeAt = (i: number) =>
    OFFSETS.registry + i * registration.size + registration.offsets.active;
  const account = svm.svm.getAccount(r.coordinator);
  assert.ok(account.exists);
  const data = new Uint8Array(account.data);
  const view = new DataView(data.buffer);
  view.setUint16(OFFSETS.registryLen, 256, true);
  for (let i = 0; i < 256; i++) view.setBigUint64(activeAt(i), i < 2 ? 0n : nextActive - 1n, true);
  svm.svm.setAccount({ ...account, data });
  r.model!.registry.forEach((x) => x.active = 0n);
  for (let i = 2; i < 256; i++) {
    r.model!.registry.push({
      signer: new Uint8Array(32),
      p2pIdentity: new Uint8Array(32),
      active: nextActive - 1n,
      earned: 0n,
      deposit: 0n,
      slashed: 0n,
    });
  }
  r.check();
  const late = await svm.newSigner();
  wallets.set(late, await svm.createTokenAccount(mint, late.address, DEPOSIT));
  await r.expectError(JOIN, late, "ClientsFull", paying(late));
  // Once the first withdraws, its registration is stale and empty: the newcomer takes it.
  await r.expectOk({ kind: "WithdrawDeposit" }, clients[0], payout(wallets.get(clients[0])!));
  await r.expectOk(JOIN, late, paying(late));
  const after = svm.coordinatorAccount(r.coordinator);
  assert.deepEqual(after.registry[0].signer, keyOf(late));
  assert.equal(after.registry[0].deposit, DEPOSIT);
  assert.equal(after.registry[1].deposit, DEPOSIT, "the other deposit stays");
});
