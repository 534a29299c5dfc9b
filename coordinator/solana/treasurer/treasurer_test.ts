/**
 * The treasurer in litesvm beside the real coordinator program and the real SPL Token program:
 * clients train epochs on the coordinator (every instruction checked against the reference
 * model), then claim their earned points as tokens. Each claim pays exactly the points not yet
 * paid for; every refusal is named and leaves every account byte-identical.
 */
import assert from "node:assert/strict";
import {
  AccountRole,
  type Address,
  getAddressDecoder,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import {
  decodeParticipantAccount,
  decodeTreasuryAccount,
  PARTICIPANT_BYTES,
  PARTICIPANT_OFFSETS,
  participantAddress,
  participantClaimInstruction,
  participantCreateInstruction,
  TOKEN_PROGRAM_ADDRESS,
  tokenTransferInstruction,
  TREASURER_SYSTEM_PROGRAM_ADDRESS,
  TREASURY_BYTES,
  TREASURY_OFFSETS,
  treasuryAddress,
  treasuryCreateInstruction,
  treasuryVaultAddress,
} from "./mod.ts";
import { TreasurerSvm } from "../testing/treasurer_svm.ts";
import { sendOk, sendRefused } from "../testing/expect_send.ts";
import { type EarningRun, earningRun, playEpoch, pointsOf } from "../testing/epochs.ts";
import { buildTreasurerOnce } from "../toolchain/mod.ts";
import { OFFSETS } from "../abi/mod.ts";

const U64_MAX = (1n << 64n) - 1n;

interface Client {
  user: KeyPairSigner;
  participant: Address;
  /** The user's token account of the treasury's mint. */
  tokens: Address;
}

/** A run of three clients with a treasury, its vault funded by a top-up of `fund`. */
interface Fixture {
  t: TreasurerSvm;
  e: EarningRun;
  mint: Address;
  treasury: Address;
  vault: Address;
  funder: KeyPairSigner;
  funds: Address;
  clients: Client[];
}

async function fixture(opts: { fund?: bigint; rate?: bigint; clients?: number } = {}) {
  const t = await TreasurerSvm.create();
  const e = await earningRun(t.coordinator, {
    clients: opts.clients ?? 3,
    earningRate: opts.rate ?? 999n,
  });
  const mint = await t.createMint();
  const created = await treasuryCreateInstruction({
    programId: t.programId,
    authority: e.run.mainAuthority,
    coordinatorProgram: t.coordinatorProgramId,
    coordinator: e.run.coordinator,
    mint,
  });
  const r = await t.send([created.instruction]);
  assert.ok(r.ok, `treasury_create: ${r.error}\n${r.logs.join("\n")}`);
  const funder = await t.newSigner();
  const funds = await t.createTokenAccount(mint, funder.address, 1_000_000n);
  const f: Fixture = {
    t,
    e,
    mint,
    treasury: created.treasury,
    vault: created.vault,
    funder,
    funds,
    clients: [],
  };
  if ((opts.fund ?? 10_000n) > 0n) await ok(f, topUp(f, opts.fund ?? 10_000n), "top-up");
  for (const user of e.clients) {
    const { participant, instruction } = await participantCreateInstruction({
      programId: t.programId,
      treasury: f.treasury,
      user,
    });
    await ok(f, instruction, "participant_create");
    f.clients.push({
      user,
      participant,
      tokens: await t.createTokenAccount(mint, user.address, 0n),
    });
  }
  return f;
}

/** The top-up: a plain SPL transfer from the funder's account into the vault. */
const topUp = (f: Fixture, amount: bigint) =>
  tokenTransferInstruction({
    source: f.funds,
    destination: f.vault,
    owner: f.funder,
    amount,
  });

function claim(
  f: Fixture,
  c: Client,
  change: Partial<{ destination: Address; coordinator: Address }> = {},
): Promise<Instruction> {
  return participantClaimInstruction({
    programId: f.t.programId,
    treasury: f.treasury,
    coordinator: change.coordinator ?? f.e.run.coordinator,
    user: c.user,
    destination: change.destination ?? c.tokens,
  });
}

/** Every account a test touches. */
function everyAccount(f: Fixture): Address[] {
  return [
    f.treasury,
    f.vault,
    f.funds,
    f.e.run.coordinator,
    ...f.clients.flatMap((c) => [c.participant, c.tokens, c.user.address]),
  ];
}

const ok = (f: Fixture, ix: Instruction | Promise<Instruction>, what: string) =>
  sendOk(f.t, ix, what);

/** Sends `ix`, expects the named refusal, and checks that no account changed a byte. */
const refused = (
  f: Fixture,
  ix: Instruction | Promise<Instruction>,
  error: string,
  extra: Address[] = [],
) => sendRefused(f.t, ix, error, [...everyAccount(f), ...extra]);

const treasury = (f: Fixture) => decodeTreasuryAccount(f.t.accountBytes(f.treasury)!);
const claimed = (f: Fixture, c: Client) =>
  decodeParticipantAccount(f.t.accountBytes(c.participant)!).claimed;
const balances = (f: Fixture) => f.clients.map((c) => f.t.tokenBalance(c.tokens));

Deno.test("treasurer: links its CPI and PDA syscalls; reads the coordinator through layout.h", async () => {
  const program = await buildTreasurerOnce();
  for (
    const name of ["sol_invoke_signed_c", "sol_try_find_program_address", "sol_get_rent_sysvar"]
  ) {
    assert.ok(program.syscalls.includes(name), `${name} in ${program.syscalls.join(", ")}`);
  }
  const source = await Deno.readTextFile(new URL("./treasurer.c", import.meta.url));
  assert.match(source, /#include "\.\.\/program\/layout\.h"/);
  for (const field of ["registry", "earned", "registry_len", "main_authority"]) {
    assert.match(source, new RegExp(`->${field}\\b`), `reads ${field} through account_t`);
  }
});

Deno.test("treasurer: create makes the treasury and a vault the treasury owns", async () => {
  const f = await fixture({ fund: 0n, clients: 2 });
  assert.equal(f.treasury, await treasuryAddress(f.t.programId, f.e.run.coordinator));
  assert.equal(f.vault, await treasuryVaultAddress(f.t.programId, f.treasury));
  const t = treasury(f);
  assert.equal(f.t.accountBytes(f.treasury)!.length, TREASURY_BYTES);
  assert.deepEqual(
    { ...t, bump: 0, vaultBump: 0 },
    {
      version: 1,
      bump: 0,
      vaultBump: 0,
      coordinatorProgram: f.t.coordinatorProgramId,
      coordinator: f.e.run.coordinator,
      mint: f.mint,
      vault: f.vault,
      authority: f.e.run.mainAuthority.address,
      totalClaimed: 0n,
      participants: 2n,
    },
  );
  const vault = f.t.svm.getAccount(f.vault);
  assert.ok(vault.exists);
  assert.equal(vault.programAddress, TOKEN_PROGRAM_ADDRESS);
  assert.equal(getAddressDecoder().decode(vault.data.subarray(0, 32)), f.mint);
  assert.equal(getAddressDecoder().decode(vault.data.subarray(32, 64)), f.treasury);
  for (const c of f.clients) {
    const p = decodeParticipantAccount(f.t.accountBytes(c.participant)!);
    assert.equal(f.t.accountBytes(c.participant)!.length, PARTICIPANT_BYTES);
    assert.deepEqual({ ...p, bump: 0 }, {
      version: 1,
      bump: 0,
      treasury: f.treasury,
      user: c.user.address,
      claimed: 0n,
    });
  }
  // Anyone may top the vault up: a plain SPL transfer.
  await ok(f, topUp(f, 77n), "top-up");
  assert.equal(f.t.tokenBalance(f.vault), 77n);
});

Deno.test("treasurer: create refuses strangers, wrong accounts and a second treasury by name", async () => {
  const f = await fixture({ fund: 0n, clients: 2 });
  const t = f.t;
  const other = await earningRun(t.coordinator, { clients: 2, earningRate: 1n });
  const create = (change: {
    authority?: KeyPairSigner;
    coordinatorProgram?: Address;
    coordinator?: Address;
    mint?: Address;
  } = {}) =>
    treasuryCreateInstruction({
      programId: t.programId,
      authority: change.authority ?? other.run.mainAuthority,
      coordinatorProgram: change.coordinatorProgram ?? t.coordinatorProgramId,
      coordinator: change.coordinator ?? other.run.coordinator,
      mint: change.mint ?? f.mint,
    });
  const fresh = await create();
  const extra = [fresh.treasury, fresh.vault, other.run.coordinator];
  // Only the run's main authority (not its join authority, not a client).
  for (const authority of [other.run.joinAuthority, other.clients[0]]) {
    await refused(f, (await create({ authority })).instruction, "NotRunAuthority", extra);
  }
  // The coordinator account must belong to the coordinator program named.
  await refused(
    f,
    (await create({ coordinatorProgram: t.programId })).instruction,
    "InvalidCoordinatorAccount",
    extra,
  );
  await refused(
    f,
    (await create({ coordinator: f.funds })).instruction,
    "InvalidCoordinatorAccount",
    extra,
  );
  // Not a mint: a token account.
  await refused(f, (await create({ mint: f.funds })).instruction, "InvalidMint", extra);
  // The treasury of another run at this run's address.
  const swapped = { ...fresh.instruction, accounts: [...fresh.instruction.accounts!] };
  swapped.accounts[0] = { address: f.treasury, role: AccountRole.WRITABLE };
  await refused(f, swapped, "WrongAddress", extra);
  // The same run again.
  const again = await treasuryCreateInstruction({
    programId: t.programId,
    authority: f.e.run.mainAuthority,
    coordinatorProgram: t.coordinatorProgramId,
    coordinator: f.e.run.coordinator,
    mint: f.mint,
  });
  await refused(f, again.instruction, "AlreadyInitialized", extra);
  // A coordinator account of another layout version.
  t.patch(other.run.coordinator, (_, v) => v.setUint32(OFFSETS.version, 99, true));
  await refused(f, fresh.instruction, "InvalidCoordinatorAccount", extra);
  t.patch(other.run.coordinator, (_, v) => v.setUint32(OFFSETS.version, 0, true));
  await refused(f, fresh.instruction, "InvalidCoordinatorAccount", extra);
});

Deno.test("treasurer: each client claims exactly its points, once; later epochs pay only the new ones", async () => {
  const f = await fixture({ rate: 999n, fund: 10_000n });
  // Before any epoch: registered (joined) or not, nothing is owed.
  await refused(f, claim(f, f.clients[0]), "NotRegistered");
  await playEpoch(f.e);
  assert.deepEqual(pointsOf(f.e), [333n, 333n, 333n]);
  for (const c of f.clients) await ok(f, claim(f, c), "claim");
  assert.deepEqual(balances(f), [333n, 333n, 333n]);
  assert.equal(f.t.tokenBalance(f.vault), 10_000n - 999n);
  assert.deepEqual(f.clients.map((c) => claimed(f, c)), [333n, 333n, 333n]);
  assert.equal(treasury(f).totalClaimed, 999n);
  // A second claim pays nothing and changes nothing.
  for (const c of f.clients) await refused(f, claim(f, c), "NothingToClaim");
  // Another epoch: only its points.
  await playEpoch(f.e);
  assert.deepEqual(pointsOf(f.e), [666n, 666n, 666n]);
  await ok(f, claim(f, f.clients[1]), "claim");
  assert.deepEqual(balances(f), [333n, 666n, 333n]);
  // After a third epoch, the clients that skipped the second claim get two epochs' points at once.
  await playEpoch(f.e);
  for (const c of f.clients) await ok(f, claim(f, c), "claim");
  assert.deepEqual(balances(f), [999n, 999n, 999n]);
  assert.equal(treasury(f).totalClaimed, 2997n);
  assert.equal(f.t.tokenBalance(f.vault), 10_000n - 2997n);
  // The coordinator account never changed because of a claim: the DualRun model still matches.
  f.e.run.check();
});

Deno.test("treasurer: a client dropped by a health check gets nothing; strangers are refused", async () => {
  const f = await fixture({ rate: 1001n });
  const [a, b, lazy] = f.clients;
  await playEpoch(f.e, { drop: lazy.user });
  assert.deepEqual(pointsOf(f.e), [500n, 500n, 0n]);
  await refused(f, claim(f, lazy), "NothingToClaim");
  await ok(f, claim(f, a), "claim");
  await ok(f, claim(f, b), "claim");
  assert.deepEqual(balances(f), [500n, 500n, 0n]);
  // A wallet that never joined the run has nothing to claim.
  const stranger = await f.t.newSigner();
  const { participant, instruction } = await participantCreateInstruction({
    programId: f.t.programId,
    treasury: f.treasury,
    user: stranger,
  });
  await ok(f, instruction, "participant_create");
  const strangerTokens = await f.t.createTokenAccount(f.mint, stranger.address, 0n);
  const s: Client = { user: stranger, participant, tokens: strangerTokens };
  await refused(f, claim(f, s), "NotRegistered", [participant, strangerTokens]);
  // A stranger naming a client's participant account (and signing for itself).
  const theirs = await claim(f, s);
  const stolen = { ...theirs, accounts: [...theirs.accounts!] };
  stolen.accounts[1] = { address: a.participant, role: AccountRole.WRITABLE };
  await refused(f, stolen, "NotParticipant", [participant, strangerTokens]);
  // A client paid into another user's token account, or one of another mint.
  await refused(f, claim(f, lazy, { destination: a.tokens }), "InvalidTokenAccount");
  const otherMint = await f.t.createMint();
  const wrongMint = await f.t.createTokenAccount(otherMint, lazy.user.address, 0n);
  await refused(f, claim(f, lazy, { destination: wrongMint }), "InvalidTokenAccount", [wrongMint]);
  // Only a participant account of this treasury pays; one can be made only once.
  const again = await participantCreateInstruction({
    programId: f.t.programId,
    treasury: f.treasury,
    user: a.user,
  });
  await refused(f, again.instruction, "AlreadyInitialized");
});

Deno.test("treasurer: wrong vault, coordinator account or token program are refused by name", async () => {
  const f = await fixture({ rate: 90n });
  await playEpoch(f.e);
  const c = f.clients[0];
  const base = await claim(f, c);
  const replace = (i: number, address: Address, role = base.accounts![i].role) => {
    const accounts = [...base.accounts!];
    accounts[i] = { address, role };
    return { ...base, accounts };
  };
  // Another token account of the mint in the vault's place.
  await refused(f, replace(4, f.funds), "InvalidVault");
  // Another run's coordinator account, whose client holds points too.
  const other = await earningRun(f.t.coordinator, { clients: 2, earningRate: 50n });
  await playEpoch(other);
  await refused(f, replace(3, other.run.coordinator), "InvalidCoordinatorAccount", [
    other.run.coordinator,
  ]);
  await refused(f, replace(6, TREASURER_SYSTEM_PROGRAM_ADDRESS), "InvalidProgram");
  await refused(f, replace(0, f.vault, AccountRole.WRITABLE), "InvalidTreasuryAccount");
  // The coordinator account at its address, but owned by another program (copied there).
  const acc = f.t.svm.getAccount(f.e.run.coordinator);
  assert.ok(acc.exists);
  f.t.svm.setAccount({ ...acc, programAddress: f.t.programId });
  await refused(f, base, "InvalidCoordinatorAccount");
  f.t.svm.setAccount(acc);
  // The magic wiped.
  f.t.patch(f.e.run.coordinator, (d) => d.fill(0, OFFSETS.magic, OFFSETS.magic + 8));
  await refused(f, base, "InvalidCoordinatorAccount");
  f.t.svm.setAccount(acc);
  await ok(f, base, "claim with the right accounts");
  assert.equal(f.t.tokenBalance(c.tokens), 30n);
});

Deno.test("treasurer: an underfunded vault refuses the whole claim and pays nothing", async () => {
  const f = await fixture({ rate: 999n, fund: 500n });
  await playEpoch(f.e);
  await ok(f, claim(f, f.clients[0]), "claim");
  // 167 left; the next client is owed 333: refused whole, not paid 167.
  assert.equal(f.t.tokenBalance(f.vault), 167n);
  await refused(f, claim(f, f.clients[1]), "InsufficientFunds");
  assert.deepEqual(balances(f), [333n, 0n, 0n]);
  await ok(f, topUp(f, 166n), "top-up");
  await ok(f, claim(f, f.clients[1]), "claim");
  assert.equal(f.t.tokenBalance(f.vault), 0n);
  await refused(f, claim(f, f.clients[2]), "InsufficientFunds");
  await ok(f, topUp(f, 1000n), "top-up");
  await ok(f, claim(f, f.clients[2]), "claim");
  assert.deepEqual(balances(f), [333n, 333n, 333n]);
  assert.equal(treasury(f).totalClaimed, 999n);
});

Deno.test("treasurer: overflow and underflow are refused, never wrapped", async () => {
  const f = await fixture({ rate: 999n });
  await playEpoch(f.e);
  const [a, b] = f.clients;
  // The treasury's total would pass 2^64 - 1.
  f.t.patch(
    f.treasury,
    (_, v) => v.setBigUint64(TREASURY_OFFSETS.totalClaimed, U64_MAX - 332n, true),
  );
  await refused(f, claim(f, a), "Overflow");
  f.t.patch(
    f.treasury,
    (_, v) => v.setBigUint64(TREASURY_OFFSETS.totalClaimed, U64_MAX - 333n, true),
  );
  await ok(f, claim(f, a), "claim to exactly 2^64 - 1");
  assert.equal(treasury(f).totalClaimed, U64_MAX);
  f.t.patch(f.treasury, (_, v) => v.setBigUint64(TREASURY_OFFSETS.totalClaimed, 0n, true));
  // A participant paid for more than the run says it earned (a run re-created at the address).
  f.t.patch(b.participant, (_, v) => v.setBigUint64(PARTICIPANT_OFFSETS.claimed, 334n, true));
  await refused(f, claim(f, b), "Underflow");
  f.t.patch(b.participant, (_, v) => v.setBigUint64(PARTICIPANT_OFFSETS.claimed, 333n, true));
  await refused(f, claim(f, b), "NothingToClaim");
  // The participant count would pass 2^64 - 1.
  f.t.patch(f.treasury, (_, v) => v.setBigUint64(TREASURY_OFFSETS.participants, U64_MAX, true));
  const late = await f.t.newSigner();
  const { participant, instruction } = await participantCreateInstruction({
    programId: f.t.programId,
    treasury: f.treasury,
    user: late,
  });
  await refused(f, instruction, "Overflow", [participant]);
  // The points themselves are the coordinator's: at 2^64 - 1 they pay 2^64 - 1 tokens.
  const points = f.e.run.svm.coordinatorAccount(f.e.run.coordinator).registry.findIndex((r) =>
    getAddressDecoder().decode(r.signer) === f.clients[2].user.address
  );
  f.t.patch(
    f.e.run.coordinator,
    (_, v) => v.setBigUint64(OFFSETS.earned + 8 * points, U64_MAX, true),
  );
  f.t.patch(f.vault, (_, v) => v.setBigUint64(64, U64_MAX, true));
  await ok(f, claim(f, f.clients[2]), "claim of 2^64 - 1 points");
  assert.equal(f.t.tokenBalance(f.clients[2].tokens), U64_MAX);
  assert.equal(
    await participantAddress(f.t.programId, { treasury: f.treasury, user: late.address }),
    participant,
  );
});
