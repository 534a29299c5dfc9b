/**
 * Compute units of every treasurer instruction, measured in litesvm beside the coordinator
 * program: treasury_create and participant_create over several runs and users (their PDA searches
 * cost more or less with the bump each address needs, so each reports its range), claims after a
 * trained epoch, and the costliest claim: a claimer whose registration is the last of a full
 * registry of 256. `deno run -A coordinator/solana/testing/treasurer_compute_units.ts` prints the
 * table docs/benchmarks.md shows.
 *
 * @module
 */
import type { Instruction } from "@solana/kit";
import {
  participantClaimInstruction,
  participantCreateInstruction,
  tokenTransferInstruction,
  type TreasurerInstruction,
  treasuryCreateInstruction,
} from "../treasurer/mod.ts";
import { OFFSETS, structLayout } from "../abi/mod.ts";
import { addressBytes } from "./svm.ts";
import { earningRun, playEpoch } from "./epochs.ts";
import { TreasurerSvm } from "./treasurer_svm.ts";

/** The lowest and highest compute units an instruction took. */
export interface UnitsRange {
  min: number;
  max: number;
}

/** Compute units per instruction kind, and the claim of the registry's last slot of 256. */
export type TreasurerComputeUnits = Record<TreasurerInstruction["kind"], UnitsRange> & {
  ParticipantClaimSlot255: number;
};

/** Measures `runs` runs of `clients` clients each (one trained epoch, then every claim). */
export async function measureTreasurerComputeUnits(
  opts: { runs?: number; clients?: number } = {},
): Promise<TreasurerComputeUnits> {
  const t = await TreasurerSvm.create();
  const out: Partial<Record<TreasurerInstruction["kind"], UnitsRange>> = {};
  const record = async (kind: TreasurerInstruction["kind"], ix: Instruction) => {
    const r = await t.send([ix]);
    if (!r.ok) throw new Error(`${kind} failed: ${r.error}\n${r.logs.join("\n")}`);
    const range = out[kind] ?? { min: Infinity, max: 0 };
    out[kind] = {
      min: Math.min(range.min, r.computeUnits),
      max: Math.max(range.max, r.computeUnits),
    };
    return r.computeUnits;
  };
  const mint = await t.createMint();
  let slot255 = 0;
  for (let run = 0; run < (opts.runs ?? 4); run++) {
    const e = await earningRun(t.coordinator, { clients: opts.clients ?? 3, earningRate: 999n });
    const { treasury, vault, instruction } = await treasuryCreateInstruction({
      programId: t.programId,
      authority: e.run.mainAuthority,
      coordinatorProgram: t.coordinatorProgramId,
      coordinator: e.run.coordinator,
      mint,
    });
    await record("TreasuryCreate", instruction);
    const funder = await t.newSigner();
    const funds = await t.createTokenAccount(mint, funder.address, 1_000_000n);
    const topUp = tokenTransferInstruction({
      source: funds,
      destination: vault,
      owner: funder,
      amount: 1_000_000n,
    });
    if (!(await t.send([topUp])).ok) throw new Error("top-up failed");
    await playEpoch(e);
    const last = await t.newSigner();
    for (const user of [...e.clients, last]) {
      const created = await participantCreateInstruction({
        programId: t.programId,
        treasury,
        user,
      });
      await record("ParticipantCreate", created.instruction);
    }
    const claim = async (user: typeof last) =>
      participantClaimInstruction({
        programId: t.programId,
        treasury,
        coordinator: e.run.coordinator,
        user,
        destination: await t.createTokenAccount(mint, user.address, 0n),
      });
    for (const user of e.clients) await record("ParticipantClaim", await claim(user));
    // The claimer searched for longest: its registration is slot 255 of 256.
    const registration = structLayout("registration_t");
    t.patch(e.run.coordinator, (d, v) => {
      v.setUint16(OFFSETS.registryLen, 256, true);
      d.set(addressBytes(last.address), OFFSETS.registry + 255 * registration.size);
      v.setBigUint64(OFFSETS.earned + 8 * 255, 5n, true);
    });
    const r = await t.send([await claim(last)]);
    if (!r.ok) throw new Error(`the slot-255 claim failed: ${r.error}\n${r.logs.join("\n")}`);
    slot255 = Math.max(slot255, r.computeUnits);
  }
  return {
    ...(out as Record<TreasurerInstruction["kind"], UnitsRange>),
    ParticipantClaimSlot255: slot255,
  };
}

if (import.meta.main) {
  const units = await measureTreasurerComputeUnits({ runs: 16 });
  const fmt = (n: number) => n.toLocaleString("en-US");
  console.log("| instruction | compute units |\n| --- | ---: |");
  for (const [kind, r] of Object.entries(units)) {
    const text = typeof r === "number"
      ? fmt(r)
      : r.min === r.max
      ? fmt(r.min)
      : `${fmt(r.min)} - ${fmt(r.max)}`;
    console.log(`| ${kind} | ${text} |`);
  }
}
