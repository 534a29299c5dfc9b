/**
 * Malformed instructions against a live treasury (an epoch paid its clients, one has claimed):
 * valid instructions of every kind with their data retagged, truncated or extended (only bytes
 * the TypeScript decoder rejects), or their account lists cut short, reordered, given a wrong
 * account, or stripped of a signature or a write permission. Each must be refused with one of
 * the treasurer's named errors and leave every account byte-identical.
 */
import assert from "node:assert/strict";
import { type Address, generateKeyPairSigner, type Instruction } from "@solana/kit";
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
import { fuzzMalformedInstructions } from "../testing/malformed_instructions.ts";
import { earningRun, playEpoch } from "../testing/epochs.ts";

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

  await fuzzMalformedInstructions({
    svm: t,
    program: "treasurer",
    valid,
    wrong,
    rounds: ROUNDS,
    seed: 20261129,
    dataMutations: ["retag", "truncate", "extend"],
    decode: decodeTreasurerInstruction,
    errorName: treasurerErrorName,
  });
  // The valid instructions still succeed: the fuzz changed nothing they depend on.
  for (const ix of valid) {
    const r = await t.send([ix]);
    assert.ok(r.ok, `${r.error}\n${r.logs.join("\n")}`);
  }
  assert.equal(t.tokenBalance(tokens[1]), 50n);
});
