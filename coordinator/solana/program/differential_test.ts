/**
 * Differential tests: random instruction sequences (joins, ticks at various times,
 * warmup witnesses, witnesses, health checks, verification reports, pauses and resumes,
 * checkpoints, meeting addresses, future epoch rates, forged and misdirected reports; with a join
 * deposit, deposit joins, withdrawals and sweeps) go to the C program in litesvm and to the
 * TypeScript reference (program_model.ts over coordinator/machine*.ts). After every instruction
 * both must have accepted or rejected it with the same error code, and the account must decode
 * to exactly the reference state. Seeds are fixed so a failure replays.
 */

import assert from "node:assert/strict";
import type { KeyPairSigner } from "@solana/kit";
import {
  testConfig,
  testModel,
  warmupReport,
  witnessReport,
} from "../../../tests/support/coordinator_fixtures.ts";
import { Prng } from "../../../tests/support/coordinator_sim.ts";
import { differential, ids } from "../testing/random_sequences.ts";
import { verificationScenario } from "../testing/verification_run.ts";
import { CoordinatorSvm } from "../testing/svm.ts";
import { DualRun, keyOf } from "../testing/dual_run.ts";
import {
  currentRound,
  isHealthy,
  previousRound,
  roundClients,
  roundSelection,
} from "../../core/mod.ts";

/** The parameter digest reports carry. */
const DIGEST = new Uint8Array(32).fill(0xd1);

const svm = await CoordinatorSvm.create();

Deno.test("differential: random sequences reach identical states in C and TypeScript", async () => {
  const total: Record<string, number> = {};
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) {
    const seen = await differential(svm, seed, 260);
    for (const [k, v] of Object.entries(seen)) total[k] = (total[k] ?? 0) + v;
  }
  // The sequences must actually exercise the machine, not just bounce off errors.
  for (
    const key of [
      "Witness:ok",
      "WarmupWitness:ok",
      "HealthCheck:ok",
      "Checkpoint:ok",
      "Checkpoint:WrongRunState",
      "Checkpoint:InvalidCheckpoint",
      "JoinRun:ok",
      "state:RoundTrain",
      "state:RoundWitness",
      "state:Cooldown",
      "state:Paused",
      "Witness:InvalidCommitteeProof",
      "CooldownWitness:ok",
      "CooldownWitness:InvalidWitness",
      "digest:recorded",
      "VerificationReport:ok",
      "VerificationReport:InvalidVerification",
      "VerificationReport:WrongRunState",
      "verification:task",
      "verification:rejected",
      "ejection:IdleVerifier",
      "ejection:barClamped",
      "meeting:set",
      "Update:InvalidMeetingAddress",
      "Update:NotMainAuthority",
      "SetFutureEpochRates:ok",
      "SetFutureEpochRates:NotMainAuthority",
      "earned:paid",
      "slashed:applied",
    ]
  ) {
    assert.ok((total[key] ?? 0) > 0, `never saw ${key}: ${JSON.stringify(total)}`);
    if (Deno.env.get("S1_DEBUG")) console.log(JSON.stringify(total));
  }
});

Deno.test("differential: random sequences with a join deposit keep the vault whole", async () => {
  const total: Record<string, number> = {};
  for (const seed of [21, 22, 23, 24, 25, 26]) {
    const seen = await differential(svm, seed, 260, { deposit: true });
    for (const [k, v] of Object.entries(seen)) total[k] = (total[k] ?? 0) + v;
  }
  if (Deno.env.get("S1_DEBUG")) console.log(JSON.stringify(total));
  for (
    const key of [
      "JoinRun:ok",
      "JoinRun:DepositRequired",
      "JoinRun:InsufficientDeposit",
      "WithdrawDeposit:ok",
      "WithdrawDeposit:NoDeposit",
      "WithdrawDeposit:DepositLocked",
      "WithdrawDeposit:NotEnoughAccounts",
      "SweepForfeited:ok",
      "SweepForfeited:NotMainAuthority",
      "deposit:forfeited",
      "SetJoinDeposit:ok",
      "HealthCheck:ok",
      "state:Cooldown",
      "earned:paid",
    ]
  ) {
    assert.ok((total[key] ?? 0) > 0, `never saw ${key}: ${JSON.stringify(total)}`);
  }
});

Deno.test("differential: verification samples, seats, decides, breaks ties, ejects and bars", async () => {
  const total: Record<string, number> = {};
  // The last seed runs long enough to fill the 32 ejection records and drop the oldest.
  for (const [seed, epochs] of [[11, 4], [12, 4], [13, 9]]) {
    const seen = await verificationScenario(svm, seed, { epochs });
    for (const [k, v] of Object.entries(seen)) total[k] = (total[k] ?? 0) + v;
  }
  if (Deno.env.get("S1_DEBUG")) console.log(JSON.stringify(total));
  for (
    const key of [
      "epoch:started",
      "verification:task",
      "VerificationReport:ok",
      "VerificationReport:InvalidVerification",
      "verification:tieBreak",
      "verification:rejected",
      "ejection:FailedVerification",
      "ejection:FalseAccusation",
      "ejection:FalseVouch",
      "ejection:IdleVerifier",
      "bar:keptOut",
      "bar:readmitted",
      "bar:servedByWait",
      "ejection:oldestDropped",
      "earned:paid",
      "earned:ejectedUnpaid",
      "slashed:ejected",
    ]
  ) {
    assert.ok((total[key] ?? 0) > 0, `never saw ${key}: ${JSON.stringify(total)}`);
  }
  assert.equal(total["bar:broken"], undefined, "a barred signer joined an epoch");
  assert.equal(total["earned:ejectedPaid"], undefined, "an ejected client earned points");
  assert.ok(total["epoch:started"] >= 14, `only ${total["epoch:started"]} epochs started`);
});

Deno.test("differential at scale: 40 clients, drops every round, historical indices", async () => {
  const rng = new Prng(99);
  const run = await DualRun.create({ svm, runId: "diff-scale" });
  await run.expectOk({
    kind: "Update",
    config: testConfig({
      maxClients: 64,
      minClients: 8,
      initMinClients: 40,
      witnessNodes: 0,
      globalBatchSizeStart: 40,
      globalBatchSizeEnd: 64,
      globalBatchSizeWarmupTokens: 4000,
      epochTime: 200,
      totalSteps: 50,
    }),
    model: testModel(),
  }, run.mainAuthority);
  let now = 5;
  run.setTime(now);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  const clients: KeyPairSigner[] = [];
  for (let i = 0; i < 40; i++) clients.push(await svm.newSigner());
  run.setTime(now += 2);
  for (const c of clients) await run.expectOk({ kind: "JoinRun", p2pIdentity: keyOf(c) }, c);
  assert.equal(run.model!.state.runState, "Warmup");
  const signerOf = (i: number) => {
    const key = run.model!.state.epochState.clients[i].id.signer;
    return clients.find((c) => keyOf(c).every((b, k) => b === key[k]))!;
  };
  for (let i = 0; run.model!.state.runState === "Warmup"; i++) {
    await run.expectOk(
      { kind: "WarmupWitness", witness: warmupReport(run.model!.state, i), paramsDigest: DIGEST },
      signerOf(i),
    );
  }
  let drops = 0;
  let rounds = 0;
  for (let round = 0; round < 7 && run.model!.state.runState === "RoundTrain"; round++) {
    rounds++;
    const state = run.model!.state;
    // Every round a few more clients go unseen by the witnesses.
    const seen = ids(clients).filter(() => rng.int(0, 9) > 1);
    for (const i of roundSelection(state.config, currentRound(state)).witnessIndices()) {
      await run.send(
        {
          kind: "Witness",
          witness: witnessReport(run.model!.state, i, seen),
          paramsDigest: DIGEST,
        },
        signerOf(i),
      );
    }
    const prev = previousRound(run.model!.state);
    if (prev !== null && currentRound(run.model!.state).height >= 2) {
      const s = run.model!.state;
      const sel = roundSelection(s.config, prev);
      const unhealthy = roundClients(s, prev.height)
        .map((c, i) => ({ signer: c.id.signer, proof: sel.committeeProof(i) }))
        .filter((c) => !isHealthy(s, { signer: c.signer, p2pIdentity: c.signer }, c.proof));
      const reporter = signerOf(0);
      for (let k = 0; k < unhealthy.length; k += 6) {
        const r = await run.send(
          { kind: "HealthCheck", checks: unhealthy.slice(k, k + 6) },
          reporter,
          { computeUnitLimit: 1_400_000 },
        );
        if (r.ok) drops++;
      }
    }
    run.setTime(now += 8);
    await run.send({ kind: "Tick" }, null);
    run.setTime(now += 1);
    await run.send({ kind: "Tick" }, null);
  }
  if (Deno.env.get("S1_DEBUG")) {
    console.log({ rounds, drops, exited: run.model!.state.epochState.exitedClients.length });
  }
  assert.ok(rounds >= 4, `only ${rounds} rounds ran`);
  assert.ok(drops > 0, "health checks dropped clients");
  assert.ok(run.model!.state.epochState.exitedClients.length > 0, "dropped clients left");
});
