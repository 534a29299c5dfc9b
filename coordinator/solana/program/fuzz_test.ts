/**
 * Malformed instruction data: valid encodings of every instruction with random bytes
 * flipped, truncated or extended are sent to the program on a live run. When the
 * TypeScript decoder still accepts the bytes, the program and the reference model must
 * agree on the decoded instruction (DualRun); when it rejects them, the program must
 * reject them too and leave the account byte-for-byte unchanged.
 */

import assert from "node:assert/strict";
import { AccountRole, type KeyPairSigner } from "@solana/kit";
import { Prng } from "../../../tests/support/coordinator_sim.ts";
import {
  testConfig,
  testModel,
  warmupReport,
  witnessReport,
} from "../../../tests/support/coordinator_fixtures.ts";
import { CoordinatorSvm } from "../testing/svm.ts";
import { clientIndex, DualRun, keyOf } from "../testing/dual_run.ts";
import { currentRound, NO_DIGEST, roundSelection, stageSeats } from "../../core/mod.ts";
import {
  type CoordinatorInstruction,
  decodeCoordinatorInstruction,
  encodeCoordinatorInstruction,
} from "../abi/mod.ts";

/** The parameter digest reports carry. */
const DIGEST = NO_DIGEST;

function mutate(rng: Prng, bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  switch (rng.int(0, 3)) {
    case 0:
      for (let i = rng.int(1, 3); i > 0; i--) out[rng.int(0, out.length - 1)] ^= 1 << rng.int(0, 7);
      return out;
    case 1:
      out[rng.int(0, Math.min(out.length - 1, 12))] = rng.int(0, 255);
      return out;
    case 2:
      return out.subarray(0, rng.int(0, out.length - 1));
    default:
      return Uint8Array.from([
        ...out,
        ...Array.from({ length: rng.int(1, 4) }, () => rng.int(0, 255)),
      ]);
  }
}

Deno.test("fuzz: mutated instruction data is rejected cleanly or handled like the model", async () => {
  const svm = await CoordinatorSvm.create();
  const run = await DualRun.create({ svm, permissionless: true });
  await run.expectOk({
    kind: "Update",
    config: testConfig({ initMinClients: 3, verificationPercent: 100 }),
    model: testModel(),
  }, run.mainAuthority);
  run.setTime(1);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  const clients: KeyPairSigner[] = [];
  for (let i = 0; i < 3; i++) clients.push(await svm.newSigner());
  run.setTime(5);
  for (const c of clients) await run.expectOk({ kind: "JoinRun", p2pIdentity: keyOf(c) }, c);
  for (const c of clients) {
    await run.expectOk({
      kind: "WarmupWitness",
      witness: warmupReport(run.model!.state, clientIndex(run, c)),
      paramsDigest: DIGEST,
    }, c);
  }
  assert.equal(run.model!.state.runState, "RoundTrain");
  // Round 0 ends; round 1's start samples it, so verification tasks are open.
  const round0 = run.model!.state;
  for (const i of roundSelection(round0.config, currentRound(round0)).witnessIndices()) {
    const sender = clients.find((c) => clientIndex(run, c) === i)!;
    await run.expectOk({
      kind: "Witness",
      witness: witnessReport(run.model!.state, i, []),
      paramsDigest: DIGEST,
    }, sender);
  }
  run.setTime(5 + round0.config.roundWitnessTime);
  await run.expectOk({ kind: "Tick" }, null);
  assert.equal(run.model!.state.runState, "RoundTrain");
  const state = run.model!.state;
  const [task] = state.epochState.verificationTasks;
  assert.ok(task !== undefined, "round 1's start opened verification tasks");
  const seat = stageSeats(task)[0].verifier;
  const verifier = clients.find((c) => clientIndex(run, c) === seat)!;
  const w = roundSelection(state.config, currentRound(state)).witnessIndices()[0];
  const witnessSender = clients.find((c) => clientIndex(run, c) === w)!;
  const samples: [CoordinatorInstruction, KeyPairSigner][] = [
    [
      { kind: "Witness", witness: witnessReport(state, w, []), paramsDigest: DIGEST },
      witnessSender,
    ],
    [
      { kind: "Update", metadata: { name: "n", description: "d", numParameters: 1, vocabSize: 2 } },
      run.mainAuthority,
    ],
    [{
      kind: "Update",
      meetingAddresses: [
        { kind: "Relay", address: "/ip4/203.0.113.7/tcp/4001/p2p/12D3KooWabc" },
        { kind: "Bootstrap", address: "/dns4/a.example/tcp/1/p2p/Qm1" },
      ],
    }, run.mainAuthority],
    [{ kind: "JoinRun", p2pIdentity: new Uint8Array(32) }, clients[0]],
    [{ kind: "SetPaused", paused: true }, run.mainAuthority],
    [{
      kind: "Checkpoint",
      index: 0,
      repo: { kind: "Hub", repo: { repoId: "a/b", revision: "c" } },
    }, clients[0]],
    [{
      kind: "HealthCheck",
      checks: [{
        signer: keyOf(clients[0]),
        proof: { committee: "Trainer", position: 0, index: 0 },
      }],
    }, clients[0]],
    [{ kind: "GrantAuthorizer", authorizer: keyOf(clients[1]) }, run.joinAuthority],
    [{
      kind: "VerificationReport",
      report: {
        height: task.height,
        trainer: task.trainer,
        verdict: "Fail",
        evidence: "ResultMismatch",
        detail: 500_000,
      },
    }, verifier],
    [{ kind: "SetDelegates", clear: false, delegates: [keyOf(clients[0])] }, clients[1]],
    [{
      kind: "SetFutureEpochRates",
      earningRateTotalShared: 1_000_000n,
      slashingRatePerClient: 5n,
    }, run.mainAuthority],
    // The deposit's instructions without their token accounts (the deposit is off).
    [{ kind: "SetJoinDeposit", amount: 1_000n }, run.mainAuthority],
    [{ kind: "WithdrawDeposit" }, clients[0]],
    [{ kind: "SweepForfeited" }, run.mainAuthority],
  ];
  const rng = new Prng(42);
  let decoded = 0;
  let rejected = 0;
  for (let i = 0; i < 240; i++) {
    const [ix, signer] = samples[rng.int(0, samples.length - 1)];
    const data = mutate(rng, encodeCoordinatorInstruction(ix));
    let parsed: CoordinatorInstruction | null = null;
    try {
      parsed = decodeCoordinatorInstruction(data);
    } catch {
      parsed = null;
    }
    if (parsed !== null && parsed.kind !== "InitCoordinator" && parsed.kind !== "FreeCoordinator") {
      decoded++;
      await run.send(parsed, signer);
      continue;
    }
    rejected++;
    const before = svm.accountBytes(run.coordinator)!;
    const result = await svm.sendRaw([{
      programAddress: svm.programId,
      accounts: [
        { address: run.coordinator, role: AccountRole.WRITABLE },
        { address: signer.address, role: AccountRole.READONLY_SIGNER, signer } as never,
      ],
      data,
    }]);
    assert.equal(result.ok, false, `accepted bytes the decoder rejects: ${[...data]}`);
    assert.ok(result.code !== null, result.error ?? "");
    assert.deepEqual(svm.accountBytes(run.coordinator), before);
  }
  assert.ok(decoded > 20 && rejected > 20, `decoded ${decoded}, rejected ${rejected}`);
});
