/**
 * Malformed instructions against a live treasury (an epoch paid its clients, one has claimed):
 * valid instructions of every kind with their data retagged, truncated or extended (only bytes
 * the TypeScript decoder rejects), or their account lists cut short, reordered, given a wrong
 * account, or stripped of a signature or a write permission. Each must be refused with one of
 * the treasurer's named errors and leave every account byte-identical.
 */
import assert from "node:assert/strict";
import { AccountRole, type Address, generateKeyPairSigner, type Instruction } from "@solana/kit";
import { Prng } from "../../../tests/support/coordinator_sim.ts";
import {
  decodeTreasurerInstruction,
  participantClaimInstruction,
  participantCreateInstruction,
  TOKEN_PROGRAM_ADDRESS,
  tokenTransferInstruction,
  treasurerErrorName,
  treasuryCreateInstruction,
} from "./mod.ts";
import { TreasurerSvm } from "../testing/treasurer_svm.ts";
import { earningRun, playEpoch } from "../testing/epochs.ts";

type Meta = NonNullable<Instruction["accounts"]>[number];

const ROUNDS = 400;

Deno.test("fuzz: malformed treasurer instructions are refused by name, every account unchanged", async () => {
  const t = await TreasurerSvm.create();
  const e = await earningRun(t.coordinator, { clients: 2, earningRate: 100n });
  const mint = await t.createMint();
  const created = await treasuryCreateInstruction({
    programId: t.programId,
    authority: e.run.mainAuthority,
    coordinatorProgram: t.coordinatorProgramId,
    coordinator: e.run.coordinator,
    mint,
  });
  assert.ok((await t.send([created.instruction])).ok);
  const { treasury, vault } = created;
  const funder = await t.newSigner();
  const funds = await t.createTokenAccount(mint, funder.address, 1000n);
  assert.ok(
    (await t.send([
      tokenTransferInstruction({ source: funds, destination: vault, owner: funder, amount: 1000n }),
    ])).ok,
  );
  await playEpoch(e);
  const tokens: Address[] = [];
  const participants: Address[] = [];
  for (const user of e.clients) {
    const p = await participantCreateInstruction({ programId: t.programId, treasury, user });
    assert.ok((await t.send([p.instruction])).ok);
    participants.push(p.participant);
    tokens.push(await t.createTokenAccount(mint, user.address, 0n));
  }
  const claim = (i: number) =>
    participantClaimInstruction({
      programId: t.programId,
      treasury,
      coordinator: e.run.coordinator,
      user: e.clients[i],
      destination: tokens[i],
    });
  assert.ok((await t.send([await claim(0)])).ok, "client 0 claimed");
  const other = await earningRun(t.coordinator, { clients: 2, earningRate: 1n });
  const fresh = await t.newSigner();
  const freshTreasury = await treasuryCreateInstruction({
    programId: t.programId,
    authority: other.run.mainAuthority,
    coordinatorProgram: t.coordinatorProgramId,
    coordinator: other.run.coordinator,
    mint,
  });
  // Valid instructions of every kind (a second run's treasury, a new user's participant, and
  // the claim of the client that has not claimed yet).
  const valid: Instruction[] = [
    freshTreasury.instruction,
    (await participantCreateInstruction({ programId: t.programId, treasury, user: fresh }))
      .instruction,
    await claim(1),
  ];
  const accounts: Address[] = [
    treasury,
    vault,
    mint,
    funds,
    e.run.coordinator,
    other.run.coordinator,
    freshTreasury.treasury,
    freshTreasury.vault,
    fresh.address,
    ...e.clients.map((u) => u.address),
    ...participants,
    ...tokens,
    ...valid.flatMap((ix) => ix.accounts!.map((a) => a.address)),
  ];
  const wrong: Address[] = [
    ...new Set([
      ...accounts,
      t.programId,
      t.coordinatorProgramId,
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
    const name = r.code === null ? undefined : treasurerErrorName(r.code);
    assert.ok(
      name !== undefined,
      `round ${round}: not a named treasurer error: ${r.error}\n${r.logs.join("\n")}`,
    );
    seen.set(name, (seen.get(name) ?? 0) + 1);
    assert.deepEqual(t.snapshot(wrong), before, `round ${round}: ${name} changed an account`);
  }
  // The fuzz reached the decoder, the account checks and the signature checks.
  for (const name of ["InvalidInstruction", "NotEnoughAccounts", "MissingSignature"]) {
    assert.ok(seen.has(name), `${name} never seen: ${JSON.stringify([...seen])}`);
  }
  // The valid instructions still succeed: the fuzz changed nothing they depend on.
  for (const ix of valid) {
    const r = await t.send([ix]);
    assert.ok(r.ok, `${r.error}\n${r.logs.join("\n")}`);
  }
  assert.equal(t.tokenBalance(tokens[1]), 50n);
});

/** A malformed copy of `ix`, or null when the mutation happened to leave it well-formed. */
function mutate(rng: Prng, ix: Instruction, wrong: Address[]): Instruction | null {
  // The program itself may be named read-only only (a transaction cannot write an invoked one).
  const invoked = ix.programAddress;
  const data = Uint8Array.from(ix.data!);
  const metas = [...ix.accounts!];
  const writes = (m: Meta) =>
    m.role === AccountRole.WRITABLE || m.role === AccountRole.WRITABLE_SIGNER;
  switch (rng.int(0, 5)) {
    case 0: { // data: retag, truncate or extend, kept only when the decoder refuses
      let out = data.slice();
      const how = rng.int(0, 2);
      if (how === 0) out[0] = rng.int(0, 255);
      else if (how === 1) out = out.subarray(0, rng.int(0, out.length - 1));
      else {
        out = Uint8Array.from([
          ...out,
          ...Array.from({ length: rng.int(1, 4) }, () => rng.int(0, 255)),
        ]);
      }
      try {
        decodeTreasurerInstruction(out);
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
      const writable = writes(metas[i]);
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
