/**
 * Compute units of the coordinator program's instructions at a given number of clients,
 * measured on the real program in litesvm: join, the WaitingForMembers -> Warmup tick,
 * warmup witness, witness (the most expensive of a round's witnesses), the round tick,
 * a one-entry health check and the entries one health-check transaction can carry, an update
 * setting four meeting addresses of the longest length, and set_future_epoch_rates. Also the
 * witness and meeting-update transactions' sizes against the 1,232-byte limit. With `epochEnd`
 * the run goes on to the tick that ends the epoch and pays every Healthy finisher its points.
 *
 * With `verification` every round's results are sampled (`verificationPercent` 100: the most
 * tasks a round opens), so the round tick includes the sampling and seating, and the
 * verification reports are measured too: a first report, the report that decides a pass, the
 * report that decides a fail (ejecting the trainer), and the round tick that closes contested
 * stages (tie-breakers seated, silent seats ejected).
 *
 * `deno run -A coordinator/solana/testing/compute_units.ts` prints the table for 16 and 256
 * clients, without and with verification; compute_units_test.ts holds the figures under
 * Solana's limits.
 *
 * @module
 */

import { AccountRole, type Address, getAddressDecoder, type KeyPairSigner } from "@solana/kit";
import {
  addressBytes,
  CoordinatorSvm,
  MAX_COMPUTE_UNITS,
  MAX_TRANSACTION_BYTES,
  type SendResult,
} from "./svm.ts";
import {
  bloomAdd,
  type CoordinatorConfig,
  createBloom,
  currentRound,
  type LlmModel,
  previousRound,
  roundClients,
  roundSelection,
  roundWitnessQuorum,
  sha256,
  stageSeats,
  type VerificationTask,
  type Witness,
  witnessBloomParameters,
} from "../../core/mod.ts";
import {
  ACCOUNT_SIZE,
  type CoordinatorAccount,
  type CoordinatorInstruction,
  depositPayoutAccounts,
  depositVaultAuthority,
  joinDepositAccounts,
  MAX_MEETING_ADDRESS_BYTES,
  MAX_MEETING_ADDRESSES,
  type MeetingAddress,
} from "../abi/mod.ts";

/** The parameter digest reports carry. */
const DIGEST = new Uint8Array(32).fill(0xd1);

/** Compute units (and sizes) measured for one client count. */
export interface ComputeUnitReport {
  /** The measured run's coordinator account (left in RoundTrain at height 3). */
  coordinator: Address;
  clients: number;
  join: number;
  tickStartEpoch: number;
  warmupWitness: number;
  witnessMax: number;
  tickNextRound: number;
  healthCheckOne: number;
  /** Most health-check entries one transaction carries (compute units or size, 1.4M budget). */
  healthChecksPerTransaction: number;
  /** Compute units of that fullest health-check transaction. */
  healthCheckFull: number;
  witnessTransactionBytes: number;
  /** An update naming the most meeting addresses, each of the longest length. */
  updateMeetingFull: number;
  /** That update's transaction (with a second signer paying and a compute-budget instruction). */
  meetingTransactionBytes: number;
  /** set_future_epoch_rates with both rates. */
  setFutureEpochRates: number;
  /** With `epochEnd`: the tick that ends Cooldown, paying and slashing (0 otherwise). */
  tickEndEpoch: number;
  /** Clients that tick paid. */
  epochFinishers: number;
  accountBytes: number;
  /** Measured with `verification` only (0 otherwise). */
  verification: VerificationUnits;
  /** Measured with `deposit` only (0 otherwise). */
  deposit: DepositUnits;
}

/** Compute units of the join deposit (a run that requires one; joins then pay by CPI). */
export interface DepositUnits {
  /** set_join_deposit, checking a new vault (its PDA found from the seeds). */
  setJoinDeposit: number;
  /** The costliest join that paid its deposit (the last of `n`: the longest registry search). */
  join: number;
  /**
   * With `epochEnd`: the last finisher's withdrawal after the epoch ended, naming its registry
   * slot (the hint the program checks instead of searching).
   */
  withdraw: number;
  /** With `epochEnd`: the finisher before it withdrawing without the hint (a long search). */
  withdrawSearch: number;
  /** With `epochEnd`: the sweep of the forfeit of the client the health check dropped. */
  sweep: number;
}

/** Compute units of verification (a run with `verificationPercent` 100). */
export interface VerificationUnits {
  /** A report that decides nothing (the first of a stage, or one after the decision). */
  report: number;
  /** The report that decides a pass (the second of three seats). */
  decidePass: number;
  /** The report that decides a fail: the trainer is ejected, its results rejected. */
  decideFail: number;
  /** The round tick that closes contested stages: tie-breakers seated, silent seats ejected. */
  tickCloseStages: number;
  /** Tasks whose stage that tick closed. */
  stagesClosed: number;
  /** The round tick after a round whose witnesses just made their quorum: the rest are idle. */
  tickIdleWitnesses: number;
  /** Silent witnesses that tick ejected. */
  idleWitnesses: number;
}

/** Options of {@linkcode measureComputeUnits}. */
export interface ComputeUnitOptions {
  /** Sample every round's results (verificationPercent 100) and measure the reports. */
  verification?: boolean;
  /**
   * After the health checks, pause (pending) so round 3 ends in Cooldown, and measure the tick
   * that ends it, paying every client still Healthy (not with `verification`). The account is
   * then left Paused instead of in RoundTrain.
   */
  epochEnd?: boolean;
  /**
   * Require a join deposit: every client pays by CPI on
   * join; with `epochEnd`, the client the health check dropped forfeits, the last client
   * withdraws and the authority sweeps.
   */
  deposit?: boolean;
}

/** The deposit amount of the measured runs that require one. */
const MEASURED_DEPOSIT = 1_000_000n;

const CONFIG: Omit<CoordinatorConfig, "maxClients" | "initMinClients" | "minClients"> = {
  warmupTime: 50,
  cooldownTime: 5,
  maxRoundTrainTime: 50,
  roundWitnessTime: 5,
  globalBatchSizeWarmupTokens: 0,
  epochTime: 10_000,
  totalSteps: 1000,
  witnessNodes: 0,
  globalBatchSizeStart: 512,
  globalBatchSizeEnd: 512,
  verificationPercent: 0,
  waitingForMembersExtraTime: 1,
  verificationBarEpochs: 4,
};

const MODEL: LlmModel = {
  architecture: "HfLlama",
  dataType: "Pretraining",
  maxSeqLen: 2048,
  coldStartWarmupSteps: 0,
  snapshotDtype: "f32",
  dataLocation: { kind: "Dummy" },
  checkpoint: { kind: "Hub", repo: { repoId: "org/model", revision: null } },
  lrSchedule: { kind: "Constant", baseLr: 3e-4, warmupSteps: 0, warmupInitLr: 0 },
  optimizer: {
    kind: "Distro",
    clipGradNorm: 1,
    weightDecay: null,
    compressionDecay: 0.999,
    compressionTopk: 64,
    compressionChunk: 64,
    quantize1bit: true,
  },
};

/** The most meeting addresses, each as long as the program allows. */
function fullestMeeting(): MeetingAddress[] {
  const peer = "12D3KooWHFrmLWTTDD4NodngtRMEVYgxrsDMp4F9iSwYntZ9WjHa";
  const tail = `/tcp/443/wss/p2p/${peer}`;
  const host = "r".repeat(MAX_MEETING_ADDRESS_BYTES - "/dns4/".length - tail.length);
  return Array.from({ length: MAX_MEETING_ADDRESSES }, (_, i) => ({
    kind: i === 0 ? "Relay" : "Bootstrap",
    address: `/dns4/${host}${tail}`,
  }));
}

function must(r: SendResult, what: string): SendResult {
  if (!r.ok) throw new Error(`${what} failed: ${r.error}\n${r.logs.join("\n")}`);
  return r;
}

function report(
  account: CoordinatorAccount,
  index: number,
  seen: Uint8Array[],
  warmup: boolean,
): Witness {
  const state = account.state;
  const { numBits, numKeys } = witnessBloomParameters(state.config.maxClients);
  // Keys differ per witness, as real clients' random keys do: with one key set for all, a
  // false positive for the client never seen would be in every bloom and make it "healthy".
  const keys = new BigUint64Array(numKeys).map((_, k) =>
    BigInt(k + 1 + 97 * index) * 0x9e3779b97f4a7c15n
  );
  const participantBloom = createBloom(numBits, keys);
  for (const s of seen) bloomAdd(participantBloom, sha256(s));
  const proof = warmup
    ? { position: index, index, witness: false }
    : roundSelection(state.config, currentRound(state)).witnessProof(index);
  return {
    proof,
    participantBloom,
    broadcastBloom: createBloom(numBits, keys),
    broadcastMerkle: new Uint8Array(32).fill(1),
  };
}

/** Runs one epoch's worth of instructions with `n` clients and records their costs. */
export async function measureComputeUnits(
  n: number,
  svm?: CoordinatorSvm,
  opts: ComputeUnitOptions = {},
): Promise<ComputeUnitReport> {
  const csvm = svm ?? await CoordinatorSvm.create();
  const main = await csvm.newSigner();
  const verifying = opts.verification === true;
  const { coordinator, result } = await csvm.createRun({
    runId: `cu-${n}${verifying ? "-v" : ""}`,
    mainAuthority: main,
    joinAuthority: main.address,
    permissionless: true,
  });
  must(result, "init");
  const send = (ix: CoordinatorInstruction, s: KeyPairSigner | null) =>
    csvm.send(coordinator, ix, { signer: s, computeUnitLimit: MAX_COMPUTE_UNITS });
  const maxClients = Math.max(n, 16);
  must(
    await send({
      kind: "Update",
      config: {
        ...CONFIG,
        maxClients,
        initMinClients: n,
        minClients: Math.max(1, n >> 1),
        verificationPercent: verifying ? 100 : 0,
      },
      model: MODEL,
    }, main),
    "update",
  );
  const meeting = must(
    await send({ kind: "Update", meetingAddresses: fullestMeeting() }, main),
    "meeting addresses",
  );
  const rates = must(
    await send({
      kind: "SetFutureEpochRates",
      earningRateTotalShared: 1_000_000_007n,
      slashingRatePerClient: 5n,
    }, main),
    "set future epoch rates",
  );
  const deposit: DepositUnits = {
    setJoinDeposit: 0,
    join: 0,
    withdraw: 0,
    withdrawSearch: 0,
    sweep: 0,
  };
  const vault = opts.deposit === true ? await depositVault(csvm, coordinator, main, deposit) : null;
  let now = 100;
  csvm.setClock(now, 1n);
  must(await send({ kind: "SetPaused", paused: false }, main), "resume");
  const clients: KeyPairSigner[] = [];
  const wallets = new Map<KeyPairSigner, Address>();
  let join = 0;
  for (let i = 0; i < n; i++) {
    const c = await csvm.newSigner();
    clients.push(c);
    const ix: CoordinatorInstruction = { kind: "JoinRun", p2pIdentity: addressBytes(c.address) };
    let units: number;
    if (vault === null) {
      units = must(await send(ix, c), "join").computeUnits;
    } else {
      const wallet = await csvm.createTokenAccount(vault.mint, c.address, MEASURED_DEPOSIT);
      wallets.set(c, wallet);
      units = must(
        await csvm.send(coordinator, ix, {
          signer: c,
          computeUnitLimit: MAX_COMPUTE_UNITS,
          extraAccounts: joinDepositAccounts({ tokenAccount: wallet, vault: vault.vault }),
        }),
        "join with deposit",
      ).computeUnits;
      deposit.join = Math.max(deposit.join, units);
    }
    join = Math.max(join, units);
  }
  csvm.setClock(now += 2, 2n);
  const tickStartEpoch = must(await send({ kind: "Tick" }, null), "tick WFM").computeUnits;
  const bySigner = new Map(clients.map((c) => [c.address as string, c]));
  const signerOf = (acc: CoordinatorAccount, i: number): KeyPairSigner =>
    bySigner.get(encodeAddress(acc.state.epochState.clients[i].id.signer))!;
  let warmupWitness = 0;
  let acc = csvm.coordinatorAccount(coordinator);
  for (let i = 0; acc.state.runState === "Warmup"; i++) {
    const r = must(
      await send(
        { kind: "WarmupWitness", witness: report(acc, i, [], true), paramsDigest: DIGEST },
        signerOf(acc, i),
      ),
      "warmup witness",
    );
    warmupWitness = Math.max(warmupWitness, r.computeUnits);
    acc = csvm.coordinatorAccount(coordinator);
  }
  const everyone = clients.map((c) => addressBytes(c.address));
  let witnessMax = 0;
  let witnessTransactionBytes = 0;
  let tickNextRound = 0;
  const verification: VerificationUnits = {
    report: 0,
    decidePass: 0,
    decideFail: 0,
    tickCloseStages: 0,
    stagesClosed: 0,
    tickIdleWitnesses: 0,
    idleWitnesses: 0,
  };
  /**
   * The next silent seat of the task's current stage held by a Healthy client says `verdict`;
   * returns the units.
   */
  const verify = async (task: VerificationTask, verdict: "Pass" | "Fail") => {
    const account = csvm.coordinatorAccount(coordinator);
    const es = account.state.epochState;
    const live = es.verificationTasks.find((t) =>
      t.height === task.height && t.trainer === task.trainer
    )!;
    const index = stageSeats(live).filter((s) => s.verdict === null)
      .map((s) => es.clients.findIndex((c) => c.epochIndex === s.verifier))
      .find((i) => i >= 0 && es.clients[i].state === "Healthy")!;
    const fail = verdict === "Fail";
    return must(
      await send({
        kind: "VerificationReport",
        report: {
          height: task.height,
          trainer: task.trainer,
          verdict,
          evidence: fail ? "ResultMismatch" : "None",
          detail: fail ? 812_000 : 0,
        },
      }, signerOf(account, index)),
      "verification report",
    ).computeUnits;
  };
  // Every healthy witness of `account`'s round reports while the round takes reports (each
  // report built on the live account); a RoundTrain still open then ends by its timeout tick.
  const witnessRound = async (account: CoordinatorAccount, timeoutSlot: bigint) => {
    const selection = roundSelection(account.state.config, currentRound(account.state));
    for (const i of selection.witnessIndices()) {
      const live = csvm.coordinatorAccount(coordinator);
      const runState = live.state.runState;
      if (runState !== "RoundTrain" && runState !== "RoundWitness") break;
      if (live.state.epochState.clients[i]?.state !== "Healthy") continue;
      must(
        await send(
          { kind: "Witness", witness: report(live, i, everyone, false), paramsDigest: DIGEST },
          signerOf(live, i),
        ),
        "witness",
      );
    }
    if (csvm.coordinatorAccount(coordinator).state.runState === "RoundTrain") {
      csvm.setClock(now += 60, timeoutSlot);
      must(await send({ kind: "Tick" }, null), "tick train timeout");
    }
  };
  // Rounds 0..2: every witness reports; the last client is never seen after round 0.
  for (let round = 0; round < 3; round++) {
    acc = csvm.coordinatorAccount(coordinator);
    const sel = roundSelection(acc.state.config, currentRound(acc.state));
    const lazy = encodeAddress(
      acc.state.epochState.clients[acc.state.epochState.clients.length - 1].id.signer,
    );
    const seen = round === 0 ? everyone : everyone.filter((s) => encodeAddress(s) !== lazy);
    for (const i of sel.witnessIndices()) {
      const r = must(
        await send(
          {
            kind: "Witness",
            witness: report(acc, i, seen, false),
            paramsDigest: DIGEST,
            // As the Solana backend sends it: the metadata tail counts in the size.
            metadata: {
              step: 1,
              loss: 3.5,
              tokensPerSec: 1e3,
              bandwidthPerSec: 1e5,
              efficiency: 1,
            },
          },
          signerOf(acc, i),
        ),
        "witness",
      );
      witnessMax = Math.max(witnessMax, r.computeUnits);
      witnessTransactionBytes = Math.max(witnessTransactionBytes, r.transactionBytes);
    }
    // Every seat of the new tasks passes: the second report decides, the third comes after the
    // decision (the task stays open until its stage closes); nobody is ejected.
    const opened = csvm.coordinatorAccount(coordinator).state.epochState.verificationTasks
      .filter((t) => t.decided === null);
    for (const task of opened) {
      verification.report = Math.max(verification.report, await verify(task, "Pass"));
      verification.decidePass = Math.max(verification.decidePass, await verify(task, "Pass"));
      verification.report = Math.max(verification.report, await verify(task, "Pass"));
    }
    csvm.setClock(now += 10, BigInt(10 + round));
    tickNextRound = Math.max(
      tickNextRound,
      must(await send({ kind: "Tick" }, null), "tick round").computeUnits,
    );
  }
  acc = csvm.coordinatorAccount(coordinator);
  const prev = previousRound(acc.state)!;
  const prevSel = roundSelection(acc.state.config, prev);
  const prevClients = roundClients(acc.state, prev.height);
  const last = prevClients.length - 1;
  const reporter = signerOf(acc, 0);
  const check = { signer: prevClients[last].id.signer, proof: prevSel.committeeProof(last) };
  const one = await send({ kind: "HealthCheck", checks: [check] }, reporter);
  must(one, "health check");
  const perEntry = one.computeUnits;
  // The most entries one transaction carries: repeat the (still unhealthy) entry until the
  // transaction runs out of compute units or bytes.
  let healthChecksPerTransaction = 1;
  let healthCheckFull = perEntry;
  for (let k = 2; k <= 64; k++) {
    const r = await send({ kind: "HealthCheck", checks: Array(k).fill(check) }, reporter);
    if (!r.ok || r.transactionBytes > MAX_TRANSACTION_BYTES) break;
    healthChecksPerTransaction = k;
    healthCheckFull = r.computeUnits;
  }
  let tickEndEpoch = 0;
  let epochFinishers = 0;
  if (opts.epochEnd === true && !verifying) {
    // A pending pause: round 3 ends in Cooldown, whose end pays the epoch and pauses the run.
    must(await send({ kind: "SetPaused", paused: true }, main), "pause");
    acc = csvm.coordinatorAccount(coordinator);
    await witnessRound(acc, 50n);
    csvm.setClock(now += 10, 51n);
    must(await send({ kind: "Tick" }, null), "tick to Cooldown");
    if (csvm.coordinatorAccount(coordinator).state.runState !== "Cooldown") {
      throw new Error("round 3 did not end in Cooldown");
    }
    csvm.setClock(now += 10, 52n);
    tickEndEpoch = must(await send({ kind: "Tick" }, null), "tick end of epoch").computeUnits;
    epochFinishers = csvm.coordinatorAccount(coordinator).registry.filter((r) => r.earned > 0n)
      .length;
    if (vault !== null) {
      const payout = (signer: KeyPairSigner, to: Address, registration?: number) =>
        csvm.send(
          coordinator,
          signer === main ? { kind: "SweepForfeited" } : {
            kind: "WithdrawDeposit",
            registration,
          },
          {
            signer,
            computeUnitLimit: MAX_COMPUTE_UNITS,
            extraAccounts: depositPayoutAccounts({
              tokenAccount: to,
              vault: vault.vault,
              vaultAuthority: vault.authority,
            }),
          },
        );
      // The last client is the one the health check dropped: the one before it withdraws naming
      // its registry slot, the one before that without the hint.
      const finisher = clients[clients.length - 2];
      const slot = csvm.coordinatorAccount(coordinator).registry.findIndex((r) =>
        encodeAddress(r.signer) === finisher.address
      );
      deposit.withdraw = must(await payout(finisher, wallets.get(finisher)!, slot), "withdraw")
        .computeUnits;
      const searching = clients[clients.length - 3];
      deposit.withdrawSearch = must(await payout(searching, wallets.get(searching)!), "withdraw")
        .computeUnits;
      const treasury = await csvm.createTokenAccount(vault.mint, main.address, 0n);
      deposit.sweep = must(await payout(main, treasury), "sweep").computeUnits;
    }
  }
  if (verifying) {
    // Round 3's start sampled round 2: a fail decides one task (its trainer is ejected); the
    // others get one fail each and no more, so when their stage closes (round 4's end) they go
    // to tie-breakers and their two silent seats are ejected.
    const [first, ...rest] = csvm.coordinatorAccount(coordinator).state.epochState
      .verificationTasks.filter((t) => t.decided === null);
    await verify(first, "Fail");
    verification.decideFail = await verify(first, "Fail");
    await verify(first, "Fail");
    for (const task of rest) await verify(task, "Fail");
    verification.stagesClosed = rest.length;
    for (let round = 3; round < 5; round++) {
      acc = csvm.coordinatorAccount(coordinator);
      await witnessRound(acc, BigInt(20 + 2 * round));
      csvm.setClock(now += 10, BigInt(21 + 2 * round));
      const tick = must(await send({ kind: "Tick" }, null), "tick round").computeUnits;
      if (round === 4) verification.tickCloseStages = tick;
    }
    // Round 5: a bare quorum of its witnesses report; the silent rest are ejected at its end.
    acc = csvm.coordinatorAccount(coordinator);
    const round = currentRound(acc.state);
    const quorum = roundWitnessQuorum(acc.state.config, round);
    const healthy = roundSelection(acc.state.config, round).witnessIndices()
      .filter((i) => acc.state.epochState.clients[i]?.state === "Healthy");
    for (const i of healthy.slice(0, quorum)) {
      const live = csvm.coordinatorAccount(coordinator);
      must(
        await send(
          { kind: "Witness", witness: report(live, i, everyone, false), paramsDigest: DIGEST },
          signerOf(live, i),
        ),
        "witness",
      );
    }
    // The silent witnesses are ejected by whichever tick ends the round: since a quorum of
    // witnesses ends RoundTrain, that can be the first of these two; the one that ejected counts.
    const idleBefore = idleWitnessRecords(csvm.coordinatorAccount(coordinator));
    csvm.setClock(now += 60, 40n);
    const trainEnd = must(await send({ kind: "Tick" }, null), "tick train timeout").computeUnits;
    const idleAfterFirst = idleWitnessRecords(csvm.coordinatorAccount(coordinator));
    csvm.setClock(now += 10, 41n);
    const roundEnd = must(await send({ kind: "Tick" }, null), "tick idle").computeUnits;
    verification.tickIdleWitnesses = idleAfterFirst > idleBefore ? trainEnd : roundEnd;
    verification.idleWitnesses = idleWitnessRecords(csvm.coordinatorAccount(coordinator)) -
      idleBefore;
  }
  return {
    coordinator,
    clients: n,
    join,
    tickStartEpoch,
    warmupWitness,
    witnessMax,
    tickNextRound,
    healthCheckOne: perEntry,
    healthChecksPerTransaction,
    healthCheckFull,
    witnessTransactionBytes,
    updateMeetingFull: meeting.computeUnits,
    meetingTransactionBytes: meeting.transactionBytes,
    setFutureEpochRates: rates.computeUnits,
    tickEndEpoch,
    epochFinishers,
    accountBytes: ACCOUNT_SIZE,
    verification,
    deposit,
  };
}

/** A vault for the run's deposit, set by set_join_deposit (its units go to `units`). */
async function depositVault(
  csvm: CoordinatorSvm,
  coordinator: Address,
  main: KeyPairSigner,
  units: DepositUnits,
): Promise<{ mint: Address; vault: Address; authority: Address }> {
  const mint = await csvm.createMint();
  const authority = await depositVaultAuthority(csvm.programId, coordinator);
  const vault = await csvm.createTokenAccount(mint, authority.address, 0n);
  units.setJoinDeposit = must(
    await csvm.send(coordinator, { kind: "SetJoinDeposit", amount: MEASURED_DEPOSIT }, {
      signer: main,
      computeUnitLimit: MAX_COMPUTE_UNITS,
      extraAccounts: [{ address: vault, role: AccountRole.READONLY }],
    }),
    "set join deposit",
  ).computeUnits;
  return { mint, vault, authority: authority.address };
}

function idleWitnessRecords(acc: CoordinatorAccount): number {
  return acc.state.ejections.filter((r) => r.cause === "IdleWitness").length;
}

function encodeAddress(bytes: Uint8Array): string {
  return getAddressDecoder().decode(bytes);
}

if (import.meta.main) {
  const svm = await CoordinatorSvm.create();
  const rows = [];
  for (const verification of [false, true]) {
    for (const n of [16, 256]) {
      const { coordinator: _, verification: v, deposit: _d, ...row } = await measureComputeUnits(
        n,
        svm,
        { verification, epochEnd: !verification },
      );
      rows.push({ verification, ...row, ...(verification ? v : {}) });
    }
  }
  console.log(`limits: ${MAX_COMPUTE_UNITS} compute units, ${MAX_TRANSACTION_BYTES} bytes`);
  console.table(rows);
  const deposits = [];
  for (const n of [16, 256]) {
    const r = await measureComputeUnits(n, svm, { epochEnd: true, deposit: true });
    deposits.push({ clients: n, ...r.deposit, tickEndEpoch: r.tickEndEpoch });
  }
  console.log("with a join deposit (litesvm's bundled SPL Token):");
  console.table(deposits);
}
