/**
 * Compute units of every mining pool instruction, measured in litesvm over whole cycles (create,
 * lenders, deposits, freeze, extract, claimable, claims) of several pools: the PDA searches of
 * pool_create and lender_create cost more or less with the bump each address happens to need, so
 * each instruction reports its range. `deno run -A coordinator/solana/testing/pool_compute_units.ts`
 * prints the table docs/benchmarks.md shows.
 *
 * @module
 */
import type { Instruction } from "@solana/kit";
import {
  lenderClaimInstruction,
  lenderCreateInstruction,
  lenderDepositInstruction,
  poolClaimableInstruction,
  poolCreateInstruction,
  poolExtractInstruction,
  type PoolInstruction,
  poolUpdateInstruction,
  rewardsVaultAddress,
} from "../pool/mod.ts";
import { PoolSvm } from "./pool_svm.ts";

/** The lowest and highest compute units an instruction took. */
export interface UnitsRange {
  min: number;
  max: number;
}

/** Compute units per instruction kind. */
export type PoolComputeUnits = Record<PoolInstruction["kind"], UnitsRange>;

/** Runs `pools` cycles of `lenders` lenders each and returns each instruction's range. */
export async function measurePoolComputeUnits(
  opts: { pools?: number; lenders?: number } = {},
): Promise<PoolComputeUnits> {
  const t = await PoolSvm.create();
  const out: Partial<PoolComputeUnits> = {};
  const record = async (kind: PoolInstruction["kind"], ix: Instruction) => {
    const r = await t.send([ix]);
    if (!r.ok) throw new Error(`${kind} failed: ${r.error}\n${r.logs.join("\n")}`);
    const range = out[kind] ?? { min: Infinity, max: 0 };
    out[kind] = {
      min: Math.min(range.min, r.computeUnits),
      max: Math.max(range.max, r.computeUnits),
    };
  };
  const collateralMint = await t.createMint();
  const rewardsMint = await t.createMint();
  for (let p = 0; p < (opts.pools ?? 8); p++) {
    const authority = await t.newSigner();
    const { pool, instruction } = await poolCreateInstruction({
      programId: t.programId,
      authority,
      index: BigInt(p),
      maxDeposit: 1_000_000_000n,
      collateralMint,
      rewardsMint,
    });
    await record("PoolCreate", instruction);
    const lenders = [];
    for (let i = 0; i < (opts.lenders ?? 4); i++) {
      const user = await t.newSigner();
      const created = await lenderCreateInstruction({ programId: t.programId, pool, user });
      await record("LenderCreate", created.instruction);
      const source = await t.createTokenAccount(collateralMint, user.address, 1_000_000n);
      await record(
        "LenderDeposit",
        await lenderDepositInstruction({
          programId: t.programId,
          pool,
          user,
          source,
          amount: 1000n + BigInt(i),
        }),
      );
      lenders.push({ user, rewards: await t.createTokenAccount(rewardsMint, user.address, 0n) });
    }
    await record(
      "PoolUpdate",
      poolUpdateInstruction({ programId: t.programId, pool, authority, frozen: true }),
    );
    const destination = await t.createTokenAccount(collateralMint, authority.address, 0n);
    await record(
      "PoolExtract",
      await poolExtractInstruction({
        programId: t.programId,
        pool,
        authority,
        destination,
        amount: 100n,
      }),
    );
    const vault = await rewardsVaultAddress(t.programId, pool);
    t.patch(vault, (d) => new DataView(d.buffer).setBigUint64(64, 999_999_937n, true));
    await record(
      "PoolClaimable",
      await poolClaimableInstruction({
        programId: t.programId,
        pool,
        authority,
        totalClaimable: 999_999_937n,
      }),
    );
    for (const l of lenders) {
      await record(
        "LenderClaim",
        await lenderClaimInstruction({
          programId: t.programId,
          pool,
          user: l.user,
          destination: l.rewards,
        }),
      );
    }
  }
  return out as PoolComputeUnits;
}

if (import.meta.main) {
  const units = await measurePoolComputeUnits({ pools: 16 });
  const fmt = (n: number) => n.toLocaleString("en-US");
  console.log("| instruction | compute units |\n| --- | ---: |");
  for (const [kind, r] of Object.entries(units)) {
    console.log(`| ${kind} | ${r.min === r.max ? fmt(r.min) : `${fmt(r.min)} - ${fmt(r.max)}`} |`);
  }
}
