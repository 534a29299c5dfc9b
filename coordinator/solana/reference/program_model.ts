/**
 * The coordinator program's reference model in TypeScript: the program's own rules
 * (authorities, permissioned joining, the join registry, nonces, metadata, meeting addresses,
 * config updates, epoch rates, earned and slashed points, the join deposit) around the
 * TypeScript state machine (coordinator/machine*.ts), which is the reference for everything the
 * coordinator does. The C program must reach the same state on the same instructions; the
 * differential tests hold it to that.
 *
 * Pure: the clock comes in with each instruction, nothing is read from the environment.
 * A rejected instruction throws {@linkcode CoordinatorProgramError} and leaves the model
 * as it was (the runtime discards a failed instruction's writes the same way).
 *
 * @module
 */

import { modelRuleViolation } from "./model_rules.ts";
import {
  checkpoint,
  cooldownWitness,
  type CoordinatorConfig,
  CoordinatorError,
  type CoordinatorState,
  healthCheck,
  isHalted,
  type LlmModel,
  type NodeIdentity,
  type Outcome,
  pause,
  resume,
  sha256,
  SNAPSHOT_DTYPES,
  tick,
  validateCoordinatorConfig,
  verificationReport,
  warmupWitness,
  witness,
} from "../../core/mod.ts";
import {
  ACCOUNT_MAX_CLIENTS,
  ACCOUNT_VERSION,
  type CoordinatorAccount,
  type CoordinatorInstruction,
  CoordinatorProgramError,
  type CoordinatorProgramErrorName,
  MAX_DELEGATES,
  MAX_POINTS,
  meetingAddressesProblem,
  placeholderModel,
  uninitializedState,
  zeroConfig,
} from "../abi/mod.ts";
import { equalBytes } from "../../../common/mod.ts";

/** The Clock sysvar fields the program reads. */
export interface ProgramClock {
  unixTimestamp: number;
  slot: bigint;
}

/** Options of {@linkcode initialAccount}. */
export interface InitOptions {
  runId: string;
  mainAuthority: Uint8Array;
  joinAuthority: Uint8Array;
  permissionless: boolean;
}

function fail(name: CoordinatorProgramErrorName, message: string): never {
  throw new CoordinatorProgramError(name, message);
}

/**
 * The tick seed of Psyche's Solana program (`get_random_seed` in
 * architectures/decentralized/solana-coordinator/programs/solana-coordinator/src/instance_state.rs):
 * the first 8 bytes (little-endian) of `sha256(i64le(unixTimestamp) || u64le(slot))`.
 */
export function clockSeed(clock: ProgramClock): bigint {
  const buf = new Uint8Array(16);
  const v = new DataView(buf.buffer);
  v.setBigInt64(0, BigInt(clock.unixTimestamp), true);
  v.setBigUint64(8, clock.slot, true);
  return new DataView(sha256(buf).buffer).getBigUint64(0, true);
}

/** The account `init_coordinator` writes: Uninitialized, no config or model yet. */
export function initialAccount(opts: InitOptions): CoordinatorAccount {
  const state = uninitializedState(
    opts.runId,
    placeholderModel(),
    zeroConfig(ACCOUNT_MAX_CLIENTS),
  );
  return {
    version: ACCOUNT_VERSION,
    permissionless: opts.permissionless,
    nonce: 1n,
    mainAuthority: opts.mainAuthority.slice(),
    joinAuthority: opts.joinAuthority.slice(),
    authorizer: null,
    delegates: [],
    metadata: { name: "", description: "", numParameters: 0, vocabSize: 0 },
    meetingAddresses: [],
    nextActive: 1n,
    registry: [],
    currentEpochRates: { earningRateTotalShared: 0n, slashingRatePerClient: 0n },
    futureEpochRates: { earningRateTotalShared: 0n, slashingRatePerClient: 0n },
    joinDeposit: {
      amount: 0n,
      held: 0n,
      forfeited: 0n,
      mint: null,
      vault: null,
      vaultAuthorityBump: 0,
    },
    state,
  };
}

function nowOf(clock: ProgramClock): number {
  if (clock.unixTimestamp < 0 || clock.unixTimestamp > Number.MAX_SAFE_INTEGER) {
    fail("InvalidClock", "unix timestamp outside [0, 2^53 - 1]");
  }
  return clock.unixTimestamp;
}

/** Runs a machine call, turning CoordinatorError into the program's error. */
function machine<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof CoordinatorError) throw new CoordinatorProgramError(err.code, err.message);
    throw err;
  }
}

function identityOf(signer: Uint8Array): NodeIdentity {
  return { signer, p2pIdentity: signer };
}

function validateConfig(config: CoordinatorConfig): void {
  try {
    validateCoordinatorConfig(config);
  } catch (err) {
    if (err instanceof RangeError) fail("InvalidConfig", err.message);
    throw err;
  }
  // coordinator/config/validate.ts's rule beyond the machine's: every client gets a sequence per
  // step.
  if (config.initMinClients > config.globalBatchSizeStart) {
    fail("InvalidConfig", "config.initMinClients must be at most globalBatchSizeStart");
  }
  if (config.maxClients > ACCOUNT_MAX_CLIENTS) {
    fail("InvalidConfig", `config.maxClients must be at most ${ACCOUNT_MAX_CLIENTS} on Solana`);
  }
}

function validateModel(model: LlmModel): void {
  if (model.maxSeqLen < 1) fail("InvalidModel", "model.maxSeqLen must be at least 1");
  if (model.checkpoint.kind === "Ephemeral") fail("InvalidModel", "Ephemeral checkpoint");
  if (model.optimizer.kind === "Dummy") fail("InvalidModel", "Dummy optimizer");
  if (!SNAPSHOT_DTYPES.includes(model.snapshotDtype)) {
    fail("InvalidModel", "model.snapshotDtype must be f32 or bf16");
  }
  const violation = modelRuleViolation(model);
  if (violation) fail(violation.name, `${violation.issue.path}: ${violation.issue.message}`);
}

function validateColdStart(model: LlmModel, config: CoordinatorConfig): void {
  const max = Math.floor((config.epochTime - config.warmupTime) / config.maxRoundTrainTime);
  if (model.coldStartWarmupSteps > max) {
    fail("InvalidModel", `model.coldStartWarmupSteps must be at most ${max}`);
  }
  const violation = modelRuleViolation(model, config);
  if (violation) fail(violation.name, `${violation.issue.path}: ${violation.issue.message}`);
}

function validateProgress(step: number, epochStartDataIndex: number): void {
  if (step < 1 || epochStartDataIndex > Number.MAX_SAFE_INTEGER) {
    fail("InvalidProgress", "progress.step must be >= 1");
  }
}

/** The signers of the epoch's clients that are Healthy now, in epoch order. */
function healthySigners(state: CoordinatorState): Uint8Array[] {
  return state.epochState.clients.filter((c) => c.state === "Healthy").map((c) => c.id.signer);
}

/** Points plus points, held at 2^64 − 1 (the program's u64) rather than growing past it. */
function addPoints(points: bigint, more: bigint): bigint {
  const sum = points + more;
  return sum > MAX_POINTS ? MAX_POINTS : sum;
}

/**
 * Pays the epoch that `outcome` ended, when it ended successfully (a failed Warmup pays
 * nothing): each of `finishers` (the Healthy clients just before the epoch ended) gets
 * `earningRateTotalShared / finishers.length` points on its wallet's registration, saturating at
 * 2^64 − 1; the remainder is not paid, nor is a wallet that no longer has a registration.
 */
function payEpoch(account: CoordinatorAccount, finishers: Uint8Array[], outcome: Outcome): void {
  if (outcome.kind !== "EpochEnd" || !outcome.success || finishers.length === 0) return;
  const share = account.currentEpochRates.earningRateTotalShared / BigInt(finishers.length);
  for (const signer of finishers) {
    const registration = account.registry.find((r) => equalBytes(r.signer, signer));
    if (registration === undefined) continue;
    registration.earned = addPoints(registration.earned, share);
  }
}

/** The signers of the epoch's clients, live or exited, that a health check dropped or
 * verification ejected. */
function forfeitingSigners(state: CoordinatorState): Uint8Array[] {
  const es = state.epochState;
  return [...es.clients, ...es.exitedClients]
    .filter((c) => c.state === "Dropped" || c.state === "Ejected")
    .map((c) => c.id.signer);
}

/**
 * A successful epoch end forfeits the deposits of `forfeiters` (the Dropped and Ejected clients
 * just before it ended): they move to the forfeited total, and a join the wallet made for the
 * next epoch is cancelled, so it pays again to train again. Each forfeiter's registration also
 * gets the current slashing rate onto its slashed points, saturating at 2^64 − 1, deposit or not.
 */
function forfeitDeposits(
  account: CoordinatorAccount,
  forfeiters: Uint8Array[],
  outcome: Outcome,
): void {
  if (outcome.kind !== "EpochEnd" || !outcome.success) return;
  const d = account.joinDeposit;
  const rate = account.currentEpochRates.slashingRatePerClient;
  for (const signer of forfeiters) {
    const registration = account.registry.find((r) => equalBytes(r.signer, signer));
    if (registration === undefined) continue;
    registration.slashed = addPoints(registration.slashed, rate);
    if (registration.deposit === 0n) continue;
    d.held -= registration.deposit;
    d.forfeited += registration.deposit;
    registration.deposit = 0n;
    if (registration.active === account.nextActive) registration.active = account.nextActive - 1n;
  }
}

/** What paying and forfeiting at the end of the epoch need, taken before it ends. */
function epochEnd(
  account: CoordinatorAccount,
  run: () => Outcome,
): Outcome {
  const finishers = healthySigners(account.state);
  const forfeiters = forfeitingSigners(account.state);
  const outcome = run();
  payEpoch(account, finishers, outcome);
  forfeitDeposits(account, forfeiters, outcome);
  return outcome;
}

/**
 * The full tick: pending = registrations for the next epoch; a new epoch bumps nextActive and
 * takes the future rates as its own; a successful epoch end pays, forfeits deposits and slashes.
 */
function runTick(account: CoordinatorAccount, clock: ProgramClock): Outcome {
  const state = account.state;
  const before = state.runState;
  const pending = account.registry.filter((r) => r.active === account.nextActive)
    .map((r) => ({ signer: r.signer, p2pIdentity: r.p2pIdentity }));
  return epochEnd(account, () => {
    const outcome = machine(() => tick(state, pending, nowOf(clock), clockSeed(clock)));
    if (before === "WaitingForMembers" && state.runState === "Warmup") {
      account.nextActive += 1n;
      account.currentEpochRates = { ...account.futureEpochRates };
    }
    return outcome;
  });
}

function tickIfLive(account: CoordinatorAccount, clock: ProgramClock): void {
  if (!isHalted(account.state)) runTick(account, clock);
}

function requireKey(
  signer: Uint8Array,
  expected: Uint8Array,
  name: CoordinatorProgramErrorName,
): void {
  if (!equalBytes(signer, expected)) fail(name, "wrong signer");
}

function applyUpdate(
  a: CoordinatorAccount,
  ix: CoordinatorInstruction & { kind: "Update" },
): void {
  const s = a.state;
  // Like metadata, meeting addresses may change in any run state; they are checked first.
  if (ix.meetingAddresses !== undefined) {
    const problem = meetingAddressesProblem(ix.meetingAddresses);
    if (problem !== null) fail("InvalidMeetingAddress", problem);
  }
  if (ix.config || ix.model || ix.progress) {
    if (s.runState === "Finished") fail("RunFinished", "the run is Finished");
    if (!isHalted(s)) fail("NotHalted", `the run is ${s.runState}`);
  }
  if (ix.config) {
    validateConfig(ix.config);
    if (s.runState !== "Uninitialized" && ix.config.maxClients !== s.config.maxClients) {
      fail("MaxClientsFixed", "config.maxClients can only change before the run starts");
    }
  }
  if (ix.model) validateModel(ix.model);
  if (ix.progress) validateProgress(ix.progress.step, ix.progress.epochStartDataIndex);
  if (s.runState === "Paused" && (ix.config || ix.model)) {
    validateColdStart(ix.model ?? s.model, ix.config ?? s.config);
  }
  if (ix.metadata) a.metadata = { ...ix.metadata };
  if (ix.meetingAddresses !== undefined) a.meetingAddresses = structuredClone(ix.meetingAddresses);
  if (ix.config) s.config = { ...ix.config };
  if (ix.model) s.model = structuredClone(ix.model);
  if (ix.progress) {
    s.progress = { ...ix.progress };
    // Digests recorded for other steps say nothing about the run from the new progress.
    s.paramsDigests = [];
  }
}

/**
 * What the program sees of the token accounts a deposit instruction carries, which the
 * coordinator account does not hold (the tests describe the accounts they pass).
 */
export interface DepositAccounts {
  /**
   * The instruction carries them: join_run the signer's token account, the vault and SPL Token;
   * withdraw_deposit and sweep_forfeited also the vault authority; set_join_deposit the vault.
   */
  given: boolean;
  /**
   * They are the run's vault, SPL Token and vault authority (set_join_deposit: the vault is a
   * plain token account owned by the vault authority PDA).
   */
  valid: boolean;
  /** join_run: the signer's own unfrozen token account of the mint, holding the deposit. */
  funded?: boolean;
  /** set_join_deposit: the vault's key and mint, and the vault authority's bump. */
  vault?: { key: Uint8Array; mint: Uint8Array; bump: number };
}

function applyJoin(
  a: CoordinatorAccount,
  user: Uint8Array,
  p2p: Uint8Array,
  clock: ProgramClock,
  tokens: DepositAccounts | undefined,
): void {
  if (a.state.runState === "Finished") fail("RunFinished", "the run is Finished");
  const allowed = a.permissionless ||
    (a.authorizer !== null &&
      (equalBytes(a.authorizer, user) || a.delegates.some((d) => equalBytes(d, user))));
  if (!allowed) fail("NotAuthorizedToJoin", "not authorized to join");
  const isPending = (i: number) => a.registry[i].active === a.nextActive;
  let slot = a.registry.findIndex((r) => equalBytes(r.signer, user));
  const alreadyPending = slot >= 0 && isPending(slot);
  if (slot < 0) {
    if (a.registry.length < ACCOUNT_MAX_CLIENTS) slot = a.registry.length;
    else {
      // Stale registrations only: not in the next epoch, nor the running one (its payout looks
      // them up by wallet), and no earned or slashed points or deposit, which a reuse would
      // destroy.
      slot = a.registry.findIndex((r) =>
        r.active + 1n < a.nextActive && r.earned === 0n && r.deposit === 0n && r.slashed === 0n
      );
      if (slot < 0) fail("ClientsFull", "no registration is stale and without points");
    }
  }
  const pendingCount = a.registry.filter((_, i) => isPending(i)).length;
  if (!alreadyPending && pendingCount + 1 > a.state.config.globalBatchSizeEnd) {
    fail("MoreClientsThanBatches", "more pending clients than sequences per step");
  }
  // A registration reused for another wallet starts from no points.
  const own = a.registry[slot] !== undefined && equalBytes(a.registry[slot].signer, user)
    ? a.registry[slot]
    : undefined;
  const d = a.joinDeposit;
  const due = d.amount > 0n && (own?.deposit ?? 0n) === 0n;
  if (due) {
    if (!tokens?.given) fail("DepositRequired", "the run requires a join deposit");
    if (!tokens.valid) fail("InvalidDepositAccounts", "not the run's vault or SPL Token");
    if (!tokens.funded) fail("InsufficientDeposit", "the token account cannot pay the deposit");
    d.held += d.amount;
  }
  a.registry[slot] = {
    signer: user.slice(),
    p2pIdentity: p2p.slice(),
    active: a.nextActive,
    earned: own?.earned ?? 0n,
    slashed: own?.slashed ?? 0n,
    deposit: due ? d.amount : own?.deposit ?? 0n,
  };
  tickIfLive(a, clock);
}

/** One instruction as the program sees it. */
export interface InstructionStep {
  ix: CoordinatorInstruction;
  /** Account 1's key (the signer); null when the instruction has none. */
  signer: Uint8Array | null;
  /** The Clock sysvar when it runs. */
  clock: ProgramClock;
  /** The deposit instructions' token accounts (absent: none given). */
  deposit?: DepositAccounts;
}

/** Pays `amount` from the vault: the payout accounts must be given and be the run's. */
function payFromVault(tokens: DepositAccounts | undefined): void {
  if (!tokens?.given) fail("NotEnoughAccounts", "the payout needs six accounts");
  if (!tokens.valid) fail("InvalidDepositAccounts", "not the run's vault, SPL Token or authority");
}

const RUNNING_EPOCH_STATES = ["Warmup", "RoundTrain", "RoundWitness", "Cooldown"];

/**
 * Applies `step.ix`, sent by `step.signer` at `step.clock`, to a copy of `account` and
 * returns it; throws
 * {@linkcode CoordinatorProgramError} when the program would reject it. Returns null
 * after FreeCoordinator (the account is closed).
 */
export function applyInstruction(
  account: CoordinatorAccount,
  step: InstructionStep,
): CoordinatorAccount | null {
  const { ix, signer, clock } = step;
  const a = structuredClone(account);
  const s = a.state;
  const user = () => signer ?? fail("NotEnoughAccounts", "no signer");
  switch (ix.kind) {
    case "InitCoordinator":
      fail("AlreadyInitialized", "the account is initialized");
      break;
    case "Update":
      requireKey(user(), a.mainAuthority, "NotMainAuthority");
      applyUpdate(a, ix);
      break;
    case "SetPaused": {
      requireKey(user(), a.mainAuthority, "NotMainAuthority");
      const now = nowOf(clock);
      if (ix.paused) machine(() => pause(s, now));
      else {
        if (s.runState === "Paused" || s.runState === "Uninitialized") {
          validateConfig(s.config);
          validateModel(s.model);
          validateColdStart(s.model, s.config);
          validateProgress(s.progress.step, s.progress.epochStartDataIndex);
        }
        machine(() => resume(s, now));
      }
      break;
    }
    case "JoinRun":
      applyJoin(a, user(), ix.p2pIdentity, clock, step.deposit);
      break;
    case "Tick":
      runTick(a, clock);
      break;
    case "Witness": {
      const from = identityOf(user());
      const now = nowOf(clock);
      machine(() => witness(s, from, ix.witness, now, ix.paramsDigest));
      tickIfLive(a, clock);
      break;
    }
    case "WarmupWitness": {
      const from = identityOf(user());
      const now = nowOf(clock);
      machine(() => warmupWitness(s, from, ix.witness, now, clockSeed(clock), ix.paramsDigest));
      tickIfLive(a, clock);
      break;
    }
    case "CooldownWitness": {
      const from = identityOf(user());
      const now = nowOf(clock);
      machine(() => cooldownWitness(s, from, ix.proof, ix.paramsDigest, now));
      tickIfLive(a, clock);
      break;
    }
    case "HealthCheck": {
      const from = identityOf(user());
      nowOf(clock);
      const checks = ix.checks.map((c) => ({ id: identityOf(c.signer), proof: c.proof }));
      machine(() => healthCheck(s, from, checks));
      tickIfLive(a, clock);
      break;
    }
    case "Checkpoint": {
      const from = identityOf(user());
      const now = nowOf(clock);
      epochEnd(a, () => machine(() => checkpoint(s, from, ix.index, ix.repo, now)));
      tickIfLive(a, clock);
      break;
    }
    case "VerificationReport": {
      const from = identityOf(user());
      nowOf(clock);
      machine(() => verificationReport(s, from, ix.report));
      tickIfLive(a, clock);
      break;
    }
    case "FreeCoordinator":
      requireKey(user(), a.mainAuthority, "NotMainAuthority");
      if (!isHalted(s)) fail("NotHalted", `the run is ${s.runState}`);
      return null;
    case "GrantAuthorizer": {
      requireKey(user(), a.joinAuthority, "NotJoinAuthority");
      const next = ix.authorizer.every((b) => b === 0) ? null : ix.authorizer.slice();
      const same = next === null
        ? a.authorizer === null
        : a.authorizer !== null && equalBytes(a.authorizer, next);
      if (!same) {
        a.authorizer = next;
        a.delegates = [];
      }
      break;
    }
    case "SetFutureEpochRates": {
      requireKey(user(), a.mainAuthority, "NotMainAuthority");
      const rates = a.futureEpochRates;
      if (ix.earningRateTotalShared !== undefined) {
        rates.earningRateTotalShared = ix.earningRateTotalShared;
      }
      if (ix.slashingRatePerClient !== undefined) {
        rates.slashingRatePerClient = ix.slashingRatePerClient;
      }
      break;
    }
    case "SetJoinDeposit": {
      requireKey(user(), a.mainAuthority, "NotMainAuthority");
      const vault = step.deposit?.given ? step.deposit.vault : undefined;
      if (vault === undefined) fail("NotEnoughAccounts", "set_join_deposit needs the vault");
      const d = a.joinDeposit;
      const same = d.vault !== null && equalBytes(d.vault, vault.key);
      if (!same && (d.held !== 0n || d.forfeited !== 0n)) {
        fail("DepositVaultInUse", "the current vault still owes deposits");
      }
      if (!step.deposit!.valid) fail("InvalidDepositAccounts", "not a vault of the PDA");
      d.amount = ix.amount;
      d.mint = vault.mint.slice();
      d.vault = vault.key.slice();
      d.vaultAuthorityBump = vault.bump;
      break;
    }
    case "WithdrawDeposit": {
      // The program takes ix.registration when it names the signer's registration and searches
      // otherwise: the same registration either way, so the model ignores the hint.
      const r = a.registry.find((r) => equalBytes(r.signer, user()));
      if (r === undefined || r.deposit === 0n) fail("NoDeposit", "the signer holds no deposit");
      const running = RUNNING_EPOCH_STATES.includes(s.runState) && r.active + 1n === a.nextActive;
      if (r.active === a.nextActive || running) {
        fail("DepositLocked", "pending for the next epoch or in the running one");
      }
      payFromVault(step.deposit);
      a.joinDeposit.held -= r.deposit;
      r.deposit = 0n;
      break;
    }
    case "SweepForfeited": {
      requireKey(user(), a.mainAuthority, "NotMainAuthority");
      if (a.joinDeposit.forfeited === 0n) fail("NoDeposit", "nothing is forfeited");
      payFromVault(step.deposit);
      a.joinDeposit.forfeited = 0n;
      break;
    }
    case "SetDelegates": {
      if (a.authorizer === null) fail("NotAuthorizer", "no authorizer is granted");
      requireKey(user(), a.authorizer, "NotAuthorizer");
      if (ix.clear) a.delegates = [];
      for (const key of ix.delegates) {
        if (a.delegates.some((d) => equalBytes(d, key))) continue;
        if (a.delegates.length >= MAX_DELEGATES) fail("DelegatesFull", "256 delegates");
        a.delegates.push(key.slice());
      }
      break;
    }
  }
  a.nonce += 1n;
  return a;
}
