/**
 * Malformed instructions against a live pool (lenders have deposited, rewards are claimable):
 * valid instructions of every kind with their data flipped, truncated, extended or retagged
 * (only bytes the TypeScript decoder rejects), or their account lists cut short, reordered,
 * given a wrong account, or stripped of a signature or a write permission. Each must be refused
 * with one of the pool's named errors and leave every account byte-identical.
 */
import assert from "node:assert/strict";
import { type Address, generateKeyPairSigner, type Instruction } from "@solana/kit";
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
import { fuzzMalformedInstructions } from "../testing/malformed_instructions.ts";

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

  await fuzzMalformedInstructions({
    svm: t,
    program: "pool",
    valid,
    wrong,
    rounds: ROUNDS,
    seed: 20261129,
    dataMutations: ["flip", "retag", "truncate", "extend"],
    decode: decodePoolInstruction,
    errorName: poolErrorName,
  });
});
