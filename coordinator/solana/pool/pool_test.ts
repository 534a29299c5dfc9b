/**
 * The mining pool program in litesvm with the real SPL Token program: the full cycle, the
 * sums of claims, refusals by name with every account left byte-identical, and the checked
 * arithmetic on every balance.
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
  collateralVaultAddress,
  decodeLenderAccount,
  decodePoolAccount,
  LENDER_BYTES,
  LENDER_OFFSETS,
  lenderAddress,
  lenderClaimInstruction,
  lenderCreateInstruction,
  lenderDepositInstruction,
  lenderOwed,
  POOL_BYTES,
  POOL_OFFSETS,
  poolClaimableInstruction,
  poolCreateInstruction,
  poolExtractInstruction,
  poolUpdateInstruction,
  rewardsVaultAddress,
  TOKEN_PROGRAM_ADDRESS,
} from "./mod.ts";
import { PoolSvm } from "../testing/pool_svm.ts";
import { sendOk, sendRefused } from "../testing/expect_send.ts";
import { buildPoolOnce } from "../toolchain/mod.ts";

const U64_MAX = (1n << 64n) - 1n;

/** A pool with its mints, vaults and authority, and lenders with funded token accounts. */
interface Fixture {
  t: PoolSvm;
  authority: KeyPairSigner;
  pool: Address;
  collateralMint: Address;
  rewardsMint: Address;
  collateralVault: Address;
  rewardsVault: Address;
  lenders: { user: KeyPairSigner; lender: Address; source: Address; rewards: Address }[];
}

async function fixture(opts: { maxDeposit?: bigint; funds?: bigint[]; index?: bigint } = {}) {
  const t = await PoolSvm.create();
  const authority = await t.newSigner();
  const collateralMint = await t.createMint();
  const rewardsMint = await t.createMint();
  const created = await poolCreateInstruction({
    programId: t.programId,
    authority,
    index: opts.index ?? 7n,
    maxDeposit: opts.maxDeposit ?? 1_000_000n,
    collateralMint,
    rewardsMint,
  });
  const result = await t.send([created.instruction]);
  assert.ok(result.ok, `pool_create: ${result.error}\n${result.logs.join("\n")}`);
  const pool = created.pool;
  const f: Fixture = {
    t,
    authority,
    pool,
    collateralMint,
    rewardsMint,
    collateralVault: await collateralVaultAddress(t.programId, pool),
    rewardsVault: await rewardsVaultAddress(t.programId, pool),
    lenders: [],
  };
  for (const funds of opts.funds ?? []) {
    const user = await t.newSigner();
    const { lender, instruction } = await lenderCreateInstruction({
      programId: t.programId,
      pool,
      user,
    });
    const r = await t.send([instruction]);
    assert.ok(r.ok, `lender_create: ${r.error}`);
    f.lenders.push({
      user,
      lender,
      source: await t.createTokenAccount(collateralMint, user.address, funds),
      rewards: await t.createTokenAccount(rewardsMint, user.address, 0n),
    });
  }
  return f;
}

function deposit(f: Fixture, i: number, amount: bigint): Promise<Instruction> {
  const l = f.lenders[i];
  return lenderDepositInstruction({
    programId: f.t.programId,
    pool: f.pool,
    user: l.user,
    source: l.source,
    amount,
  });
}

function claim(f: Fixture, i: number): Promise<Instruction> {
  const l = f.lenders[i];
  return lenderClaimInstruction({
    programId: f.t.programId,
    pool: f.pool,
    user: l.user,
    destination: l.rewards,
  });
}

const freeze = (f: Fixture, frozen = true) =>
  poolUpdateInstruction({ programId: f.t.programId, pool: f.pool, authority: f.authority, frozen });

const claimable = (f: Fixture, totalClaimable: bigint) =>
  poolClaimableInstruction({
    programId: f.t.programId,
    pool: f.pool,
    authority: f.authority,
    totalClaimable,
  });

/** Mints `amount` rewards straight into the rewards vault (what the run paid the pool). */
function fundRewards(f: Fixture, amount: bigint): void {
  f.t.patch(f.rewardsVault, (d) => {
    const v = new DataView(d.buffer);
    v.setBigUint64(64, v.getBigUint64(64, true) + amount, true);
  });
}

/** Every account a test touches. */
function everyAccount(f: Fixture): Address[] {
  return [
    f.pool,
    f.collateralVault,
    f.rewardsVault,
    f.authority.address,
    ...f.lenders.flatMap((l) => [l.lender, l.source, l.rewards, l.user.address]),
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

Deno.test("pool: the program links its CPI and PDA syscalls by name", async () => {
  const program = await buildPoolOnce();
  for (
    const name of ["sol_invoke_signed_c", "sol_try_find_program_address", "sol_get_rent_sysvar"]
  ) {
    assert.ok(program.syscalls.includes(name), `${name} in ${program.syscalls.join(", ")}`);
  }
});

Deno.test("pool: create makes the pool and two vaults owned by the pool", async () => {
  const f = await fixture({ maxDeposit: 500n, index: 3n });
  const pool = decodePoolAccount(f.t.accountBytes(f.pool)!);
  assert.equal(pool.authority, f.authority.address);
  assert.equal(pool.index, 3n);
  assert.equal(pool.maxDeposit, 500n);
  assert.equal(pool.frozen, false);
  assert.equal(pool.collateralVault, f.collateralVault);
  assert.equal(pool.rewardsVault, f.rewardsVault);
  assert.equal(f.t.accountBytes(f.pool)!.length, POOL_BYTES);
  for (
    const [vault, mint] of [[f.collateralVault, f.collateralMint], [f.rewardsVault, f.rewardsMint]]
  ) {
    const acc = f.t.svm.getAccount(vault);
    assert.ok(acc.exists);
    assert.equal(acc.programAddress, TOKEN_PROGRAM_ADDRESS);
    assert.equal(getAddressDecoder().decode(acc.data.subarray(0, 32)), mint);
    assert.equal(getAddressDecoder().decode(acc.data.subarray(32, 64)), f.pool);
  }
  // The same authority and index again: the accounts exist.
  const again = await poolCreateInstruction({
    programId: f.t.programId,
    authority: f.authority,
    index: 3n,
    maxDeposit: 1n,
    collateralMint: f.collateralMint,
    rewardsMint: f.rewardsMint,
  });
  await refused(f, again.instruction, "AlreadyInitialized");
});

Deno.test("pool: deposits and claims add up to the pool's total to the last unit", async () => {
  const deposits = [1n, 2n, 3n, 5n, 8n, 13n, 21n];
  const f = await fixture({ funds: deposits.map((d) => d * 10n) });
  for (let i = 0; i < deposits.length; i++) await ok(f, deposit(f, i, deposits[i]), "deposit");
  // A second deposit by lender 0 adds to its share.
  await ok(f, deposit(f, 0, 4n), "second deposit");
  const shares = deposits.map((d, i) => (i === 0 ? d + 4n : d));
  const totalDeposited = shares.reduce((a, b) => a + b, 0n);
  assert.equal(f.t.tokenBalance(f.collateralVault), totalDeposited);
  await ok(f, freeze(f), "freeze");
  const total = 1_000_003n;
  fundRewards(f, total);
  await ok(f, claimable(f, total), "claimable");
  let paid = 0n;
  for (let i = 0; i < shares.length; i++) {
    await ok(f, claim(f, i), `claim ${i}`);
    const got = f.t.tokenBalance(f.lenders[i].rewards);
    assert.equal(got, lenderOwed(shares[i], total, totalDeposited));
    paid += got;
  }
  const pool = decodePoolAccount(f.t.accountBytes(f.pool)!);
  assert.equal(pool.totalClaimed, paid);
  // The flooring remainder stays in the rewards vault: less than one unit per lender.
  const remainder = total - paid;
  assert.equal(f.t.tokenBalance(f.rewardsVault), remainder);
  assert.ok(remainder >= 0n && remainder < BigInt(shares.length), `remainder ${remainder}`);
  assert.equal(paid + f.t.tokenBalance(f.rewardsVault), total);
  // The pool earns more: every lender can claim what is new, and nothing twice.
  fundRewards(f, 500n);
  await ok(f, claimable(f, total + 500n), "claimable raised");
  let paidAll = 0n;
  for (let i = 0; i < shares.length; i++) {
    const r = await f.t.send([await claim(f, i)]);
    if (!r.ok) assert.equal(r.error, "NothingToClaim");
    const got = f.t.tokenBalance(f.lenders[i].rewards);
    assert.equal(got, lenderOwed(shares[i], total + 500n, totalDeposited));
    paidAll += got;
  }
  assert.equal(paidAll + f.t.tokenBalance(f.rewardsVault), total + 500n);
  for (const l of f.lenders) {
    const lender = decodeLenderAccount(f.t.accountBytes(l.lender)!);
    assert.equal(lender.claimed, f.t.tokenBalance(l.rewards));
  }
});

Deno.test("pool: a double claim pays nothing", async () => {
  const f = await fixture({ funds: [100n, 100n] });
  await ok(f, deposit(f, 0, 60n), "deposit");
  await ok(f, deposit(f, 1, 40n), "deposit");
  await ok(f, freeze(f), "freeze");
  fundRewards(f, 1000n);
  await ok(f, claimable(f, 1000n), "claimable");
  await ok(f, claim(f, 0), "claim");
  assert.equal(f.t.tokenBalance(f.lenders[0].rewards), 600n);
  await refused(f, claim(f, 0), "NothingToClaim");
  assert.equal(f.t.tokenBalance(f.lenders[0].rewards), 600n);
});

Deno.test("pool: a claim by a stranger is refused", async () => {
  const f = await fixture({ funds: [100n] });
  await ok(f, deposit(f, 0, 100n), "deposit");
  await ok(f, freeze(f), "freeze");
  fundRewards(f, 50n);
  await ok(f, claimable(f, 50n), "claimable");
  const stranger = await f.t.newSigner();
  const strangerRewards = await f.t.createTokenAccount(f.rewardsMint, stranger.address, 0n);
  const victim = f.lenders[0];
  // The stranger signs, naming the lender's account: not its user.
  const own = await lenderClaimInstruction({
    programId: f.t.programId,
    pool: f.pool,
    user: stranger,
    destination: strangerRewards,
  });
  const stolen: Instruction = {
    ...own,
    accounts: own.accounts!.map((a, i) => (i === 1 ? { ...a, address: victim.lender } : a)),
  };
  await refused(f, stolen, "NotLender", [strangerRewards, stranger.address]);
  // The stranger's own lender account does not exist.
  await refused(
    f,
    lenderClaimInstruction({
      programId: f.t.programId,
      pool: f.pool,
      user: stranger,
      destination: strangerRewards,
    }),
    "InvalidLenderAccount",
    [strangerRewards, stranger.address],
  );
  // The lender's user did not sign (its key listed read-only, the stranger paying).
  const ix = await claim(f, 0);
  const unsigned: Instruction = {
    ...ix,
    accounts: ix.accounts!.map((a, i) =>
      i === 2 ? { address: victim.user.address, role: AccountRole.READONLY } : a
    ),
  };
  await refused(f, unsigned, "MissingSignature");
  assert.equal(f.t.tokenBalance(strangerRewards), 0n);
});

Deno.test("pool: deposits are refused once frozen, over the cap, or without funds", async () => {
  const f = await fixture({ maxDeposit: 100n, funds: [80n, 80n] });
  await ok(f, deposit(f, 0, 70n), "deposit");
  await refused(f, deposit(f, 1, 31n), "CapExceeded");
  await ok(f, deposit(f, 1, 30n), "deposit to the cap");
  await ok(
    f,
    poolUpdateInstruction({
      programId: f.t.programId,
      pool: f.pool,
      authority: f.authority,
      maxDeposit: 200n,
    }),
    "raise the cap",
  );
  await refused(f, deposit(f, 1, 51n), "InsufficientFunds");
  await refused(f, deposit(f, 1, 0n), "InvalidAmount");
  await ok(f, freeze(f), "freeze");
  await refused(f, deposit(f, 1, 1n), "PoolFrozen");
  // Unfreezing is allowed until rewards become claimable.
  await ok(f, freeze(f, false), "unfreeze");
  await ok(f, deposit(f, 1, 1n), "deposit after unfreeze");
  await ok(f, freeze(f), "freeze");
  fundRewards(f, 10n);
  await ok(f, claimable(f, 10n), "claimable");
  await refused(f, freeze(f, false), "ClaimingStarted");
  const pool = decodePoolAccount(f.t.accountBytes(f.pool)!);
  assert.equal(pool.totalDeposited, 101n);
  assert.equal(f.t.tokenBalance(f.collateralVault), 101n);
});

Deno.test("pool: claimable needs a frozen, funded pool and only grows", async () => {
  const f = await fixture({ funds: [100n] });
  fundRewards(f, 100n);
  await ok(f, freeze(f), "freeze");
  await refused(f, claimable(f, 10n), "NothingDeposited");
  await ok(f, freeze(f, false), "unfreeze");
  await ok(f, deposit(f, 0, 100n), "deposit");
  await refused(f, claimable(f, 10n), "PoolNotFrozen");
  await ok(f, freeze(f), "freeze");
  await refused(f, claimable(f, 101n), "RewardsNotFunded");
  await ok(f, claimable(f, 60n), "claimable");
  await refused(f, claimable(f, 59n), "ClaimableDecreased");
  await ok(f, claim(f, 0), "claim");
  // 40 left in the vault, 60 paid: a total of 100 is funded, 101 is not.
  await refused(f, claimable(f, 101n), "RewardsNotFunded");
  await ok(f, claimable(f, 100n), "claimable raised");
});

Deno.test("pool: the authority alone updates, extracts and declares rewards", async () => {
  const f = await fixture({ funds: [100n] });
  await ok(f, deposit(f, 0, 100n), "deposit");
  const stranger = await f.t.newSigner();
  const update = (authority: KeyPairSigner) =>
    poolUpdateInstruction({ programId: f.t.programId, pool: f.pool, authority, frozen: true });
  await refused(f, update(stranger), "NotPoolAuthority", [stranger.address]);
  const destination = await f.t.createTokenAccount(f.collateralMint, f.authority.address, 0n);
  const extract = (authority: KeyPairSigner, amount: bigint, to = destination) =>
    poolExtractInstruction({
      programId: f.t.programId,
      pool: f.pool,
      authority,
      destination: to,
      amount,
    });
  await refused(f, extract(stranger, 10n), "NotPoolAuthority", [destination]);
  await refused(f, extract(f.authority, 101n), "InsufficientFunds", [destination]);
  const wrongMint = await f.t.createTokenAccount(f.rewardsMint, f.authority.address, 0n);
  await refused(f, extract(f.authority, 10n, wrongMint), "InvalidTokenAccount", [wrongMint]);
  await ok(f, extract(f.authority, 30n), "extract");
  assert.equal(f.t.tokenBalance(destination), 30n);
  assert.equal(f.t.tokenBalance(f.collateralVault), 70n);
  const pool = decodePoolAccount(f.t.accountBytes(f.pool)!);
  assert.equal(pool.totalExtracted, 30n);
  assert.equal(pool.totalDeposited, 100n, "extracting does not change the lenders' shares");
  await ok(f, freeze(f), "freeze");
  fundRewards(f, 5n);
  await refused(
    f,
    poolClaimableInstruction({
      programId: f.t.programId,
      pool: f.pool,
      authority: stranger,
      totalClaimable: 5n,
    }),
    "NotPoolAuthority",
    [stranger.address],
  );
});

Deno.test("pool: wrong mints, vaults and token accounts are refused", async () => {
  const f = await fixture({ funds: [100n] });
  const l = f.lenders[0];
  // A deposit from a token account of the rewards mint.
  const wrongMint = await f.t.createTokenAccount(f.rewardsMint, l.user.address, 100n);
  await refused(
    f,
    lenderDepositInstruction({
      programId: f.t.programId,
      pool: f.pool,
      user: l.user,
      source: wrongMint,
      amount: 1n,
    }),
    "InvalidTokenAccount",
    [wrongMint],
  );
  // A deposit from someone else's token account.
  const other = await f.t.newSigner();
  const othersAccount = await f.t.createTokenAccount(f.collateralMint, other.address, 100n);
  await refused(
    f,
    lenderDepositInstruction({
      programId: f.t.programId,
      pool: f.pool,
      user: l.user,
      source: othersAccount,
      amount: 1n,
    }),
    "InvalidTokenAccount",
    [othersAccount],
  );
  // A deposit into a vault that is not the pool's.
  const fakeVault = await f.t.createTokenAccount(f.collateralMint, l.user.address, 0n);
  const ix = await deposit(f, 0, 1n);
  const swapped = (at: number, to: Address): Instruction => ({
    ...ix,
    accounts: ix.accounts!.map((a, i) => (i === at ? { ...a, address: to } : a)),
  });
  await refused(f, swapped(4, fakeVault), "InvalidVault", [fakeVault]);
  // Another program in the token program's place.
  await refused(f, swapped(5, f.t.programId), "InvalidProgram");
  // pool_create with a token account in a mint's place.
  const badCreate = await poolCreateInstruction({
    programId: f.t.programId,
    authority: f.authority,
    index: 99n,
    maxDeposit: 1n,
    collateralMint: l.source,
    rewardsMint: f.rewardsMint,
  });
  await refused(f, badCreate.instruction, "InvalidMint");
  // pool_create at an address that is not the PDA of its authority and index.
  const elsewhere = await poolCreateInstruction({
    programId: f.t.programId,
    authority: f.authority,
    index: 100n,
    maxDeposit: 1n,
    collateralMint: f.collateralMint,
    rewardsMint: f.rewardsMint,
  });
  const misplaced: Instruction = {
    ...elsewhere.instruction,
    data: badCreate.instruction.data,
  };
  await refused(f, misplaced, "WrongAddress");
  // A lender account of another pool.
  const second = await poolCreateInstruction({
    programId: f.t.programId,
    authority: f.authority,
    index: 8n,
    maxDeposit: 1000n,
    collateralMint: f.collateralMint,
    rewardsMint: f.rewardsMint,
  });
  await ok(f, second.instruction, "second pool");
  const crossed: Instruction = {
    ...ix,
    accounts: ix.accounts!.map((a, i) => (i === 0 ? { ...a, address: second.pool } : a)),
  };
  await refused(f, crossed, "InvalidLenderAccount", [second.pool]);
});

Deno.test("pool: overflow and underflow are refused on every balance", async () => {
  const f = await fixture({ maxDeposit: U64_MAX, funds: [U64_MAX, 100n] });
  const setU64 = (at: Address, offset: number, value: bigint) =>
    f.t.patch(at, (d) => new DataView(d.buffer).setBigUint64(offset, value, true));
  // pool.totalDeposited: a pool whose collateral was extracted and deposited again can pass
  // 2^64 - 1 in total even though no mint's supply can.
  setU64(f.pool, POOL_OFFSETS.totalDeposited, U64_MAX - 10n);
  await refused(f, deposit(f, 1, 11n), "Overflow");
  setU64(f.pool, POOL_OFFSETS.totalDeposited, 0n);
  // lender.deposited.
  setU64(f.lenders[1].lender, LENDER_OFFSETS.deposited, U64_MAX - 10n);
  await refused(f, deposit(f, 1, 11n), "Overflow");
  setU64(f.lenders[1].lender, LENDER_OFFSETS.deposited, 0n);
  await ok(f, deposit(f, 0, U64_MAX - 1000n), "deposit near 2^64");
  await ok(f, deposit(f, 1, 100n), "deposit");
  // pool.totalExtracted.
  const destination = await f.t.createTokenAccount(f.collateralMint, f.authority.address, 0n);
  setU64(f.pool, POOL_OFFSETS.totalExtracted, U64_MAX);
  await refused(
    f,
    poolExtractInstruction({
      programId: f.t.programId,
      pool: f.pool,
      authority: f.authority,
      destination,
      amount: 1n,
    }),
    "Overflow",
    [destination],
  );
  setU64(f.pool, POOL_OFFSETS.totalExtracted, 0n);
  // Claims of lenders with deposits near 2^64: the product needs 128 bits.
  await ok(f, freeze(f), "freeze");
  fundRewards(f, U64_MAX - 5n);
  await ok(f, claimable(f, U64_MAX - 5n), "claimable near 2^64");
  await ok(f, claim(f, 0), "claim 0");
  await ok(f, claim(f, 1), "claim 1");
  const pool = decodePoolAccount(f.t.accountBytes(f.pool)!);
  assert.equal(
    f.t.tokenBalance(f.lenders[0].rewards),
    lenderOwed(U64_MAX - 1000n, U64_MAX - 5n, pool.totalDeposited),
  );
  assert.equal(
    f.t.tokenBalance(f.lenders[0].rewards) + f.t.tokenBalance(f.lenders[1].rewards) +
      f.t.tokenBalance(f.rewardsVault),
    U64_MAX - 5n,
  );
  // lender.claimed above what it is owed: owed - claimed would go below zero.
  setU64(f.lenders[1].lender, LENDER_OFFSETS.claimed, U64_MAX);
  await refused(f, claim(f, 1), "Underflow");
  // lender.claimed + pay past 2^64 - 1 (a lender whose share exceeds the pool's deposits).
  setU64(f.lenders[1].lender, LENDER_OFFSETS.claimed, 0n);
  setU64(f.lenders[1].lender, LENDER_OFFSETS.deposited, U64_MAX);
  await refused(f, claim(f, 1), "Overflow");
  // pool.totalClaimed + pay past the claimable total.
  setU64(f.lenders[1].lender, LENDER_OFFSETS.deposited, 100n);
  setU64(f.lenders[1].lender, LENDER_OFFSETS.claimed, 1n);
  setU64(f.pool, POOL_OFFSETS.totalClaimed, U64_MAX - 5n);
  await refused(f, claim(f, 1), "Overflow");
  setU64(f.pool, POOL_OFFSETS.totalClaimed, U64_MAX);
  await refused(f, claim(f, 1), "Overflow");
  // pool_claimable below what was already paid.
  setU64(f.pool, POOL_OFFSETS.totalClaimable, 0n);
  await refused(f, claimable(f, U64_MAX - 6n), "Underflow");
  // pool.lenders.
  setU64(f.pool, POOL_OFFSETS.lenders, U64_MAX);
  const late = await f.t.newSigner();
  const created = await lenderCreateInstruction({
    programId: f.t.programId,
    pool: f.pool,
    user: late,
  });
  await refused(f, created.instruction, "Overflow", [created.lender, late.address]);
});

Deno.test("pool: lender accounts are per pool and user, created once", async () => {
  const f = await fixture({ funds: [1n] });
  const l = f.lenders[0];
  assert.equal(
    await lenderAddress(f.t.programId, { pool: f.pool, user: l.user.address }),
    l.lender,
  );
  const lender = decodeLenderAccount(f.t.accountBytes(l.lender)!);
  assert.equal(lender.pool, f.pool);
  assert.equal(lender.user, l.user.address);
  assert.equal(f.t.accountBytes(l.lender)!.length, LENDER_BYTES);
  const again = await lenderCreateInstruction({
    programId: f.t.programId,
    pool: f.pool,
    user: l.user,
  });
  await refused(f, again.instruction, "AlreadyInitialized");
  assert.equal(decodePoolAccount(f.t.accountBytes(f.pool)!).lenders, 1n);
});

Deno.test("pool: random pools pay every lender exactly its floored share", async () => {
  // The 128-bit share against bigint arithmetic, for deposits and totals across the u64 range.
  let seed = 0x2026_1129;
  const next = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return BigInt(seed);
  };
  const big = (bits: number) => {
    let v = 0n;
    for (let i = 0; i < bits; i += 31) v = (v << 31n) | next();
    return v & ((1n << BigInt(bits)) - 1n);
  };
  for (let scenario = 0; scenario < 4; scenario++) {
    const bits = [16, 40, 62, 63][scenario];
    const deposits = Array.from({ length: 3 + scenario }, () => 1n + big(bits - 2));
    const f = await fixture({ maxDeposit: U64_MAX, funds: deposits });
    for (let i = 0; i < deposits.length; i++) await ok(f, deposit(f, i, deposits[i]), "deposit");
    const totalDeposited = deposits.reduce((a, b) => a + b, 0n);
    await ok(f, freeze(f), "freeze");
    const total = big(bits);
    fundRewards(f, total);
    await ok(f, claimable(f, total), "claimable");
    let paid = 0n;
    for (let i = 0; i < deposits.length; i++) {
      const owed = lenderOwed(deposits[i], total, totalDeposited);
      if (owed === 0n) {
        await refused(f, claim(f, i), "NothingToClaim");
      } else {
        await ok(f, claim(f, i), "claim");
      }
      assert.equal(
        f.t.tokenBalance(f.lenders[i].rewards),
        owed,
        `scenario ${scenario} lender ${i}`,
      );
      paid += owed;
    }
    assert.equal(paid + f.t.tokenBalance(f.rewardsVault), total);
    assert.ok(total - paid < BigInt(deposits.length));
  }
});
