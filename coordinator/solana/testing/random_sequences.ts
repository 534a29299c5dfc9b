/**
 * Random instruction sequences for the differential tests: a run with a random config (half of
 * them verifying a share of each round's results), six clients and a seeded stream of joins,
 * ticks at random times, warmup witnesses, witnesses (some forged or misdirected), health
 * checks, verification reports (mostly from seated verifiers, some from strangers or
 * malformed), pauses and resumes, checkpoints and authority instructions (meeting addresses
 * and future epoch rates among them, some malformed) from right and wrong signers, each sent
 * through a {@linkcode DualRun} (program and reference model compared after
 * every instruction). With `deposit`, the run requires a join deposit (clients hold 0 to 3
 * deposits' worth of tokens) and the stream adds withdrawals, sweeps and deposit changes; the
 * vault must always hold exactly what the account says it owes.
 *
 * @module
 */

import { AccountRole, type Address, type KeyPairSigner } from "@solana/kit";
import assert from "node:assert/strict";
import { equalBytes } from "../../../common/mod.ts";
import {
  testConfig,
  testModel,
  warmupReport,
  witnessReport,
} from "../../../tests/support/coordinator_fixtures.ts";
import { Prng } from "../../../tests/support/coordinator_sim.ts";
import type { CoordinatorSvm } from "./svm.ts";
import { clientIndex, DualRun, type DualSendOptions, keyOf } from "./dual_run.ts";
import { addressBytes } from "./svm.ts";
import {
  type CoordinatorInstruction,
  depositPayoutAccounts,
  depositVaultAuthority,
  joinDepositAccounts,
  MAX_MEETING_ADDRESSES,
  MAX_POINTS,
  type MeetingAddress,
} from "../abi/mod.ts";
import {
  CheckpointerSelection,
  type CoordinatorConfig,
  currentRound,
  isHealthy,
  type NodeIdentity,
  NUM_EJECTION_RECORDS,
  phaseDigestVote,
  previousRound,
  roundClients,
  roundSelection,
  stageSeats,
  VERIFICATION_EVIDENCE,
} from "../../core/mod.ts";

/** A valid random config (small times, 8/64/256-client caps, verification half the time). */
export function randomConfig(rng: Prng): CoordinatorConfig {
  const maxClients = [8, 64, 256][rng.int(0, 2)];
  const minClients = rng.int(1, 3);
  const epochTime = rng.int(12, 40);
  const verificationPercent = [0, 0, 0, 10, 50, 100][rng.int(0, 5)];
  return testConfig({
    verificationPercent,
    verificationBarEpochs: [0, 1, 2, 0xffff][rng.int(0, 3)], // 65535: barredUntil clamps
    maxClients,
    minClients,
    initMinClients: rng.int(minClients, 4),
    witnessNodes: rng.int(0, 1) === 0 ? 0 : rng.int(1, minClients),
    warmupTime: rng.int(2, 8),
    maxRoundTrainTime: rng.int(2, 5),
    roundWitnessTime: rng.int(1, 3),
    cooldownTime: rng.int(1, 3),
    epochTime,
    totalSteps: rng.int(6, 40),
    waitingForMembersExtraTime: rng.int(1, 3),
    globalBatchSizeStart: rng.int(4, 6),
    globalBatchSizeEnd: rng.int(6, 9),
    globalBatchSizeWarmupTokens: rng.int(0, 1) * rng.int(50, 400),
  });
}

/**
 * A digest vote: mostly one agreed digest, sometimes a rival, none (all zero) or noise, so
 * that some phases record a digest, some tie and some lack a quorum.
 */
function randomDigest(rng: Prng): Uint8Array {
  const roll = rng.int(0, 9);
  if (roll < 2) return new Uint8Array(32);
  if (roll < 8) return new Uint8Array(32).fill(0xd1);
  if (roll < 9) return new Uint8Array(32).fill(0xd2);
  return new Uint8Array(32).map(() => rng.int(0, 255));
}

/** Identities of `clients` (signer = p2p key). */
export function ids(clients: KeyPairSigner[]): NodeIdentity[] {
  return clients.map((c) => ({ signer: keyOf(c), p2pIdentity: keyOf(c) }));
}

/** One random instruction (and its signer) for the run's current state. */
function randomInstruction(
  run: DualRun,
  rng: Prng,
  clients: KeyPairSigner[],
): [CoordinatorInstruction, KeyPairSigner | null] {
  const state = run.model!.state;
  const client = rng.pick(clients);
  const index = clientIndex(run, client);
  const training = state.runState === "RoundTrain" || state.runState === "RoundWitness";
  if (state.epochState.verificationTasks.length > 0 && rng.int(0, 2) === 0) {
    return verificationInstruction(run, rng, clients);
  }
  // Weight the reports the current state can accept, so runs get deep into epochs.
  let roll = rng.int(0, 99);
  if (training && roll < 44 && rng.int(0, 1) === 0) roll = rng.int(44, 77);
  if (state.runState === "Warmup" && roll < 32 && rng.int(0, 1) === 0) roll = rng.int(32, 43);
  if (state.runState === "Cooldown" && rng.int(0, 2) > 0) {
    // A checkpoint is taken only once the Cooldown digest vote has a quorum: then report one
    // more often, so sequences reach the report that ends Cooldown, not just its refusals.
    const voted = phaseDigestVote(state).consensus;
    return rng.int(0, voted === null ? 4 : 1) === 0
      ? checkpointReport(run, rng, clients)
      : cooldownReport(run, rng, clients);
  }
  if (roll < 18) return [{ kind: "Tick" }, null];
  if (roll < 32) {
    return [{ kind: "JoinRun", p2pIdentity: new Uint8Array(32).fill(rng.int(0, 255)) }, client];
  }
  if (roll < 44) {
    const i = index >= 0 && rng.int(0, 9) > 0 ? index : rng.int(0, 4);
    return [
      { kind: "WarmupWitness", witness: warmupReport(state, i), paramsDigest: randomDigest(rng) },
      client,
    ];
  }
  if (roll < 68) {
    if (state.runState !== "RoundTrain" && state.runState !== "RoundWitness") {
      return [{
        kind: "Witness",
        witness: warmupReport(state, Math.max(index, 0)),
        paramsDigest: randomDigest(rng),
      }, client];
    }
    const sel = roundSelection(state.config, currentRound(state));
    const witnesses = sel.witnessIndices();
    const live = state.epochState.clients;
    // Usually an elected witness reporting as itself; sometimes someone else or a forgery.
    let sender = client;
    let i = Math.max(index, 0);
    if (witnesses.length > 0 && rng.int(0, 9) > 1) {
      i = rng.pick(witnesses);
      const owner = live[i] && signerOf(clients, live[i].id.signer);
      if (owner) sender = owner;
    }
    if (i >= currentRound(state).clientsLen) i = 0;
    const seen = ids(clients).filter(() => rng.int(0, 3) > 0);
    const report = witnessReport(state, i, seen);
    if (rng.int(0, 19) === 0) {
      report.proof = { ...report.proof, position: report.proof.position + 1 };
    }
    return [{ kind: "Witness", witness: report, paramsDigest: randomDigest(rng) }, sender];
  }
  if (roll < 78) {
    const prev = previousRound(state);
    if (prev === null || currentRound(state).height < 2) {
      return [{
        kind: "HealthCheck",
        checks: [{ signer: keyOf(client), proof: { committee: "Trainer", position: 0, index: 0 } }],
      }, client];
    }
    const sel = roundSelection(state.config, prev);
    const prevClients = roundClients(state, prev.height);
    const checks = prevClients.map((c, i) => ({
      signer: c.id.signer,
      proof: sel.committeeProof(i),
    }))
      .filter((c) =>
        rng.int(0, 3) === 0 ||
        !isHealthy(state, { signer: c.signer, p2pIdentity: c.signer }, c.proof)
      );
    if (checks.length === 0) checks.push({ signer: keyOf(client), proof: sel.committeeProof(0) });
    return [{ kind: "HealthCheck", checks: checks.slice(0, 8) }, client];
  }
  if (roll < 86) {
    const paused = state.runState === "Paused" ? rng.int(0, 4) === 0 : rng.int(0, 3) === 0;
    return [{ kind: "SetPaused", paused }, run.mainAuthority];
  }
  if (roll < 88 && state.epochState.verificationTasks.length === 0) {
    // No task to report on: the program must still refuse a report as the machine does.
    return verificationInstruction(run, rng, clients);
  }
  if (roll < 90) return checkpointReport(run, rng, clients);
  return adminInstruction(run, rng, clients);
}

/**
 * A verification report: usually a seat of an open task's current stage reporting as itself
 * (a pass or, a third of the time, a fail with evidence), sometimes another client, a seat of
 * the other stage, a report on no task, or a pass carrying evidence.
 */
export function verificationInstruction(
  run: DualRun,
  rng: Prng,
  clients: KeyPairSigner[],
): [CoordinatorInstruction, KeyPairSigner | null] {
  const state = run.model!.state;
  const tasks = state.epochState.verificationTasks;
  const task = tasks.length > 0 && rng.int(0, 9) > 0 ? rng.pick(tasks) : null;
  let sender = rng.pick(clients);
  if (task !== null && rng.int(0, 9) > 1) {
    const seats = rng.int(0, 9) > 0 ? stageSeats(task) : task.seats;
    const seat = rng.pick(seats);
    const es = state.epochState;
    const verifier = [...es.clients, ...es.exitedClients].find((c) =>
      c.epochIndex === seat.verifier
    );
    if (verifier !== undefined) sender = signerOf(clients, verifier.id.signer) ?? sender;
  }
  const fail = rng.int(0, 2) === 0;
  let evidence = fail ? rng.pick(VERIFICATION_EVIDENCE.slice(1)) : VERIFICATION_EVIDENCE[0];
  if (rng.int(0, 19) === 0) evidence = fail ? "None" : "ResultMismatch"; // refused by the machine
  return [{
    kind: "VerificationReport",
    report: {
      height: task?.height ?? rng.int(0, 4),
      trainer: task?.trainer ?? rng.int(0, 5),
      verdict: fail ? "Fail" : "Pass",
      evidence,
      detail: fail ? rng.int(1, 1_000_000) : 0,
    },
  }, sender];
}

/**
 * A Cooldown witness: usually an elected witness of the last round reporting as itself,
 * sometimes from the wrong client, with a forged proof, or with no digest.
 */
function cooldownReport(
  run: DualRun,
  rng: Prng,
  clients: KeyPairSigner[],
): [CoordinatorInstruction, KeyPairSigner | null] {
  const state = run.model!.state;
  const round = currentRound(state);
  if (round.clientsLen === 0) return [{ kind: "Tick" }, null];
  const sel = roundSelection(state.config, round);
  const witnesses = sel.witnessIndices();
  const i = witnesses.length > 0 && rng.int(0, 9) > 0
    ? rng.pick(witnesses)
    : rng.int(0, round.clientsLen - 1);
  const owner = roundClients(state, round.height)[i];
  let sender = rng.pick(clients);
  if (owner && rng.int(0, 9) > 0) {
    sender = signerOf(clients, owner.id.signer) ?? sender;
  }
  const proof = sel.witnessProof(i);
  if (rng.int(0, 19) === 0) proof.position += 1;
  // Mostly the digest the others vote for, so Cooldown votes reach a quorum (and checkpoints
  // can be taken); sometimes another, or none.
  const digest = rng.int(0, 3) > 0 ? new Uint8Array(32).fill(0xd1) : randomDigest(rng);
  return [{ kind: "CooldownWitness", proof, paramsDigest: digest }, sender];
}

/**
 * A checkpoint report: in Cooldown usually from one of its elected checkpointers as itself (taken
 * once the digest vote has a quorum, ending Cooldown), otherwise from any client, as itself or
 * naming another index; a Hub repo, sometimes a Gcs one.
 */
function checkpointReport(
  run: DualRun,
  rng: Prng,
  clients: KeyPairSigner[],
): [CoordinatorInstruction, KeyPairSigner | null] {
  const state = run.model!.state;
  const repo = rng.int(0, 3) === 0
    ? { kind: "Gcs" as const, repo: { bucket: "bucket", prefix: null } }
    : {
      kind: "Hub" as const,
      repo: { repoId: `org/m${rng.int(0, 9)}`, revision: rng.int(0, 1) ? "rev" : null },
    };
  let sender = rng.pick(clients);
  let index = clientIndex(run, sender);
  const elected = state.runState === "Cooldown"
    ? CheckpointerSelection.fromState(state).indices()
    : [];
  if (elected.length > 0 && rng.int(0, 4) > 0) {
    index = rng.pick(elected);
    sender = signerOf(clients, state.epochState.clients[index].id.signer) ?? sender;
  } else if (rng.int(0, 9) === 0) {
    index = rng.int(0, 5);
  }
  return [{ kind: "Checkpoint", index: Math.max(index, 0), repo }, sender];
}

/** The signer among `clients` whose public key is `key`. */
function signerOf(clients: KeyPairSigner[], key: Uint8Array): KeyPairSigner | undefined {
  return clients.find((c) => equalBytes(keyOf(c), key));
}

/** Meeting addresses that pass the rule, and ones that break it in each way it names. */
const PEER = "12D3KooWHFrmLWTTDD4NodngtRMEVYgxrsDMp4F9iSwYntZ9WjHa";
const GOOD_MEETING = [
  `/ip4/203.0.113.7/tcp/4001/p2p/${PEER}`,
  `/dns4/relay.example.org/tcp/443/wss/p2p/${PEER}`,
  `/ip6/2001:db8::7/tcp/4001/p2p/${PEER}`,
  `/dns4/${"r".repeat(121)}/tcp/443/p2p/${PEER}`, // 192 bytes, the most
];
const BAD_MEETING = [
  "",
  "/ip4/203.0.113.7/tcp/4001",
  `/dns4/${"r".repeat(122)}/tcp/443/p2p/${PEER}`, // 193 bytes
  `/dns4/réseau/tcp/4001/p2p/${PEER}`,
  `/ip4//tcp/4001/p2p/${PEER}`,
  `/ip4/203.0.113.7/tcp/4001/p2p/${PEER}/p2p-circuit`,
];

/**
 * A meeting-address update: usually 0..4 good addresses from the main authority, sometimes five
 * (one too many), a malformed one, or the wrong signer.
 */
function meetingInstruction(
  run: DualRun,
  rng: Prng,
  clients: KeyPairSigner[],
): [CoordinatorInstruction, KeyPairSigner | null] {
  const count = rng.int(0, 9) === 0 ? MAX_MEETING_ADDRESSES + 1 : rng.int(0, MAX_MEETING_ADDRESSES);
  const meetingAddresses: MeetingAddress[] = Array.from({ length: count }, () => ({
    kind: rng.int(0, 1) === 0 ? "Relay" : "Bootstrap",
    address: rng.int(0, 7) === 0 ? rng.pick(BAD_MEETING) : rng.pick(GOOD_MEETING),
  }));
  const signer = rng.int(0, 7) === 0 ? rng.pick(clients) : run.mainAuthority;
  return [{ kind: "Update", meetingAddresses }, signer];
}

/**
 * Future epoch rates: usually from the main authority, one rate or both; rates that leave a
 * remainder, zero, and the largest u64 (so points saturate); sometimes another signer.
 */
function ratesInstruction(
  run: DualRun,
  rng: Prng,
  clients: KeyPairSigner[],
): [CoordinatorInstruction, KeyPairSigner | null] {
  const rate = () => [0n, 7n, 1000n, 999_999_937n, MAX_POINTS][rng.int(0, 4)];
  const ix: CoordinatorInstruction & { kind: "SetFutureEpochRates" } = {
    kind: "SetFutureEpochRates",
  };
  const which = rng.int(0, 2);
  if (which !== 1) ix.earningRateTotalShared = rate();
  if (which !== 0) ix.slashingRatePerClient = rate();
  return [ix, rng.int(0, 5) === 0 ? rng.pick(clients) : run.mainAuthority];
}

/**
 * Authority instructions: grants, delegates, metadata, config, progress and meeting-address
 * updates, future epoch rates.
 */
function adminInstruction(
  run: DualRun,
  rng: Prng,
  clients: KeyPairSigner[],
): [CoordinatorInstruction, KeyPairSigner | null] {
  const account = run.model!;
  const authorizer = account.authorizer === null
    ? undefined
    : signerOf(clients, account.authorizer);
  switch (rng.int(0, 7)) {
    case 0: {
      const key = rng.int(0, 4) === 0 ? new Uint8Array(32) : keyOf(rng.pick(clients));
      const signer = rng.int(0, 4) === 0 ? rng.pick(clients) : run.joinAuthority;
      return [{ kind: "GrantAuthorizer", authorizer: key }, signer];
    }
    case 1: {
      const delegates = clients.filter(() => rng.int(0, 1) === 0).map(keyOf);
      const signer = authorizer !== undefined && rng.int(0, 4) > 0 ? authorizer : rng.pick(clients);
      return [{ kind: "SetDelegates", clear: rng.int(0, 2) === 0, delegates }, signer];
    }
    case 2:
      return [{
        kind: "Update",
        metadata: {
          name: `run ${rng.int(0, 99)}`,
          description: "é",
          numParameters: rng.int(0, 1e9),
          vocabSize: 32000,
        },
      }, rng.int(0, 5) === 0 ? rng.pick(clients) : run.mainAuthority];
    case 3: {
      const config = randomConfig(rng);
      if (rng.int(0, 3) > 0) config.maxClients = account.state.config.maxClients;
      return [{ kind: "Update", config }, run.mainAuthority];
    }
    case 4:
      return [{
        kind: "Update",
        progress: {
          epoch: rng.int(0, 3),
          step: rng.int(0, 20),
          epochStartDataIndex: rng.int(0, 500),
        },
      }, run.mainAuthority];
    case 5:
      return meetingInstruction(run, rng, clients);
    case 6:
      return ratesInstruction(run, rng, clients);
    default:
      return [{ kind: "Tick" }, rng.pick(clients)];
  }
}

/**
 * What the model's state shows of verification after an instruction: open tasks, tie-break
 * stages, rejected results, and each new ejection record's cause (`ejection:Cause`).
 */
export function verificationEvents(run: DualRun): string[] {
  const state = run.model?.state;
  if (state === undefined) return [];
  const events: string[] = [];
  const tasks = state.epochState.verificationTasks;
  if (tasks.length > 0) events.push("verification:task");
  if (tasks.some((t) => t.stage === "TieBreak")) events.push("verification:tieBreak");
  if (state.epochState.rounds.some((r) => r.rejected.length > 0)) {
    events.push("verification:rejected");
  }
  let recorded = seenEjections.get(run);
  if (recorded === undefined) seenEjections.set(run, recorded = new Set());
  for (const r of state.ejections) {
    const marker = `${r.epoch}:${r.signer.join(",")}`; // one record per signer and epoch
    if (recorded.has(marker)) continue;
    recorded.add(marker);
    events.push(`ejection:${r.cause}`);
    if (recorded.size > NUM_EJECTION_RECORDS) events.push("ejection:oldestDropped");
    if (r.barredUntil === 0xffff) events.push("ejection:barClamped");
  }
  return events;
}

const seenEjections = new WeakMap<DualRun, Set<string>>();

/** The deposit amount of the random runs that require one. */
const RANDOM_DEPOSIT = 100n;

/** A random run's join deposit: the vault, each client's token account, the treasury. */
interface DepositSetup {
  mint: Address;
  vault: Address;
  authority: { address: Address; bump: number };
  wallets: Map<KeyPairSigner, Address>;
  treasury: Address;
}

/** Sets up a vault, funds each client with 0 to 3 deposits' worth, and turns the deposit on. */
async function setUpDeposit(
  svm: CoordinatorSvm,
  run: DualRun,
  rng: Prng,
  clients: KeyPairSigner[],
): Promise<DepositSetup> {
  const mint = await svm.createMint();
  const authority = await depositVaultAuthority(svm.programId, run.coordinator);
  const vault = await svm.createTokenAccount(mint, authority.address, 0n);
  const wallets = new Map<KeyPairSigner, Address>();
  for (const c of clients) {
    const funds = BigInt(rng.int(0, 3)) * RANDOM_DEPOSIT;
    wallets.set(c, await svm.createTokenAccount(mint, c.address, funds));
  }
  const treasury = await svm.createTokenAccount(mint, run.mainAuthority.address, 0n);
  const setup = { mint, vault, authority, wallets, treasury };
  await run.expectOk(
    { kind: "SetJoinDeposit", amount: RANDOM_DEPOSIT },
    run.mainAuthority,
    setDepositOptions(setup),
  );
  return setup;
}

function setDepositOptions(d: DepositSetup): DualSendOptions {
  return {
    extraAccounts: [{ address: d.vault, role: AccountRole.READONLY }],
    deposit: {
      given: true,
      valid: true,
      vault: { key: addressBytes(d.vault), mint: addressBytes(d.mint), bump: d.authority.bump },
    },
  };
}

/** A deposit instruction: mostly withdrawals, some sweeps (right and wrong signer), amounts. */
function depositInstruction(
  run: DualRun,
  rng: Prng,
  clients: KeyPairSigner[],
): [CoordinatorInstruction, KeyPairSigner] {
  const roll = rng.int(0, 9);
  if (roll < 7) return [{ kind: "WithdrawDeposit" }, rng.pick(clients)];
  if (roll < 9) {
    return [
      { kind: "SweepForfeited" },
      rng.int(0, 3) === 0 ? rng.pick(clients) : run.mainAuthority,
    ];
  }
  const amount = [0n, RANDOM_DEPOSIT, RANDOM_DEPOSIT + 50n][rng.int(0, 2)];
  return [{ kind: "SetJoinDeposit", amount }, run.mainAuthority];
}

/** The token accounts `ix` carries in a deposit run (one in 8 goes without them). */
function depositSendOptions(
  svm: CoordinatorSvm,
  run: DualRun,
  rng: Prng,
  d: DepositSetup,
  ix: CoordinatorInstruction,
  signer: KeyPairSigner | null,
): DualSendOptions {
  if (ix.kind === "SetJoinDeposit") return setDepositOptions(d);
  const wallet = signer === null ? undefined : d.wallets.get(signer);
  const bare = rng.int(0, 7) === 0;
  if (ix.kind === "JoinRun" && wallet !== undefined && !bare) {
    return {
      extraAccounts: joinDepositAccounts({ tokenAccount: wallet, vault: d.vault }),
      deposit: {
        given: true,
        valid: true,
        funded: svm.tokenBalance(wallet) >= run.model!.joinDeposit.amount,
      },
    };
  }
  const to = ix.kind === "SweepForfeited" ? d.treasury : wallet;
  if (
    (ix.kind === "WithdrawDeposit" || ix.kind === "SweepForfeited") && to !== undefined && !bare
  ) {
    return {
      extraAccounts: depositPayoutAccounts({
        tokenAccount: to,
        vault: d.vault,
        vaultAuthority: d.authority.address,
      }),
      deposit: { given: true, valid: true },
    };
  }
  return {};
}

/**
 * Runs `steps` random instructions of seed `seed` on a new run of `svm` and the model.
 * Returns how often each outcome (`Kind:ok`, `Kind:ErrorName`) and run state was seen.
 */
export async function differential(
  svm: CoordinatorSvm,
  seed: number,
  steps: number,
  opts: { deposit?: boolean } = {},
): Promise<Record<string, number>> {
  const rng = new Prng(seed);
  const run = await DualRun.create({ svm, runId: `diff-${seed}`, permissionless: seed % 2 === 0 });
  await run.expectOk({
    kind: "Update",
    config: randomConfig(rng),
    model: testModel({ coldStartWarmupSteps: 1 }),
  }, run.mainAuthority);
  let now = 5;
  run.setTime(now);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  const clients: KeyPairSigner[] = [];
  for (let i = 0; i < 6; i++) clients.push(await svm.newSigner());
  const deposit = opts.deposit ? await setUpDeposit(svm, run, rng, clients) : null;
  const seen: Record<string, number> = {};
  for (let step = 0; step < steps; step++) {
    if (rng.int(0, 2) === 0) {
      now += rng.int(0, 6);
      run.setTime(now);
    }
    const [ix, signer] = deposit !== null && rng.int(0, 7) === 0
      ? depositInstruction(run, rng, clients)
      : randomInstruction(run, rng, clients);
    const recorded = run.model!.state.paramsDigests.at(-1)?.step;
    const pointsBefore = run.model!.registry.map((r) => r.earned);
    const slashedBefore = run.model!.registry.map((r) => r.slashed);
    const forfeitedBefore = run.model!.joinDeposit.forfeited;
    const sendOpts = deposit === null ? {} : depositSendOptions(svm, run, rng, deposit, ix, signer);
    const result = await run.send(ix, signer, { computeUnitLimit: 1_400_000, ...sendOpts });
    if (deposit !== null) {
      const d = run.model!.joinDeposit;
      assert.equal(svm.tokenBalance(deposit.vault), d.held + d.forfeited, "the vault owes");
      if (d.forfeited > forfeitedBefore) {
        seen["deposit:forfeited"] = (seen["deposit:forfeited"] ?? 0) + 1;
      }
    }
    const newest = run.model?.state.paramsDigests.at(-1)?.step;
    const registry = run.model?.registry ?? [];
    if (registry.some((r, i) => r.earned > (pointsBefore[i] ?? 0n))) {
      seen["earned:paid"] = (seen["earned:paid"] ?? 0) + 1;
    }
    if (registry.some((r) => r.earned === MAX_POINTS)) {
      seen["earned:saturated"] = (seen["earned:saturated"] ?? 0) + 1;
    }
    if (registry.some((r, i) => r.slashed > (slashedBefore[i] ?? 0n))) {
      seen["slashed:applied"] = (seen["slashed:applied"] ?? 0) + 1;
    }
    if (registry.some((r) => r.slashed === MAX_POINTS)) {
      seen["slashed:saturated"] = (seen["slashed:saturated"] ?? 0) + 1;
    }
    if (newest !== undefined && newest !== recorded) {
      seen["digest:recorded"] = (seen["digest:recorded"] ?? 0) + 1;
    }
    if (result.ok && ix.kind === "Update" && ix.meetingAddresses !== undefined) {
      seen["meeting:set"] = (seen["meeting:set"] ?? 0) + 1;
    }
    const key = `${ix.kind}:${result.ok ? "ok" : result.error}`;
    seen[key] = (seen[key] ?? 0) + 1;
    for (const event of verificationEvents(run)) seen[event] = (seen[event] ?? 0) + 1;
    seen[`state:${run.model!.state.runState}`] = (seen[`state:${run.model!.state.runState}`] ?? 0) +
      1;
  }
  return seen;
}
