/**
 * Malformed instructions against a live pool (lenders have deposited, rewards are claimable):
 * valid instructions of every kind with their data flipped, truncated, extended or retagged
 * (only bytes the TypeScript decoder rejects), or their account lists cut short, reordered,
 * given a wrong account, or stripped of a signature or a write permission. Each must be refused
 * with one of the pool's named errors and leave every account byte-identical.
 */
import assert from "node:assert/strict";
import { AccountRole, type Address, generateKeyPairSigner, type Instruction } from "@solana/kit";
import { Prng } from "../../../tests/support/coordinator_sim.ts";
import {
  collateralVaultAddress,
  decodePoolInstruction,
  lenderClaimInstruction,
  lenderCreateInstruction,
  lenderDepositInstruction,
  poolClaimableInstruction,
  poolCreateInstruction,
  poolErrorName,
  poolExtractInstruction,
  poolUpdateInstruction,
  rewardsVaultAddress,
  TOKEN_PROGRAM_ADDRESS,
} from "./mod.ts";
import { PoolSvm } from "../testing/pool_svm.ts";

type Meta = NonNullable<Instruction["accounts"]>[number];

const ROUNDS = 400;

Deno.test("fuzz: malformed pool instructions are refused by name, every account unchanged", async () => {
  const t = await PoolSvm.create();
  const authority = await t.newSigner();
  const collateralMint = await t.createMint();
  const rewardsMint = await t.createMint();
  const created = await poolCreateInstruction({
    programId: t.programId,
    authority,
    index: 1n,
    maxDeposit: 1_000_000n,
    collateralMint,
    rewardsMint,
  });
  assert.ok((await t.send([created.instruction])).ok);
  const pool = created.pool;
  const users = [await t.newSigner(), await t.newSigner()];
  const sources: Address[] = [];
  const rewards: Address[] = [];
  for (const user of users) {
    const { instruction } = await lenderCreateInstruction({ programId: t.programId, pool, user });
    assert.ok((await t.send([instruction])).ok);
    const source = await t.createTokenAccount(collateralMint, user.address, 1000n);
    sources.push(source);
    rewards.push(await t.createTokenAccount(rewardsMint, user.address, 0n));
    const r = await t.send([
      await lenderDepositInstruction({ programId: t.programId, pool, user, source, amount: 100n }),
    ]);
    assert.ok(r.ok, r.error ?? "");
  }
  assert.ok(
    (await t.send([
      poolUpdateInstruction({ programId: t.programId, pool, authority, frozen: true }),
    ])).ok,
  );
  const rewardsVault = await rewardsVaultAddress(t.programId, pool);
  t.patch(rewardsVault, (d) => new DataView(d.buffer).setBigUint64(64, 1000n, true));
  assert.ok(
    (await t.send([
      await poolClaimableInstruction({
        programId: t.programId,
        pool,
        authority,
        totalClaimable: 1000n,
      }),
    ])).ok,
  );
  const destination = await t.createTokenAccount(collateralMint, authority.address, 0n);
  const fresh = await generateKeyPairSigner();
  const freshPool = await poolCreateInstruction({
    programId: t.programId,
    authority,
    index: 2n,
    maxDeposit: 1n,
    collateralMint,
    rewardsMint,
  });
  // Valid instructions of every kind (PoolCreate of a new index, LenderCreate of a new user).
  const valid: Instruction[] = [
    freshPool.instruction,
    poolUpdateInstruction({ programId: t.programId, pool, authority, maxDeposit: 5n }),
    await poolExtractInstruction({
      programId: t.programId,
      pool,
      authority,
      destination,
      amount: 1n,
    }),
    await poolClaimableInstruction({
      programId: t.programId,
      pool,
      authority,
      totalClaimable: 1000n,
    }),
    (await lenderCreateInstruction({ programId: t.programId, pool, user: fresh })).instruction,
    await lenderDepositInstruction({
      programId: t.programId,
      pool,
      user: users[0],
      source: sources[0],
      amount: 1n,
    }),
    await lenderClaimInstruction({
      programId: t.programId,
      pool,
      user: users[0],
      destination: rewards[0],
    }),
  ];
  const accounts: Address[] = [
    pool,
    freshPool.pool,
    await collateralVaultAddress(t.programId, pool),
    rewardsVault,
    collateralMint,
    rewardsMint,
    destination,
    authority.address,
    fresh.address,
    ...users.map((u) => u.address),
    ...sources,
    ...rewards,
    ...valid.flatMap((ix) => ix.accounts!.map((a) => a.address)),
  ];
  const wrong: Address[] = [
    ...new Set([
      ...accounts,
      t.programId,
      TOKEN_PROGRAM_ADDRESS,
      (await generateKeyPairSigner()).address,
    ]),
  ];

  const rng = new Prng(20261129);
  const seen = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    const base = valid[rng.int(0, valid.length - 1)];
    const ix = mutate(rng, base, wrong);
    if (ix === null) continue;
    const before = t.snapshot(wrong);
    const r = await t.send([ix]);
    assert.ok(!r.ok, `round ${round}: a malformed instruction succeeded\n${r.logs.join("\n")}`);
    const name = r.code === null ? undefined : poolErrorName(r.code);
    assert.ok(
      name !== undefined,
      `round ${round}: not a named pool error: ${r.error}\n${r.logs.join("\n")}`,
    );
    seen.set(name, (seen.get(name) ?? 0) + 1);
    assert.deepEqual(t.snapshot(wrong), before, `round ${round}: ${name} changed an account`);
  }
  // The fuzz reached the decoder, the account checks and the signature checks.
  for (const name of ["InvalidInstruction", "NotEnoughAccounts", "MissingSignature"]) {
    assert.ok(seen.has(name), `${name} never seen: ${JSON.stringify([...seen])}`);
  }
});

/** A malformed copy of `ix`, or null when the mutation happened to leave it well-formed. */
function mutate(rng: Prng, ix: Instruction, wrong: Address[]): Instruction | null {
  // The program itself may be named read-only only (a transaction cannot write an invoked one).
  const invoked = ix.programAddress;
  const data = Uint8Array.from(ix.data!);
  const metas = [...ix.accounts!];
  switch (rng.int(0, 5)) {
    case 0: { // data: flip bits, retag, truncate or extend, kept only when the decoder refuses
      let out = data.slice();
      const how = rng.int(0, 3);
      if (how === 0) out[rng.int(0, out.length - 1)] ^= 1 << rng.int(0, 7);
      else if (how === 1) out[0] = rng.int(0, 255);
      else if (how === 2) out = out.subarray(0, rng.int(0, out.length - 1));
      else {out = Uint8Array.from([
          ...out,
          ...Array.from({ length: rng.int(1, 4) }, () => rng.int(0, 255)),
        ]);}
      try {
        decodePoolInstruction(out);
        return null;
      } catch {
        return { ...ix, data: out };
      }
    }
    case 1: // accounts cut short
      return { ...ix, accounts: metas.slice(0, rng.int(0, metas.length - 1)) };
    case 2: { // two accounts swapped
      const i = rng.int(0, metas.length - 1);
      const j = rng.int(0, metas.length - 1);
      if (metas[i].address === metas[j].address) return null;
      const writes = (m: Meta) =>
        m.role === AccountRole.WRITABLE || m.role === AccountRole.WRITABLE_SIGNER;
      if (
        (writes(metas[i]) || writes(metas[j])) &&
        [metas[i].address, metas[j].address].includes(invoked)
      ) {
        return null;
      }
      [metas[i], metas[j]] = [metas[j], metas[i]];
      return { ...ix, accounts: metas };
    }
    case 3: { // one account replaced by another (not a signer: we hold no other keys to sign)
      const i = rng.int(0, metas.length - 1);
      const to = wrong[rng.int(0, wrong.length - 1)];
      const writable = metas[i].role === AccountRole.WRITABLE ||
        metas[i].role === AccountRole.WRITABLE_SIGNER;
      if (to === metas[i].address || (writable && to === invoked)) return null;
      metas[i] = { address: to, role: writable ? AccountRole.WRITABLE : AccountRole.READONLY };
      return { ...ix, accounts: metas };
    }
    case 4: { // a signature taken away
      const i = metas.findIndex((m) => m.role === AccountRole.READONLY_SIGNER);
      if (i < 0) return null;
      metas[i] = { address: metas[i].address, role: AccountRole.READONLY } as Meta;
      return { ...ix, accounts: metas };
    }
    default: { // a write permission taken away
      const writable = metas.flatMap((m, i) => (m.role === AccountRole.WRITABLE ? [i] : []));
      if (writable.length === 0) return null;
      const i = writable[rng.int(0, writable.length - 1)];
      metas[i] = { ...metas[i], role: AccountRole.READONLY };
      return { ...ix, accounts: metas };
    }
  }
}
