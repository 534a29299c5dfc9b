/**
 * {@linkcode CoordinatorBackend} on Solana: the run is the coordinator program's account
 * (coordinator/solana/), read through `accountSubscribe` and changed by transactions.
 *
 * - **States**: every account notification is decoded; only a higher `nonce` than the
 *   newest seen is accepted (notifications from two RPCs, or a refetch after a
 *   reconnect, may arrive out of order). The subscription reconnects by itself and
 *   refetches the account each time it (re)opens.
 * - **Joining**: `join()` sends `join_run`; after that the backend joins again whenever it
 *   sees WaitingForMembers without its registration pending, because the program starts
 *   every epoch with `nextActive + 1` (each client re-joins per epoch, as in Psyche). When the
 *   run requires a join deposit, every join carries the token account it is paid from
 *   (`depositTokenAccount`, default the wallet's associated token account of the deposit's
 *   mint), the vault and SPL Token; a join the wallet cannot pay for is a final
 *   BackendError("Refused") naming the amount, the mint and the account. The deposit stays in
 *   the vault while the client keeps joining; `deno task solana withdraw-deposit` takes it back.
 * - **Ticks**: nobody else moves the run forward. Every `tickIntervalMs` the backend runs
 *   the TypeScript machine's `tick` on a copy of the newest state at the current time; when
 *   the copy changes, it sends a `tick` transaction with probability 2/len(clients)
 *   (always with at most two), so a few clients, not all, pay for each transition. A tick asks
 *   for the whole transaction's compute budget (`TICK_COMPUTE_UNITS`): closing verification
 *   stages can take more than the default.
 * - **Reports** (witness, warmup witness, health check, verification report, checkpoint) go
 *   through coordinator/solana/rpc/transactions.ts: retries with back-off, then `--rpc-2`.
 * - **Meeting addresses**: the account names the run's relays and bootstrap peers; the backend
 *   says so (`MeetingAddresses`) on the first account that names any and whenever they change,
 *   as the TCP backend passes on its coordinator's `Relays` message, so the client meets its
 *   peers there without `--relay` or `--bootstrap-peer`.
 * - **Claims** (`claim`, the client's `--claim`): when the account shows this wallet more earned
 *   points than it has claimed (an epoch end paid it) and the run has a treasury, the backend
 *   claims them (docs/solana-treasurer.md), creating its participant account the first time. A
 *   refused claim (the vault short, say) is tried again when the points grow or a minute later.
 *
 * Errors: the program's coordinator codes come back as CoordinatorError (same codes as the
 * TCP server), its own codes as CoordinatorProgramError; `NotAuthorizedToJoin` and a
 * missing or different run are a final BackendError("Refused"); no confirmation after every
 * retry is BackendError("Disconnected").
 *
 * The program keeps no witness metadata (Psyche's keeps it for event logs only): `sendWitness`
 * appends its loss, rates and step as the instruction's optional tail, which the program checks
 * and ignores, so a dashboard can read the loss curve back from the transactions (a non-finite
 * number is sent as 0, which the program would refuse). The program has no withdraw instruction: a closed
 * client stays registered until health checks remove it.
 *
 * @module
 */
import {
  type Address,
  getAddressDecoder,
  getAddressEncoder,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import {
  type Checkpoint,
  CoordinatorError,
  type CoordinatorState,
  type HealthCheck,
  isHalted,
  type NodeIdentity,
  tick,
  type VerificationReport,
  type Witness,
  type WitnessMetadata,
  type WitnessProof,
} from "../../coordinator/core/mod.ts";
import {
  BackendError,
  type CallOptions,
  type ClientTelemetry,
  type CoordinatorBackend,
} from "./backend.ts";
import { StateFeed } from "./state_feed.ts";
import {
  AccountDecodeError,
  associatedTokenAddress,
  type CoordinatorAccount,
  type CoordinatorInstruction,
  coordinatorInstruction,
  CoordinatorProgramError,
  decodeCoordinatorAccount,
  type ExtraAccount,
  joinDepositAccounts,
  pendingRegistrations,
  TICK_COMPUTE_UNITS,
} from "../../coordinator/solana/abi/mod.ts";
import { quoteForTerminal, toHex } from "../../common/mod.ts";
import {
  customErrorCode,
  followAccount,
  type SolanaRpcClient,
  TransactionFailedError,
  TransactionSender,
  TransactionUnconfirmedError,
} from "../../coordinator/solana/rpc/mod.ts";
import {
  decodeParticipantAccount,
  participantAddress,
  participantClaimInstruction,
  participantCreateInstruction,
  treasurerErrorName,
  treasuryAddress,
} from "../../coordinator/solana/treasurer/mod.ts";

/** What the backend did, for the client's log. */
export type SolanaBackendEvent =
  | { kind: "Subscribed"; url: string }
  | { kind: "SubscriptionLost"; url: string; reason: string }
  | { kind: "TickSent"; runState: string }
  | { kind: "Joined"; epoch: number }
  /** The run's account names these relays and bootstrap peers (first, or changed). */
  | { kind: "MeetingAddresses"; relays: string[]; bootstrapPeers: string[] }
  | { kind: "Retry"; rpc: string; attempt: number; error: string }
  | { kind: "SendFailed"; what: string; error: string }
  /** Tokens claimed from the run's treasury: `points` new ones, `total` paid for in all. */
  | { kind: "Claimed"; points: bigint; total: bigint; treasury: Address }
  | { kind: "Failed"; error: BackendError };

/** Options of {@linkcode SolanaBackend.connect}. */
export interface SolanaBackendOptions {
  /**
   * RPCs in order of preference (`--rpc`, then `--rpc-2`): transactions fall back along
   * the list, and the account subscription moves to the next WebSocket when one drops.
   */
  rpcs: readonly SolanaRpcClient[];
  /** The wallet: signs and pays; its key is this client's signer on the run. */
  wallet: KeyPairSigner;
  /** This client's libp2p public key (32 bytes), registered with `join_run`. */
  p2pIdentity: Uint8Array;
  /** The coordinator program. */
  programId: Address;
  /** The run's coordinator account. */
  coordinator: Address;
  /** The run id this client expects the account to hold. */
  runId: string;
  /** Milliseconds between tick checks (default 500, as Psyche's client). */
  tickIntervalMs?: number;
  /** Uniform [0, 1) source for the tick lottery (default Math.random). */
  random?: () => number;
  /** Wall-clock milliseconds (default Date.now); the chain's clock follows wall time. */
  now?: () => number;
  /** Transaction attempts per RPC (default 4). */
  attemptsPerRpc?: number;
  /**
   * Claim earned points from the run's treasury (docs/solana-treasurer.md) into `destination`,
   * the wallet's token account of the treasury's mint, whenever the account shows new ones.
   */
  claim?: { treasurerProgramId: Address; destination: Address };
  /** Backend events. */
  onEvent?: (event: SolanaBackendEvent) => void;
  /** Aborts the first fetch. */
  signal?: AbortSignal;
  /**
   * The token account a join deposit is paid from, when the run requires one (default: the
   * wallet's associated token account of the deposit's mint).
   */
  depositTokenAccount?: Address;
}

/** Entries per health-check transaction (fits the 1,232-byte and compute limits). */
const HEALTH_CHECKS_PER_TX = 16;
/** A report with this many entries asks for the whole transaction compute budget. */
const HEALTH_CHECK_UNITS = 1_400_000;

/** Milliseconds before the same state is ticked again when the first tick changed nothing. */
const TICK_RETRY_MS = 2000;

/** Milliseconds before a refused or skipped claim of the same points is tried again. */
export const CLAIM_RETRY_MS = 60_000;

/** A claim the backend made or tried: up to `earned` points, at `at` ms; `paid` when done. */
export interface ClaimTry {
  earned: bigint;
  at: number;
  paid: boolean;
}

/**
 * Whether a backend that last tried `tried` claims `earned` points at `nowMs`: when it has some,
 * and they are more than it last tried, or the last try failed (no treasury, a refusal) at least
 * {@linkcode CLAIM_RETRY_MS} ago. Pure.
 *
 * @example
 * ```ts
 * import { claimDue } from "./solana.ts";
 * const paid = { earned: 10n, at: 0, paid: true };
 * if (claimDue(10n, paid, 1e9) || !claimDue(11n, paid, 1)) throw new Error("only new points");
 * ```
 */
export function claimDue(earned: bigint, tried: ClaimTry | null, nowMs: number): boolean {
  if (earned === 0n) return false;
  if (tried === null || earned > tried.earned) return true;
  return !tried.paid && nowMs - tried.at >= CLAIM_RETRY_MS;
}

/** The probability Psyche's client sends a due tick: 2/len(clients), 1 with at most two. */
export function tickProbability(clients: number): number {
  return clients <= 2 ? 1 : 2 / clients;
}

/**
 * Whether the run's state is due to change at `nowSeconds`: the machine's tick on a copy
 * of `account.state` (with the registry's pending clients in WaitingForMembers) changes it.
 * Pure: the account is not touched.
 */
export function tickDue(account: CoordinatorAccount, nowSeconds: number): boolean {
  const state = account.state;
  if (isHalted(state)) return false;
  const pending = state.runState === "WaitingForMembers"
    ? pendingRegistrations(account).slice(0, state.config.maxClients).map((r) => ({
      signer: r.signer,
      p2pIdentity: r.p2pIdentity,
    }))
    : null;
  try {
    return tick(structuredClone(state), pending, nowSeconds, 0n).kind !== "Unchanged";
  } catch {
    return false;
  }
}

/**
 * What a backend holding `current` does with newly read account bytes: the decoded
 * account when its nonce is higher, null when it is not newer (a stale notification or
 * refetch), or the final BackendError when the bytes are no coordinator (Protocol) or hold
 * another run (Refused, naming both run ids). Pure.
 */
export function nextAccount(
  current: CoordinatorAccount | null,
  data: Uint8Array,
  expect: { runId: string; coordinator: Address },
): CoordinatorAccount | null | BackendError {
  let account: CoordinatorAccount;
  try {
    account = decodeCoordinatorAccount(data);
  } catch (e) {
    if (!(e instanceof AccountDecodeError)) throw e;
    return new BackendError(
      "Protocol",
      `the account at ${expect.coordinator} is not a coordinator: ${e.message}`,
    );
  }
  if (account.state.runId !== expect.runId) {
    return new BackendError(
      "Refused",
      `run id ${quoteForTerminal(expect.runId)} does not match this coordinator's run ` +
        `${quoteForTerminal(account.state.runId)} (account ${expect.coordinator})`,
    );
  }
  if (current !== null && account.nonce <= current.nonce) return null;
  return account;
}

/** Where a run's clients meet: its relays and its bootstrap peers, as two lists of multiaddrs. */
export interface MeetingPlaces {
  relays: string[];
  bootstrapPeers: string[];
}

/**
 * The relays and bootstrap peers of `next` when they differ from those of `previous` (none
 * when `previous` is null), else null: a client acts on each list once, and a run that names
 * none asks nothing of it. Pure.
 */
export function meetingChange(
  previous: CoordinatorAccount | null,
  next: CoordinatorAccount,
): MeetingPlaces | null {
  const before = JSON.stringify(previous?.meetingAddresses ?? []);
  if (JSON.stringify(next.meetingAddresses) === before) return null;
  const of = (kind: string) =>
    next.meetingAddresses.filter((m) => m.kind === kind).map((m) => m.address);
  return { relays: of("Relay"), bootstrapPeers: of("Bootstrap") };
}

/** The Solana implementation of the coordinator backend. */
export class SolanaBackend implements CoordinatorBackend {
  readonly identity: NodeIdentity;
  readonly #o: SolanaBackendOptions;
  readonly #feed = new StateFeed();
  readonly #sender: TransactionSender;
  readonly #stop = new AbortController();
  #account: CoordinatorAccount | null = null;
  #failure: BackendError | null = null;
  #wantJoin = false;
  #joining = false;
  /** The nonce and time of the last tick sent: one tick per state, again after a while. */
  #tickSent: { nonce: bigint; at: number } | null = null;
  #timer: ReturnType<typeof setInterval> | undefined;
  #following: Promise<void> = Promise.resolve();
  #closed = false;
  /** Claims: one at a time; the points last claimed or tried, and when. */
  #claiming = false;
  #claimTried: ClaimTry | null = null;

  private constructor(opts: SolanaBackendOptions) {
    this.#o = opts;
    if (opts.p2pIdentity.length !== 32) {
      throw new RangeError(`p2pIdentity must be 32 bytes, found ${opts.p2pIdentity.length}`);
    }
    this.identity = {
      signer: getAddressEncoder().encode(opts.wallet.address) as Uint8Array,
      p2pIdentity: opts.p2pIdentity,
    };
    this.#sender = new TransactionSender({
      rpcs: opts.rpcs,
      payer: opts.wallet,
      attemptsPerRpc: opts.attemptsPerRpc,
      onRetry: (r) =>
        opts.onEvent?.({
          kind: "Retry",
          rpc: r.rpc,
          attempt: r.attempt,
          error: r.error.message,
        }),
    });
  }

  /**
   * Reads the run's account once (throws the transport error when no RPC answers), then
   * follows it. A missing account or a different run id makes the backend refused.
   */
  static async connect(opts: SolanaBackendOptions): Promise<SolanaBackend> {
    const backend = new SolanaBackend(opts);
    await backend.#refresh(opts.signal, true);
    backend.#start();
    return backend;
  }

  /** The newest decoded account (registry, nonce, authorities), or null. */
  account(): CoordinatorAccount | null {
    return this.#account;
  }

  states(options: CallOptions = {}): AsyncIterable<CoordinatorState> {
    return this.#feed.follow(options.signal);
  }

  latest(): CoordinatorState | null {
    return this.#feed.latest();
  }

  async join(options: CallOptions = {}): Promise<void> {
    this.#usable(options.signal);
    await this.#send("join_run", { kind: "JoinRun", p2pIdentity: this.identity.p2pIdentity }, {
      signal: options.signal,
    });
    this.#wantJoin = true;
    this.#o.onEvent?.({ kind: "Joined", epoch: this.latest()?.progress.epoch ?? 0 });
  }

  async sendWitness(
    witness: Witness,
    metadata: WitnessMetadata,
    paramsDigest: Uint8Array,
    options: CallOptions = {},
  ): Promise<void> {
    this.#usable(options.signal);
    const finite = (x: number) => Number.isFinite(x) ? x : 0;
    const tail = {
      step: metadata.step,
      loss: finite(metadata.loss),
      tokensPerSec: finite(metadata.tokensPerSec),
      bandwidthPerSec: finite(metadata.bandwidthPerSec),
      efficiency: finite(metadata.efficiency),
    };
    await this.#send("witness", { kind: "Witness", witness, paramsDigest, metadata: tail }, {
      signal: options.signal,
    });
  }

  async sendWarmupWitness(
    witness: Witness,
    paramsDigest: Uint8Array,
    options: CallOptions = {},
  ): Promise<void> {
    this.#usable(options.signal);
    await this.#send("warmup_witness", { kind: "WarmupWitness", witness, paramsDigest }, {
      signal: options.signal,
    });
  }

  async sendCooldownWitness(
    proof: WitnessProof,
    paramsDigest: Uint8Array,
    options: CallOptions = {},
  ): Promise<void> {
    this.#usable(options.signal);
    await this.#send("cooldown_witness", { kind: "CooldownWitness", proof, paramsDigest }, {
      signal: options.signal,
    });
  }

  async sendHealthCheck(checks: readonly HealthCheck[], options: CallOptions = {}): Promise<void> {
    this.#usable(options.signal);
    for (let i = 0; i < checks.length; i += HEALTH_CHECKS_PER_TX) {
      const batch = checks.slice(i, i + HEALTH_CHECKS_PER_TX);
      await this.#send("health_check", {
        kind: "HealthCheck",
        checks: batch.map((c) => ({ signer: c.id.signer, proof: c.proof })),
      }, { signal: options.signal, computeUnitLimit: HEALTH_CHECK_UNITS });
    }
  }

  async sendVerificationReport(
    report: VerificationReport,
    options: CallOptions = {},
  ): Promise<void> {
    this.#usable(options.signal);
    await this.#send("verification_report", { kind: "VerificationReport", report }, {
      signal: options.signal,
    });
  }

  /** The program has no withdraw instruction: the health checks remove the client. */
  withdraw(options: CallOptions = {}): Promise<void> {
    this.#usable(options.signal);
    return Promise.resolve();
  }

  /** The program keeps no telemetry (its witness metadata carries the loss): nothing to send. */
  sendTelemetry(_telemetry: ClientTelemetry, options: CallOptions = {}): Promise<void> {
    this.#usable(options.signal);
    return Promise.resolve();
  }

  async sendCheckpoint(repo: Checkpoint, options: CallOptions = {}): Promise<void> {
    this.#usable(options.signal);
    const state = this.latest();
    const me = toHex(this.identity.signer);
    const index = state?.epochState.clients.findIndex((c) => toHex(c.id.signer) === me) ??
      -1;
    // Not a client: the program refuses it with the coordinator's InvalidCheckpoint.
    await this.#send("checkpoint", { kind: "Checkpoint", index: Math.max(0, index), repo }, {
      signal: options.signal,
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#stop.abort(new BackendError("Closed", "the backend was closed"));
    this.#feed.close();
    await this.#following;
  }

  /** Throws when the backend cannot take calls, or `signal` already aborted. */
  #usable(signal?: AbortSignal): void {
    signal?.throwIfAborted();
    if (this.#closed) throw new BackendError("Closed", "the backend was closed");
    if (this.#failure !== null) throw this.#failure;
  }

  #fail(error: BackendError): void {
    if (this.#failure !== null) return;
    this.#failure = error;
    this.#o.onEvent?.({ kind: "Failed", error });
    this.#feed.fail(error);
  }

  async #send(
    what: string,
    ix: CoordinatorInstruction,
    opts: { signal?: AbortSignal; computeUnitLimit?: number } = {},
  ): Promise<void> {
    const instruction: Instruction = coordinatorInstruction({
      programId: this.#o.programId,
      coordinator: this.#o.coordinator,
      signer: ix.kind === "Tick" ? null : this.#o.wallet,
      ix,
      extraAccounts: ix.kind === "JoinRun" ? await this.#depositAccounts() : undefined,
    });
    const signal = opts.signal === undefined
      ? this.#stop.signal
      : AbortSignal.any([opts.signal, this.#stop.signal]);
    try {
      await this.#sender.send([instruction], { signal, computeUnitLimit: opts.computeUnitLimit });
    } catch (e) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (this.#stop.signal.aborted) throw this.#stop.signal.reason;
      if (e instanceof CoordinatorError) throw e;
      if (e instanceof CoordinatorProgramError) {
        if (e.errorName === "InsufficientDeposit" || e.errorName === "DepositRequired") {
          const d = this.#account?.joinDeposit;
          const from = await this.#depositAccounts().then((a) => a?.[0].address ?? "none")
            .catch(() => "none");
          const refused = new BackendError(
            "Refused",
            `${what} refused: run "${this.#o.runId}" requires a join deposit of ` +
              `${d?.amount ?? "?"} of mint ${
                d?.mint ? getAddressDecoder().decode(d.mint) : "?"
              }, and token account ${from} of ${this.#o.wallet.address} cannot pay it ` +
              `(${e.message}); fund it, or name another with --deposit-token-account`,
            { cause: e },
          );
          this.#fail(refused);
          throw refused;
        }
        if (e.errorName === "NotAuthorizedToJoin") {
          const refused = new BackendError(
            "Refused",
            `${what} refused: ${this.#o.wallet.address} may not join run "${this.#o.runId}" ` +
              `(${e.message})`,
            { cause: e },
          );
          this.#fail(refused);
          throw refused;
        }
        throw e;
      }
      if (e instanceof TransactionUnconfirmedError) {
        throw new BackendError("Disconnected", `${what}: ${e.message}`, { cause: e });
      }
      throw e;
    }
  }

  /**
   * join_run's deposit accounts when the run (as last seen) requires a deposit: the token
   * account it is paid from, the vault, SPL Token. Passed on every join (a registration that
   * holds its deposit ignores them); none while the deposit is off.
   */
  async #depositAccounts(): Promise<ExtraAccount[] | undefined> {
    const d = this.#account?.joinDeposit;
    if (d === undefined || d.amount === 0n || d.vault === null || d.mint === null) return undefined;
    const decode = (k: Uint8Array) => getAddressDecoder().decode(k);
    const tokenAccount = this.#o.depositTokenAccount ??
      await associatedTokenAddress(this.#o.wallet.address, decode(d.mint));
    return joinDepositAccounts({ tokenAccount, vault: decode(d.vault) });
  }

  /** Fetches the account from the first RPC that answers and takes it if newer. */
  async #refresh(signal?: AbortSignal, first = false): Promise<void> {
    let lastError: Error | null = null;
    for (const rpc of this.#o.rpcs) {
      let data: Uint8Array | null;
      try {
        data = await rpc.accountData(this.#o.coordinator, signal);
      } catch (e) {
        if (signal?.aborted) throw signal.reason;
        lastError = e as Error;
        continue;
      }
      if (data === null) {
        this.#fail(
          new BackendError(
            "Refused",
            `run "${this.#o.runId}" has no coordinator account at ${this.#o.coordinator}`,
          ),
        );
        return;
      }
      this.#accept(data);
      return;
    }
    if (first) throw lastError ?? new Error("no RPC given");
  }

  /** Decodes account bytes; publishes the state when its nonce is newer. */
  #accept(data: Uint8Array): void {
    if (this.#failure !== null || this.#closed) return;
    const next = nextAccount(this.#account, data, {
      runId: this.#o.runId,
      coordinator: this.#o.coordinator,
    });
    if (next instanceof BackendError) return this.#fail(next);
    if (next === null) return;
    const meeting = meetingChange(this.#account, next);
    this.#account = next;
    // Before the state: the client meets its peers where the run says before it acts on it.
    if (meeting !== null) this.#o.onEvent?.({ kind: "MeetingAddresses", ...meeting });
    this.#feed.publish(next.state);
    this.#maybeRejoin(next);
    this.#maybeClaim(next);
  }

  /** Claims this wallet's new points when the account shows some (an epoch end paid them). */
  #maybeClaim(account: CoordinatorAccount): void {
    const claim = this.#o.claim;
    if (claim === undefined || this.#claiming) return;
    const me = toHex(this.identity.signer);
    const earned = account.registry.find((r) => toHex(r.signer) === me)?.earned ?? 0n;
    const now = (this.#o.now ?? Date.now)();
    if (!claimDue(earned, this.#claimTried, now)) return;
    this.#claiming = true;
    this.#claim(claim, earned)
      .then((paid) => this.#claimTried = { earned, at: now, paid })
      .catch((e) => {
        this.#claimTried = { earned, at: now, paid: false };
        this.#report("participant_claim", e);
      })
      .finally(() => this.#claiming = false);
  }

  /** Claims up to `earned` points; false when the run has no treasury. */
  async #claim(
    claim: { treasurerProgramId: Address; destination: Address },
    earned: bigint,
  ): Promise<boolean> {
    const programId = claim.treasurerProgramId;
    const rpc = this.#o.rpcs[0];
    const signal = this.#stop.signal;
    const treasury = await treasuryAddress(programId, this.#o.coordinator);
    if (await rpc.accountData(treasury, signal) === null) return false;
    const user = this.#o.wallet;
    const participant = await participantAddress(programId, { treasury, user: user.address });
    const before = await rpc.accountData(participant, signal);
    const claimed = before === null ? 0n : decodeParticipantAccount(before).claimed;
    if (claimed >= earned) return true;
    const instructions: Instruction[] = [];
    if (before === null) {
      instructions.push(
        (await participantCreateInstruction({ programId, treasury, user })).instruction,
      );
    }
    instructions.push(
      await participantClaimInstruction({
        programId,
        treasury,
        coordinator: this.#o.coordinator,
        user,
        destination: claim.destination,
      }),
    );
    try {
      await this.#sender.send(instructions, { signal });
    } catch (e) {
      const code = e instanceof TransactionFailedError ? customErrorCode(e.err) : null;
      const name = code === null ? undefined : treasurerErrorName(code);
      if (name === undefined) throw e;
      throw new Error(`${name} (${code})`, { cause: e });
    }
    const after = await rpc.accountData(participant, signal);
    const total = after === null ? earned : decodeParticipantAccount(after).claimed;
    this.#o.onEvent?.({ kind: "Claimed", points: total - claimed, total, treasury });
    return true;
  }

  #maybeRejoin(account: CoordinatorAccount): void {
    if (!this.#wantJoin || this.#joining) return;
    if (account.state.runState !== "WaitingForMembers") return;
    const me = toHex(this.identity.signer);
    const mine = account.registry.find((r) => toHex(r.signer) === me);
    if (mine !== undefined && mine.active === account.nextActive) return;
    this.#joining = true;
    this.#send("join_run", { kind: "JoinRun", p2pIdentity: this.identity.p2pIdentity })
      .then(() => this.#o.onEvent?.({ kind: "Joined", epoch: account.state.progress.epoch }))
      .catch((e) => this.#report("join_run", e))
      .finally(() => this.#joining = false);
  }

  #report(what: string, e: unknown): void {
    if (this.#closed) return;
    this.#o.onEvent?.({ kind: "SendFailed", what, error: (e as Error).message });
  }

  #start(): void {
    this.#following = followAccount(this.#o.rpcs, this.#o.coordinator, (d) => this.#accept(d), {
      signal: this.#stop.signal,
      onOpen: (url) => {
        this.#o.onEvent?.({ kind: "Subscribed", url });
        this.#refresh(this.#stop.signal).catch(() => {});
      },
      onError: (url, e) => this.#o.onEvent?.({ kind: "SubscriptionLost", url, reason: e.message }),
    });
    const random = this.#o.random ?? Math.random;
    const now = this.#o.now ?? Date.now;
    this.#timer = setInterval(() => {
      const account = this.#account;
      if (account === null || this.#failure !== null) return;
      const t = now();
      const sent = this.#tickSent;
      if (sent !== null && sent.nonce === account.nonce && t - sent.at < TICK_RETRY_MS) return;
      if (!tickDue(account, Math.floor(t / 1000))) return;
      if (random() >= tickProbability(account.state.epochState.clients.length)) return;
      this.#tickSent = { nonce: account.nonce, at: t };
      const runState = account.state.runState;
      this.#send("tick", { kind: "Tick" }, { computeUnitLimit: TICK_COMPUTE_UNITS })
        .then(() => this.#o.onEvent?.({ kind: "TickSent", runState }))
        .catch((e) => this.#report("tick", e));
    }, this.#o.tickIntervalMs ?? 500);
  }
}
