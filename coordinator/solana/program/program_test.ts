/**
 * The coordinator program in litesvm, instruction by instruction: success and failure
 * paths, authority checks, wrong accounts and malformed data. Every instruction sent
 * through DualRun is also applied to the TypeScript model, and the account must decode
 * to the model's state afterwards (so each test is also a small differential test).
 */

import assert from "node:assert/strict";
import { AccountRole, type KeyPairSigner } from "@solana/kit";
import {
  testConfig,
  testModel,
  warmupReport,
  witnessReport,
} from "../../../tests/support/coordinator_fixtures.ts";
import { CoordinatorSvm } from "../testing/svm.ts";
import { clientIndex, DualRun, keyOf } from "../testing/dual_run.ts";
import {
  type Checkpoint,
  CheckpointerSelection,
  currentRound,
  type LlmModel,
  NO_DIGEST,
  roundSelection,
  stageSeats,
  type VerificationReport,
} from "../../core/mod.ts";
import {
  ACCOUNT_SIZE,
  coordinatorAddress,
  createAccountWithSeedInstruction,
  encodeCoordinatorInstruction,
  INSTRUCTION_KINDS,
  OFFSETS,
  programErrorNumber,
  structLayout,
} from "../abi/mod.ts";

/** The parameter digest reports carry. */
const DIGEST = NO_DIGEST;

const svm = await CoordinatorSvm.create();
const P2P = new Uint8Array(32).fill(7);

async function configured(
  config = {},
  opts: { permissionless?: boolean; model?: Partial<LlmModel> } = {},
) {
  const { model, ...create } = opts;
  const run = await DualRun.create({ svm, ...create });
  await run.expectOk(
    { kind: "Update", config: testConfig(config), model: testModel(model) },
    run.mainAuthority,
  );
  return run;
}

/** A run in Warmup with `n` clients that joined at t = 10..; returns the clients. */
async function warmup(
  n = 3,
  config = {},
  model: Partial<LlmModel> = {},
): Promise<{ run: DualRun; clients: KeyPairSigner[] }> {
  const run = await configured({ initMinClients: n, minClients: Math.min(n, 2), ...config }, {
    model,
  });
  run.setTime(1);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  const clients: KeyPairSigner[] = [];
  run.setTime(10);
  for (let i = 0; i < n; i++) {
    const c = await svm.newSigner();
    clients.push(c);
    await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, c);
  }
  assert.equal(run.model!.state.runState, "Warmup");
  return { run, clients };
}

/** Warmup, then every client's warmup witness: the run is in RoundTrain at height 0. */
async function training(n = 3, config = {}, model: Partial<LlmModel> = {}) {
  const { run, clients } = await warmup(n, config, model);
  run.setTime(11);
  for (const c of clients) {
    const index = clientIndex(run, c);
    await run.expectOk(
      {
        kind: "WarmupWitness",
        witness: warmupReport(run.model!.state, index),
        paramsDigest: DIGEST,
      },
      c,
    );
  }
  assert.equal(run.model!.state.runState, "RoundTrain");
  return { run, clients };
}

function witnessesOf(run: DualRun, clients: KeyPairSigner[]): KeyPairSigner[] {
  const state = run.model!.state;
  const sel = roundSelection(state.config, currentRound(state));
  return clients.filter((c) => sel.isWitness(clientIndex(run, c)));
}

Deno.test("init_coordinator: creates an Uninitialized run at its seed address", async () => {
  const run = await DualRun.create({ svm, runId: "init-ok", permissionless: false });
  const account = svm.coordinatorAccount(run.coordinator);
  assert.equal(account.state.runState, "Uninitialized");
  assert.equal(account.state.runId, "init-ok");
  assert.equal(account.nonce, 1n);
  assert.equal(account.permissionless, false);
  assert.deepEqual(account.mainAuthority, keyOf(run.mainAuthority));
  assert.equal(svm.accountBytes(run.coordinator)!.length, ACCOUNT_SIZE);
});

Deno.test("init_coordinator: rejects re-init, a wrong address, a bad run id, no signature", async () => {
  const run = await DualRun.create({ svm, runId: "twice" });
  const again = await svm.send(run.coordinator, {
    kind: "InitCoordinator",
    runId: "twice",
    joinAuthority: keyOf(run.joinAuthority),
    permissionless: true,
  }, { signer: run.mainAuthority });
  assert.equal(again.code, programErrorNumber("AlreadyInitialized"));
  run.check();

  const main = await svm.newSigner();
  const made = await svm.createRun({
    runId: "other-id",
    mainAuthority: main,
    joinAuthority: main.address,
    permissionless: true,
  });
  assert.ok(made.result.ok);
  // A fresh account created under seed "x" but initialized as run "y".
  const fresh = await svm.newSigner();
  const wrong = await svm.createRunUninitialized({ seed: "x", mainAuthority: fresh });
  const res = await svm.send(wrong, {
    kind: "InitCoordinator",
    runId: "y",
    joinAuthority: keyOf(fresh),
    permissionless: true,
  }, { signer: fresh });
  assert.equal(res.code, programErrorNumber("WrongCoordinatorAddress"));
  const empty = await svm.send(wrong, {
    kind: "InitCoordinator",
    runId: "",
    joinAuthority: keyOf(fresh),
    permissionless: true,
  }, { signer: fresh });
  assert.equal(empty.code, programErrorNumber("InvalidRunId"));
  const unsigned = await svm.sendRaw([{
    programAddress: svm.programId,
    accounts: [
      { address: wrong, role: AccountRole.WRITABLE },
      { address: fresh.address, role: AccountRole.READONLY },
    ],
    data: encodeCoordinatorInstruction({
      kind: "InitCoordinator",
      runId: "x",
      joinAuthority: keyOf(fresh),
      permissionless: true,
    }),
  }]);
  assert.equal(unsigned.code, programErrorNumber("MissingSignature"));
  // An account of the wrong size at the right address.
  const small = await svm.newSigner();
  const smallAt = await coordinatorAddress({
    mainAuthority: small.address,
    runId: "small",
    programId: svm.programId,
  });
  const created = await svm.sendRaw([createAccountWithSeedInstruction({
    payer: svm.payer,
    base: small,
    target: smallAt,
    seed: "small",
    lamports: svm.svm.minimumBalanceForRentExemption(100n),
    owner: svm.programId,
    space: 100,
  })]);
  assert.ok(created.ok);
  const tooSmall = await svm.send(smallAt, {
    kind: "InitCoordinator",
    runId: "small",
    joinAuthority: keyOf(small),
    permissionless: true,
  }, { signer: small });
  assert.equal(tooSmall.code, programErrorNumber("InvalidCoordinatorAccount"));
  const ok = await svm.send(wrong, {
    kind: "InitCoordinator",
    runId: "x",
    joinAuthority: keyOf(fresh),
    permissionless: true,
  }, { signer: fresh });
  assert.ok(ok.ok, ok.logs.join("\n"));
});

Deno.test("instructions reject wrong coordinator accounts and malformed data", async () => {
  const run = await configured();
  const stranger = await svm.newSigner();
  // A system-owned account in place of the coordinator.
  const notOurs = await svm.send(stranger.address, { kind: "Tick" });
  assert.equal(notOurs.code, programErrorNumber("InvalidCoordinatorAccount"));
  const readOnly = await svm.sendRaw([{
    programAddress: svm.programId,
    accounts: [{ address: run.coordinator, role: AccountRole.READONLY }],
    data: Uint8Array.of(4),
  }]);
  assert.equal(readOnly.code, programErrorNumber("InvalidCoordinatorAccount"));
  const noAccounts = await svm.sendRaw([{ programAddress: svm.programId, data: Uint8Array.of(4) }]);
  assert.equal(noAccounts.code, programErrorNumber("NotEnoughAccounts"));
  for (
    const data of [new Uint8Array(0), Uint8Array.of(99), Uint8Array.of(4, 0), Uint8Array.of(2, 2)]
  ) {
    const res = await svm.sendRaw([{
      programAddress: svm.programId,
      accounts: [
        { address: run.coordinator, role: AccountRole.WRITABLE },
        {
          address: run.mainAuthority.address,
          role: AccountRole.READONLY_SIGNER,
          signer: run.mainAuthority,
        } as never,
      ],
      data,
    }]);
    assert.equal(res.code, programErrorNumber("InvalidInstruction"), `data ${[...data]}`);
  }
  run.check();
});

Deno.test("update: authority, halted-only, config/model/progress rules, metadata", async () => {
  const run = await DualRun.create({ svm });
  const other = await svm.newSigner();
  await run.expectError({ kind: "Update", config: testConfig() }, other, "NotMainAuthority");
  await run.expectError(
    { kind: "Update", config: testConfig({ warmupTime: 30, epochTime: 30 }) },
    run.mainAuthority,
    "InvalidConfig",
  );
  await run.expectError(
    { kind: "Update", config: testConfig({ maxClients: 300, minClients: 2 }) },
    run.mainAuthority,
    "InvalidConfig",
  );
  await run.expectError(
    { kind: "Update", config: testConfig({ initMinClients: 9, globalBatchSizeStart: 8 }) },
    run.mainAuthority,
    "InvalidConfig",
  );
  await run.expectError(
    { kind: "Update", model: testModel({ checkpoint: { kind: "Ephemeral" } }) },
    run.mainAuthority,
    "InvalidModel",
  );
  await run.expectError(
    { kind: "Update", model: testModel({ optimizer: { kind: "Dummy" } }) },
    run.mainAuthority,
    "InvalidModel",
  );
  await run.expectError(
    { kind: "Update", progress: { epoch: 0, step: 0, epochStartDataIndex: 0 } },
    run.mainAuthority,
    "InvalidProgress",
  );
  await run.expectOk({
    kind: "Update",
    metadata: {
      name: "Llama 20M",
      description: "a réseau test ✓",
      numParameters: 20_000_000,
      vocabSize: 32000,
    },
    config: testConfig(),
    model: testModel({
      dataLocation: {
        kind: "Http",
        location: {
          kind: "NumberedFiles",
          urlTemplate: "https://x/{}.ds",
          startIndex: 0,
          nLeftPadZeros: 3,
          numFiles: 9,
        },
        tokenSizeInBytes: "TwoBytes",
        shuffle: { kind: "Seeded", seed: new Uint8Array(32).fill(3) },
      },
      lrSchedule: {
        kind: "WarmupStableDecay",
        baseLr: 3e-4,
        warmupSteps: 10,
        warmupInitLr: 0,
        stableSteps: 100,
        cosineDecaySteps: 50,
        cosineDecayFinalLr: 1e-5,
        linearDecaySteps: 10,
        linearDecayFinalLr: 0,
      },
      optimizer: {
        kind: "Distro",
        clipGradNorm: 1,
        weightDecay: null,
        compressionDecay: 0.999,
        compressionTopk: 32,
        compressionChunk: 64,
        quantize1bit: true,
      },
    }),
    progress: { epoch: 2, step: 5, epochStartDataIndex: 96 },
  }, run.mainAuthority);
  assert.equal(svm.coordinatorAccount(run.coordinator).metadata.name, "Llama 20M");
  // Running: no config updates; metadata still allowed.
  run.setTime(5);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  await run.expectError({ kind: "Update", config: testConfig() }, run.mainAuthority, "NotHalted");
  await run.expectOk({
    kind: "Update",
    metadata: { name: "renamed", description: "", numParameters: 1, vocabSize: 2 },
  }, run.mainAuthority);
  // Paused: config may change but not maxClients; cold-start steps must fit the new config.
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  await run.expectError(
    { kind: "Update", config: testConfig({ maxClients: 128 }) },
    run.mainAuthority,
    "MaxClientsFixed",
  );
  await run.expectError(
    { kind: "Update", model: testModel({ coldStartWarmupSteps: 1000 }) },
    run.mainAuthority,
    "InvalidModel",
  );
  await run.expectOk({ kind: "Update", config: testConfig({ totalSteps: 5 }) }, run.mainAuthority);
  // Malformed metadata text is refused by the program itself.
  const bad = encodeCoordinatorInstruction({
    kind: "Update",
    metadata: { name: "ab", description: "", numParameters: 0, vocabSize: 0 },
  });
  bad[3] = 0xff;
  const res = await svm.sendRaw([{
    programAddress: svm.programId,
    accounts: [
      { address: run.coordinator, role: AccountRole.WRITABLE },
      {
        address: run.mainAuthority.address,
        role: AccountRole.READONLY_SIGNER,
        signer: run.mainAuthority,
      } as never,
    ],
    data: bad,
  }]);
  assert.equal(res.code, programErrorNumber("InvalidMetadata"));
  run.check();
});

Deno.test("update: the model's snapshot dtype is stored; a code other than f32/bf16 is refused", async () => {
  const run = await DualRun.create({ svm });
  await run.expectOk(
    { kind: "Update", config: testConfig(), model: testModel({ snapshotDtype: "bf16" }) },
    run.mainAuthority,
  );
  const account = svm.accountBytes(run.coordinator)!;
  assert.equal(account[OFFSETS.model + structLayout("model_t").offsets.snapshotDtype], 1);
  assert.equal(svm.coordinatorAccount(run.coordinator).state.model.snapshotDtype, "bf16");
  await run.expectOk({ kind: "Update", model: testModel() }, run.mainAuthority);
  assert.equal(svm.coordinatorAccount(run.coordinator).state.model.snapshotDtype, "f32");
  // The model part ends with the snapshot dtype: the instruction's last byte here.
  for (const code of [2, 0xff]) {
    const bad = encodeCoordinatorInstruction({
      kind: "Update",
      model: testModel({ snapshotDtype: "bf16" }),
    });
    bad[bad.length - 1] = code;
    const res = await svm.sendRaw([{
      programAddress: svm.programId,
      accounts: [
        { address: run.coordinator, role: AccountRole.WRITABLE },
        {
          address: run.mainAuthority.address,
          role: AccountRole.READONLY_SIGNER,
          signer: run.mainAuthority,
        } as never,
      ],
      data: bad,
    }]);
    assert.equal(res.code, programErrorNumber("InvalidModel"), `code ${code}`);
  }
  assert.equal(svm.coordinatorAccount(run.coordinator).state.model.snapshotDtype, "f32");
  run.check();
});

Deno.test("set_paused: validates before resuming; pause, resume, CannotResume, WrongRunState", async () => {
  const run = await DualRun.create({ svm });
  await run.expectError({ kind: "SetPaused", paused: false }, run.mainAuthority, "InvalidConfig");
  await run.expectError({ kind: "SetPaused", paused: true }, run.mainAuthority, "WrongRunState");
  await run.expectOk({ kind: "Update", config: testConfig() }, run.mainAuthority);
  await run.expectError({ kind: "SetPaused", paused: false }, run.mainAuthority, "InvalidModel");
  await run.expectOk({ kind: "Update", model: testModel() }, run.mainAuthority);
  await run.expectError(
    { kind: "SetPaused", paused: false },
    await svm.newSigner(),
    "NotMainAuthority",
  );
  run.setTime(100);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  assert.equal(run.model!.state.runState, "WaitingForMembers");
  await run.expectError({ kind: "SetPaused", paused: false }, run.mainAuthority, "CannotResume");
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  assert.equal(run.model!.state.runState, "Paused");
  await run.expectError({ kind: "Tick" }, null, "Halted");
  await run.expectError({ kind: "SetPaused", paused: true }, run.mainAuthority, "WrongRunState");
});

Deno.test("join_run: permissioned runs need the authorizer or a delegate", async () => {
  const run = await configured({}, { permissionless: false });
  const authorizer = await svm.newSigner();
  const delegate = await svm.newSigner();
  const outsider = await svm.newSigner();
  await run.expectError({ kind: "JoinRun", p2pIdentity: P2P }, outsider, "NotAuthorizedToJoin");
  await run.expectError(
    { kind: "GrantAuthorizer", authorizer: keyOf(authorizer) },
    run.mainAuthority,
    "NotJoinAuthority",
  );
  await run.expectError(
    { kind: "SetDelegates", clear: false, delegates: [keyOf(delegate)] },
    authorizer,
    "NotAuthorizer",
  );
  await run.expectOk({ kind: "GrantAuthorizer", authorizer: keyOf(authorizer) }, run.joinAuthority);
  await run.expectError(
    { kind: "SetDelegates", clear: false, delegates: [keyOf(delegate)] },
    outsider,
    "NotAuthorizer",
  );
  await run.expectOk(
    { kind: "SetDelegates", clear: false, delegates: [keyOf(delegate), keyOf(delegate)] },
    authorizer,
  );
  assert.equal(run.model!.delegates.length, 1);
  await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, authorizer);
  await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, delegate);
  await run.expectError({ kind: "JoinRun", p2pIdentity: P2P }, outsider, "NotAuthorizedToJoin");
  // A new authorizer clears the delegates.
  await run.expectOk({ kind: "GrantAuthorizer", authorizer: keyOf(outsider) }, run.joinAuthority);
  assert.equal(run.model!.delegates.length, 0);
  await run.expectError({ kind: "JoinRun", p2pIdentity: P2P }, delegate, "NotAuthorizedToJoin");
  await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, outsider);
  await run.expectOk({ kind: "JoinRun", p2pIdentity: new Uint8Array(32).fill(9) }, outsider);
  assert.equal(run.model!.registry.length, 3, "re-joining updates the registration");
  assert.deepEqual(run.model!.registry[2].p2pIdentity, new Uint8Array(32).fill(9));
});

Deno.test("join_run: no more pending clients than the batch has sequences", async () => {
  const run = await configured({ globalBatchSizeStart: 2, globalBatchSizeEnd: 2 });
  await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, await svm.newSigner());
  const second = await svm.newSigner();
  await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, second);
  await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, second);
  await run.expectError(
    { kind: "JoinRun", p2pIdentity: P2P },
    await svm.newSigner(),
    "MoreClientsThanBatches",
  );
});

Deno.test("tick: anyone, no signer; WaitingForMembers -> Warmup -> RoundTrain by time", async () => {
  const { run } = await warmup(2);
  assert.equal(run.model!.nextActive, 2n, "an epoch start makes everyone join again");
  run.setTime(20);
  await run.expectOk({ kind: "Tick" }, null);
  assert.equal(run.model!.state.runState, "Warmup");
  run.setTime(31);
  await run.expectOk({ kind: "Tick" }, null);
  assert.equal(run.model!.state.runState, "RoundTrain");
  run.setTime(36);
  await run.expectOk({ kind: "Tick" }, await svm.newSigner());
  assert.equal(run.model!.state.runState, "RoundWitness");
});

Deno.test("warmup_witness and witness: elected witnesses only, once each; blooms sized", async () => {
  const { run, clients } = await warmup(3);
  const outsider = await svm.newSigner();
  await run.expectError(
    { kind: "WarmupWitness", witness: warmupReport(run.model!.state, 0), paramsDigest: DIGEST },
    outsider,
    "InvalidWitness",
  );
  const first = clients[0];
  const idx = clientIndex(run, first);
  await run.expectOk(
    { kind: "WarmupWitness", witness: warmupReport(run.model!.state, idx), paramsDigest: DIGEST },
    first,
  );
  await run.expectError(
    { kind: "WarmupWitness", witness: warmupReport(run.model!.state, idx), paramsDigest: DIGEST },
    first,
    "DuplicateWitness",
  );
  for (const c of clients.slice(1)) {
    await run.expectOk(
      {
        kind: "WarmupWitness",
        witness: warmupReport(run.model!.state, clientIndex(run, c)),
        paramsDigest: DIGEST,
      },
      c,
    );
  }
  assert.equal(run.model!.state.runState, "RoundTrain");
  const state = run.model!.state;
  const [w] = witnessesOf(run, clients);
  const wi = clientIndex(run, w);
  const report = witnessReport(state, wi, []);
  const small = {
    ...report,
    participantBloom: {
      keys: report.participantBloom.keys.slice(1),
      bits: report.participantBloom.bits,
    },
  };
  await run.expectError(
    { kind: "Witness", witness: small, paramsDigest: DIGEST },
    w,
    "InvalidWitness",
  );
  const forged = {
    ...report,
    proof: { ...report.proof, position: (report.proof.position + 1) % 3 },
  };
  await run.expectError(
    { kind: "Witness", witness: forged, paramsDigest: DIGEST },
    w,
    "InvalidCommitteeProof",
  );
  const stolen = clients.find((c) => c !== w)!;
  await run.expectError(
    { kind: "Witness", witness: report, paramsDigest: DIGEST },
    stolen,
    "InvalidWitness",
  );
  await run.expectOk({ kind: "Witness", witness: report, paramsDigest: DIGEST }, w);
  await run.expectError(
    { kind: "Witness", witness: report, paramsDigest: DIGEST },
    w,
    "DuplicateWitness",
  );
  // A late warmup report once training started is accepted and ignored.
  const before = run.model!.state;
  await run.expectOk({
    kind: "WarmupWitness",
    witness: warmupReport(state, wi),
    paramsDigest: DIGEST,
  }, w);
  assert.deepEqual(run.model!.state, before);
});

Deno.test("health_check: witnesses drop trainers nobody saw; healthy ones are refused", async () => {
  const { run, clients } = await training(3, { witnessNodes: 0 });
  const everyone = clients.map((c) => ({ signer: keyOf(c), p2pIdentity: keyOf(c) }));
  const lazy = clients[2];
  let t = 11;
  // Rounds 0 and 1: every client witnesses; from round 1 on nobody reports seeing `lazy`.
  for (let round = 0; round < 2; round++) {
    const seen = round === 0 ? everyone : everyone.filter((id) => id.signer !== everyone[2].signer);
    for (const w of witnessesOf(run, clients)) {
      const report = witnessReport(run.model!.state, clientIndex(run, w), seen);
      await run.expectOk({ kind: "Witness", witness: report, paramsDigest: DIGEST }, w);
    }
    assert.equal(run.model!.state.runState, "RoundWitness");
    t += 3;
    run.setTime(t);
    await run.expectOk({ kind: "Tick" }, null);
    assert.equal(run.model!.state.runState, "RoundTrain");
  }
  assert.equal(currentRound(run.model!.state).height, 2);
  const state = run.model!.state;
  const prev = state.epochState.rounds[(state.epochState.roundsHead + 3) % 4];
  const sel = roundSelection(state.config, prev);
  const proofOf = (c: KeyPairSigner) => sel.committeeProof(clientIndex(run, c));
  const reporter = clients[0];
  await run.expectError(
    { kind: "HealthCheck", checks: [{ signer: keyOf(clients[1]), proof: proofOf(clients[1]) }] },
    reporter,
    "InvalidHealthCheck",
  );
  await run.expectError(
    {
      kind: "HealthCheck",
      checks: [{ signer: keyOf(lazy), proof: { ...proofOf(lazy), position: 99 } }],
    },
    reporter,
    "InvalidCommitteeProof",
  );
  await run.expectError(
    { kind: "HealthCheck", checks: [{ signer: keyOf(lazy), proof: proofOf(lazy) }] },
    await svm.newSigner(),
    "InvalidHealthCheck",
  );
  await run.expectOk(
    { kind: "HealthCheck", checks: [{ signer: keyOf(lazy), proof: proofOf(lazy) }] },
    reporter,
  );
  assert.equal(run.model!.state.epochState.clients[clientIndex(run, lazy)].state, "Dropped");
});

for (const kind of ["Hub", "Dummy"] as const) {
  Deno.test(`checkpoint (${kind} run): only in Cooldown, from an elected checkpointer, once the vote is in`, async () => {
    const start: Checkpoint = { kind, repo: { repoId: "org/start", revision: null } };
    const { run, clients } = await training(3, { totalSteps: 3, epochTime: 40 }, {
      checkpoint: start,
    });
    const state = () => run.model!.state;
    const hub = { kind: "Hub" as const, repo: { repoId: "org/model", revision: "abc123" } };
    const idx = clientIndex(run, clients[0]);
    await run.expectError(
      { kind: "Checkpoint", index: idx, repo: hub },
      clients[1],
      "InvalidCheckpoint",
    );
    await run.expectError(
      { kind: "Checkpoint", index: idx, repo: hub },
      clients[0],
      "WrongRunState",
    );
    const everyone = clients.map((c) => ({ signer: keyOf(c), p2pIdentity: keyOf(c) }));
    let t = 11;
    while (state().runState !== "Cooldown") {
      for (const w of witnessesOf(run, clients)) {
        const report = witnessReport(state(), clientIndex(run, w), everyone);
        await run.expectOk({ kind: "Witness", witness: report, paramsDigest: DIGEST }, w);
      }
      t += 3;
      run.setTime(t);
      await run.expectOk({ kind: "Tick" }, null);
    }
    const [elected] = CheckpointerSelection.fromState(state()).indices();
    const checkpointer = clients.find((c) => clientIndex(run, c) === elected)!;
    const other = clients.find((c) => c !== checkpointer)!;
    const report = (index: number, repo: Checkpoint) => ({
      kind: "Checkpoint" as const,
      index,
      repo,
    });
    await run.expectError(report(elected, hub), checkpointer, "InvalidCheckpoint"); // no vote yet
    const voted = new Uint8Array(32).fill(0x5a);
    const selection = roundSelection(state().config, currentRound(state()));
    for (const w of witnessesOf(run, clients)) {
      const proof = selection.witnessProof(clientIndex(run, w));
      await run.expectOk({ kind: "CooldownWitness", proof, paramsDigest: voted }, w);
    }
    await run.expectError(report(clientIndex(run, other), hub), other, "InvalidCheckpoint");
    const gcs: Checkpoint = { kind: "Gcs", repo: { bucket: "b", prefix: null } };
    await run.expectError(report(elected, gcs), checkpointer, "InvalidCheckpoint");
    const empty: Checkpoint = { kind: "Hub", repo: { repoId: "", revision: null } };
    await run.expectError(report(elected, empty), checkpointer, "InvalidCheckpoint");
    await run.expectOk(report(elected, hub), checkpointer);
    assert.equal(state().runState, "Finished", "the report ended Cooldown before its timer");
    assert.deepEqual(state().model.checkpoint, { kind: "P2P", repo: hub.repo });
    assert.deepEqual(state().paramsDigests.at(-1)?.digest, voted);
    await run.expectError(report(elected, hub), checkpointer, "WrongRunState");
  });
}

Deno.test("free_coordinator: only when halted, by the main authority; rent goes to the spill", async () => {
  const { run } = await warmup(2);
  const spill = await svm.newSigner();
  const extra = { extraAccounts: [{ address: spill.address, role: AccountRole.WRITABLE }] };
  await run.expectError({ kind: "FreeCoordinator" }, run.mainAuthority, "NotHalted", extra);
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  await run.expectError({ kind: "FreeCoordinator" }, spill, "NotMainAuthority", extra);
  const noSpill = await svm.send(run.coordinator, { kind: "FreeCoordinator" }, {
    signer: run.mainAuthority,
  });
  assert.equal(noSpill.code, programErrorNumber("NotEnoughAccounts"));
  run.check();
  const before = svm.balance(spill.address);
  const rent = svm.balance(run.coordinator);
  await run.expectOk({ kind: "FreeCoordinator" }, run.mainAuthority, extra);
  assert.equal(svm.balance(spill.address), before + rent);
  assert.equal(svm.accountBytes(run.coordinator), null);
});

Deno.test("tick: an epoch takes at most maxClients pending clients, in join order", async () => {
  const run = await configured({ maxClients: 2, minClients: 1, initMinClients: 1 });
  run.setTime(1);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  const joined: KeyPairSigner[] = [];
  for (let i = 0; i < 3; i++) {
    const c = await svm.newSigner();
    joined.push(c);
    await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, c);
  }
  run.setTime(3);
  await run.expectOk({ kind: "Tick" }, null);
  const clients = run.model!.state.epochState.clients;
  assert.equal(run.model!.state.runState, "Warmup");
  assert.deepEqual(clients.map((c) => c.id.signer), [keyOf(joined[0]), keyOf(joined[1])]);
  assert.equal(run.model!.registry.filter((r) => r.active === run.model!.nextActive).length, 0);
});

Deno.test("join_run: a full registry refuses new wallets while every one is pending or training", async () => {
  const run = await configured({
    globalBatchSizeStart: 300,
    globalBatchSizeEnd: 300,
    maxClients: 256,
  });
  const first = await svm.newSigner();
  await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, first);
  for (let i = 1; i < 256; i++) {
    const res = await svm.send(
      run.coordinator,
      { kind: "JoinRun", p2pIdentity: P2P },
      { signer: await svm.newSigner() },
    );
    assert.ok(res.ok);
  }
  assert.equal(svm.coordinatorAccount(run.coordinator).registry.length, 256);
  const late = await svm.newSigner();
  const full = await svm.send(run.coordinator, { kind: "JoinRun", p2pIdentity: P2P }, {
    signer: late,
  });
  assert.equal(full.code, programErrorNumber("ClientsFull"));
  // Starting an epoch takes the pending clients: no longer pending, but in the running epoch,
  // whose payout finds them by wallet, so their registrations are still not reused
  // (rewards_test.ts reuses a stale one).
  run.setTime(1);
  await svm.send(run.coordinator, { kind: "SetPaused", paused: false }, {
    signer: run.mainAuthority,
  });
  run.setTime(3);
  assert.ok((await svm.send(run.coordinator, { kind: "Tick" })).ok);
  assert.equal(svm.coordinatorAccount(run.coordinator).state.runState, "Warmup");
  const before = svm.accountBytes(run.coordinator)!;
  const again = await svm.send(run.coordinator, { kind: "JoinRun", p2pIdentity: P2P }, {
    signer: late,
  });
  assert.equal(again.code, programErrorNumber("ClientsFull"));
  assert.deepEqual(svm.accountBytes(run.coordinator), before);
});

Deno.test("a whole epoch: rounds, Cooldown, P2P checkpoint, re-join, pause at epoch end", async () => {
  const { run, clients } = await training(2, { totalSteps: 100, epochTime: 40 });
  const everyone = clients.map((c) => ({ signer: keyOf(c), p2pIdentity: keyOf(c) }));
  let t = 11;
  while (run.model!.state.runState !== "Cooldown") {
    for (const w of witnessesOf(run, clients)) {
      const report = witnessReport(run.model!.state, clientIndex(run, w), everyone);
      await run.expectOk({ kind: "Witness", witness: report, paramsDigest: DIGEST }, w);
    }
    t += 3;
    run.setTime(t);
    await run.expectOk({ kind: "Tick" }, null);
  }
  assert.ok(run.model!.state.progress.step > 4, "the epoch timer allows at least 4 rounds");
  for (const c of clients) await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, c);
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  assert.equal(run.model!.state.pendingPause, true);
  run.setTime(t + 5);
  await run.expectOk({ kind: "Tick" }, null);
  assert.equal(run.model!.state.runState, "Paused");
  assert.equal(run.model!.state.model.checkpoint.kind, "P2P");
  assert.equal(run.model!.state.progress.epoch, 1);
  run.setTime(t + 6);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  run.setTime(t + 8);
  await run.expectOk({ kind: "Tick" }, null);
  assert.equal(run.model!.state.runState, "Warmup", "the re-joined clients start epoch 1");
  assert.equal(run.model!.state.epochState.coldStartEpoch, true);
  assert.equal(
    run.model!.state.model.checkpoint.kind,
    "Hub",
    "the pause withdrew everyone, so no peer serves the model: back to the Hub checkpoint",
  );
});

Deno.test("clock: a negative unix timestamp is InvalidClock wherever the clock is read", async () => {
  const { run, clients } = await warmup(2);
  run.setTime(-5);
  await run.expectError({ kind: "Tick" }, null, "InvalidClock");
  await run.expectError({ kind: "JoinRun", p2pIdentity: P2P }, clients[0], "InvalidClock");
  await run.expectError({ kind: "SetPaused", paused: true }, run.mainAuthority, "InvalidClock");
  run.setTime(20);
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  run.setTime(-5);
  // A halted run does not tick after a join, so it never reads the clock.
  await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, clients[0]);
});

Deno.test("parameter digests: warmup votes recorded; cooldown witnesses record the next start", async () => {
  const agreed = new Uint8Array(32).fill(0xa1);
  const rival = new Uint8Array(32).fill(0xb2);
  const { run, clients } = await warmup(3, { totalSteps: 2, epochTime: 100 });
  run.setTime(11);
  for (const [k, c] of clients.entries()) {
    await run.expectOk({
      kind: "WarmupWitness",
      witness: warmupReport(run.model!.state, clientIndex(run, c)),
      paramsDigest: k === 0 ? rival : agreed,
    }, c);
  }
  const start = run.model!.state.progress.step;
  assert.deepEqual(svm.coordinatorAccount(run.coordinator).state.paramsDigests, [
    { step: start, digest: agreed },
  ]);
  // Round 0 (the run's only round: totalSteps 2): its witnesses vote for the step Warmup
  // already recorded, which keeps its first record.
  for (const w of witnessesOf(run, clients)) {
    const report = witnessReport(run.model!.state, clientIndex(run, w), []);
    await run.expectOk({ kind: "Witness", witness: report, paramsDigest: agreed }, w);
  }
  while (run.model!.state.runState !== "Cooldown") {
    run.setTime(run.clock.unixTimestamp + 10);
    await run.expectOk({ kind: "Tick" }, null);
    const state = run.model!.state;
    if (state.runState === "RoundTrain") {
      for (const w of witnessesOf(run, clients)) {
        const report = witnessReport(state, clientIndex(run, w), []);
        await run.expectOk({ kind: "Witness", witness: report, paramsDigest: NO_DIGEST }, w);
      }
    }
  }
  const state = run.model!.state;
  const sel = roundSelection(state.config, currentRound(state));
  const [w] = witnessesOf(run, clients);
  const proof = sel.witnessProof(clientIndex(run, w));
  await run.expectError(
    { kind: "CooldownWitness", proof, paramsDigest: NO_DIGEST },
    w,
    "InvalidWitness",
  );
  const other = clients.find((c) => c !== w)!;
  await run.expectError(
    { kind: "CooldownWitness", proof, paramsDigest: agreed },
    other,
    "InvalidWitness",
  );
  await run.expectOk({ kind: "CooldownWitness", proof, paramsDigest: agreed }, w);
  await run.expectError(
    { kind: "CooldownWitness", proof, paramsDigest: agreed },
    w,
    "DuplicateWitness",
  );
  for (const c of witnessesOf(run, clients).filter((c) => c !== w)) {
    const p = sel.witnessProof(clientIndex(run, c));
    await run.expectOk({ kind: "CooldownWitness", proof: p, paramsDigest: agreed }, c);
  }
  run.setTime(run.clock.unixTimestamp + 10);
  await run.expectOk({ kind: "Tick" }, null);
  const end = svm.coordinatorAccount(run.coordinator).state;
  assert.equal(end.runState, "Finished");
  assert.deepEqual(end.paramsDigests, [
    { step: start, digest: agreed },
    { step: start + 1, digest: agreed },
  ]);
  await run.expectError(
    { kind: "CooldownWitness", proof, paramsDigest: agreed },
    w,
    "Halted",
  );
});

Deno.test("witness: an optional metadata tail is checked (size, finite numbers) and otherwise ignored", async () => {
  const { run, clients } = await warmup(3);
  for (const c of clients) {
    await run.expectOk(
      {
        kind: "WarmupWitness",
        witness: warmupReport(run.model!.state, clientIndex(run, c)),
        paramsDigest: DIGEST,
      },
      c,
    );
  }
  const state = run.model!.state;
  const [w] = witnessesOf(run, clients);
  const report = witnessReport(state, clientIndex(run, w), []);
  const metadata = {
    step: 1,
    loss: 3.25,
    tokensPerSec: 900,
    bandwidthPerSec: 1e5,
    efficiency: 0.5,
  };
  const good = encodeCoordinatorInstruction({
    kind: "Witness",
    witness: report,
    paramsDigest: DIGEST,
    metadata,
  });
  const nan = good.slice();
  new DataView(nan.buffer).setFloat64(good.length - 32, NaN, true); // the loss
  const infinite = good.slice();
  new DataView(infinite.buffer).setFloat64(good.length - 8, -Infinity, true); // efficiency
  const warmupWithTail = good.slice();
  warmupWithTail[0] = INSTRUCTION_KINDS.indexOf("WarmupWitness");
  for (const data of [nan, infinite, good.subarray(0, good.length - 1), warmupWithTail]) {
    const res = await svm.sendRaw([{
      programAddress: svm.programId,
      accounts: [
        { address: run.coordinator, role: AccountRole.WRITABLE },
        { address: w.address, role: AccountRole.READONLY_SIGNER, signer: w } as never,
      ],
      data,
    }]);
    assert.equal(
      res.code,
      programErrorNumber("InvalidInstruction"),
      `data of ${data.length} bytes`,
    );
  }
  await run.expectOk({ kind: "Witness", witness: report, paramsDigest: DIGEST, metadata }, w);
  run.check();
});

/**
 * Every seat of the current stage of every open task reports Pass (a healthy epoch); with
 * `dueOnly`, only of the stages that close when the current round ends.
 */
async function passAll(run: DualRun, clients: KeyPairSigner[], dueOnly = false): Promise<void> {
  for (let k = 0; k < 100; k++) {
    const state = run.model!.state;
    const height = currentRound(state).height;
    const open = state.epochState.verificationTasks
      .filter((t) => !dueOnly || t.deadline === height)
      .flatMap((t) => stageSeats(t).filter((s) => s.verdict === null).map((s) => ({ t, s })));
    if (open.length === 0) return;
    const { t, s } = open[0];
    const verifier = clients.find((c) =>
      clientIndex(run, c) >= 0 &&
      state.epochState.clients[clientIndex(run, c)].epochIndex === s.verifier
    )!;
    await run.expectOk({
      kind: "VerificationReport",
      report: {
        height: t.height,
        trainer: t.trainer,
        verdict: "Pass",
        evidence: "None",
        detail: 0,
      },
    }, verifier);
  }
}

/**
 * The Healthy witnesses of the current round report (seeing every client), then the round ends
 * by its timers. Returns the new time.
 */
async function finishRound(run: DualRun, clients: KeyPairSigner[], t: number): Promise<number> {
  const state = run.model!.state;
  const everyone = state.epochState.clients.map((c) => c.id);
  for (const w of witnessesOf(run, clients)) {
    // A quorum ends RoundTrain; the rest still report in RoundWitness.
    const runState = run.model!.state.runState;
    if (runState !== "RoundTrain" && runState !== "RoundWitness") break;
    if (run.model!.state.epochState.clients[clientIndex(run, w)].state !== "Healthy") continue;
    const report = witnessReport(run.model!.state, clientIndex(run, w), everyone);
    await run.expectOk({ kind: "Witness", witness: report, paramsDigest: DIGEST }, w);
  }
  if (run.model!.state.runState === "RoundTrain") {
    run.setTime(t += run.model!.state.config.maxRoundTrainTime);
    await run.expectOk({ kind: "Tick" }, null);
  }
  run.setTime(t += run.model!.state.config.roundWitnessTime);
  await run.expectOk({ kind: "Tick" }, null);
  return t;
}

/**
 * `clients` all join at the instant WaitingForMembers began (so none starts the epoch early),
 * then a tick one second later starts the epoch. Returns the new time.
 */
async function startEpoch(run: DualRun, clients: KeyPairSigner[]): Promise<number> {
  let t = run.model!.state.runStateStartUnixTimestamp;
  run.setTime(t);
  for (const c of clients) await run.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, c);
  run.setTime(t += 1);
  await run.expectOk({ kind: "Tick" }, null);
  return t;
}

/** Every client's warmup witness: the epoch's round 0 starts. */
async function leaveWarmup(run: DualRun, clients: KeyPairSigner[]): Promise<void> {
  for (const c of clients) {
    if (run.model!.state.runState !== "Warmup" || clientIndex(run, c) < 0) continue;
    await run.expectOk({
      kind: "WarmupWitness",
      witness: warmupReport(run.model!.state, clientIndex(run, c)),
      paramsDigest: DIGEST,
    }, c);
  }
}

const PASS = { verdict: "Pass", evidence: "None", detail: 0 } as const;

Deno.test("verification_report: refused with the machine's codes, accepted from a seat", async () => {
  const idle = await configured({ verificationPercent: 100 });
  const stranger = await svm.newSigner();
  const nowhere = {
    kind: "VerificationReport" as const,
    report: { height: 0, trainer: 0, ...PASS },
  };
  await idle.expectError(nowhere, stranger, "Halted");
  const { run, clients } = await training(4, { verificationPercent: 100, epochTime: 40 });
  await run.expectError(nowhere, clients[0], "InvalidVerification"); // round 0: nothing sampled
  let t = await finishRound(run, clients, 11);
  const state = run.model!.state;
  assert.equal(currentRound(state).height, 1);
  // 8 sequences over 4 trainers: 4 batches, all sampled; each seats the 3 others.
  assert.equal(state.epochState.verificationTasks.length, 4);
  const task = state.epochState.verificationTasks[0];
  const bySeat = (e: number) => clients.find((c) => clientIndex(run, c) === e)!;
  const [first, second] = stageSeats(task).map((s) => bySeat(s.verifier));
  const on = { height: task.height, trainer: task.trainer };
  const ix = (report: Partial<VerificationReport>) => ({
    kind: "VerificationReport" as const,
    report: { ...on, ...PASS, ...report },
  });
  await run.expectError(ix({}), stranger, "InvalidVerification");
  await run.expectError(ix({}), bySeat(task.trainer), "InvalidVerification");
  await run.expectError(ix({ evidence: "ResultMismatch" }), first, "InvalidVerification");
  await run.expectError(ix({ verdict: "Fail" }), first, "InvalidVerification");
  await run.expectError(ix({ height: 7 }), first, "InvalidVerification");
  await run.expectOk(ix({}), first);
  await run.expectError(
    ix({ verdict: "Fail", evidence: "ChainBreak" }),
    first,
    "InvalidVerification",
  );
  const seat = run.model!.state.epochState.verificationTasks[0].seats.find((s) =>
    s.verifier === clientIndex(run, first)
  );
  assert.deepEqual(seat, {
    verifier: clientIndex(run, first),
    stage: "Verify",
    ...PASS,
    verdict: "Pass",
  });
  // Malformed data is the program's own refusal; a missing signature too.
  const good = encodeCoordinatorInstruction(ix({}));
  for (
    const data of [
      good.subarray(0, 12),
      Uint8Array.of(...good, 0),
      good.with(7, 2),
      good.with(8, 7),
    ]
  ) {
    const res = await svm.sendRaw([{
      programAddress: svm.programId,
      accounts: [
        { address: run.coordinator, role: AccountRole.WRITABLE },
        { address: second.address, role: AccountRole.READONLY_SIGNER, signer: second } as never,
      ],
      data,
    }]);
    assert.equal(res.code, programErrorNumber("InvalidInstruction"), `data ${[...data]}`);
  }
  const unsigned = await svm.sendRaw([{
    programAddress: svm.programId,
    accounts: [
      { address: run.coordinator, role: AccountRole.WRITABLE },
      { address: second.address, role: AccountRole.READONLY },
    ],
    data: good,
  }]);
  assert.equal(unsigned.code, programErrorNumber("MissingSignature"));
  run.check();
  // A second pass decides the task (2 of 3), nobody is ejected; it stays open until its stage
  // closes, so the third seat still reports (and would be found idle otherwise).
  await run.expectOk(ix({}), second);
  assert.equal(run.model!.state.epochState.verificationTasks.length, 4);
  assert.equal(run.model!.state.epochState.verificationTasks[0].decided, "Pass");
  await run.expectOk(ix({}), bySeat(stageSeats(task)[2].verifier));
  await run.expectError(ix({}), second, "InvalidVerification");
  assert.deepEqual(run.model!.state.ejections, []);
  // A pause ends the epoch after this round: its open tasks still take reports in Cooldown,
  // where no result is rejected any more; the epoch's end drops them.
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  t = await finishRound(run, clients, t);
  assert.equal(run.model!.state.runState, "Cooldown");
  const late = run.model!.state.epochState.verificationTasks.filter((t) => t.decided === null);
  assert.equal(late.length, 3);
  await run.expectOk({
    kind: "VerificationReport",
    report: { height: late[0].height, trainer: late[0].trainer, ...PASS },
  }, bySeat(stageSeats(late[0])[0].verifier));
  run.setTime(t += run.model!.state.config.cooldownTime);
  await run.expectOk({ kind: "Tick" }, null);
  assert.equal(run.model!.state.runState, "Paused");
  assert.deepEqual(run.model!.state.epochState.verificationTasks, [], "dropped at the epoch's end");
  await run.expectError(nowhere, clients[0], "Halted");
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  await run.expectError(nowhere, clients[0], "WrongRunState");
});

Deno.test("verification: a failed result ejects its trainer and a false voucher, and bars both", async () => {
  const run = await configured({
    verificationPercent: 10,
    verificationBarEpochs: 1,
    initMinClients: 4,
    minClients: 2,
    epochTime: 20,
    warmupTime: 5,
  });
  run.setTime(1);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  const clients: KeyPairSigner[] = [];
  for (let i = 0; i < 5; i++) clients.push(await svm.newSigner());
  let t = await startEpoch(run, clients);
  await leaveWarmup(run, clients);
  t = await finishRound(run, clients, t);
  // Round 1's start sampled one of round 0's results (10% of 5 batches, at least one).
  const [task] = run.model!.state.epochState.verificationTasks;
  assert.equal(run.model!.state.epochState.verificationTasks.length, 1);
  const bySeat = (e: number) => clients.find((c) => clientIndex(run, c) === e)!;
  const trainer = bySeat(task.trainer);
  const [voucher, accuser, second] = stageSeats(task).map((s) => bySeat(s.verifier));
  const on = { height: task.height, trainer: task.trainer };
  await run.expectOk({ kind: "VerificationReport", report: { ...on, ...PASS } }, voucher);
  const fail = { verdict: "Fail", evidence: "ResultMismatch", detail: 812_000 } as const;
  await run.expectOk({ kind: "VerificationReport", report: { ...on, ...fail } }, accuser);
  await run.expectOk({ kind: "VerificationReport", report: { ...on, ...fail } }, second);
  let state = run.model!.state;
  assert.deepEqual(state.epochState.verificationTasks.map((t) => t.decided), ["Fail"]);
  const stateOf = (c: KeyPairSigner) => state.epochState.clients[clientIndex(run, c)].state;
  assert.equal(stateOf(trainer), "Ejected");
  assert.equal(stateOf(voucher), "Ejected");
  assert.equal(stateOf(accuser), "Healthy");
  // Their results of rounds 0 and 1, whose apply is not due yet, are left out.
  const rejected = [task.trainer, clientIndex(run, voucher)].sort((a, b) => a - b);
  for (const h of [0, 1]) {
    assert.deepEqual(state.epochState.rounds.find((r) => r.height === h)!.rejected, rejected);
  }
  const step = state.epochState.startStep;
  assert.deepEqual(state.ejections, [
    {
      signer: keyOf(trainer),
      epoch: 0,
      step,
      cause: "FailedVerification",
      evidence: "ResultMismatch",
      barredUntil: 2,
    },
    {
      signer: keyOf(voucher),
      epoch: 0,
      step,
      cause: "FalseVouch",
      evidence: "None",
      barredUntil: 2,
    },
  ]);
  const runState = () => run.model!.state.runState; // read afresh: each instruction replaces it
  const ejected = [trainer, voucher];
  const honest = clients.filter((c) => !ejected.includes(c));
  // The epoch goes on with the three others, who pass every later sample.
  while (runState() === "RoundTrain") {
    await passAll(run, honest);
    t = await finishRound(run, honest, t);
  }
  run.setTime(t += run.model!.state.config.cooldownTime);
  await run.expectOk({ kind: "Tick" }, null);
  assert.equal(run.model!.state.runState, "WaitingForMembers");
  assert.equal(run.model!.state.progress.epoch, 1);
  // Epoch 1: everyone joins, but the barred two do not count towards initMinClients (4).
  t = await startEpoch(run, clients);
  assert.equal(run.model!.state.runState, "WaitingForMembers");
  assert.equal(run.model!.registry.filter((r) => r.active === run.model!.nextActive).length, 5);
  // The operator lowers initMinClients; the epoch starts without them.
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  await run.expectOk({
    kind: "Update",
    config: { ...run.model!.state.config, initMinClients: 3 },
  }, run.mainAuthority);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  t = await startEpoch(run, clients);
  state = run.model!.state;
  assert.equal(state.runState, "Warmup");
  assert.deepEqual(state.epochState.clients.map((c) => c.id.signer), honest.map(keyOf));
  await leaveWarmup(run, honest);
  while (runState() === "RoundTrain") {
    await passAll(run, honest);
    t = await finishRound(run, honest, t);
  }
  run.setTime(t += run.model!.state.config.cooldownTime);
  await run.expectOk({ kind: "Tick" }, null);
  // Epoch 2: the bar is over; everyone is back, in join order.
  assert.equal(run.model!.state.progress.epoch, 2);
  await startEpoch(run, clients);
  state = run.model!.state;
  assert.equal(state.runState, "Warmup");
  assert.deepEqual(state.epochState.clients.map((c) => c.id.signer), clients.map(keyOf));
  assert.equal(state.ejections.length, 2, "the records stay for slashing");
});
