/**
 * The read-only views of `deno task solana` (list-runs, show-run, show-user / json-dump-user,
 * can-join) as pure functions of decoded accounts: what they print, as JSON and as text.
 * read_commands.ts fetches the accounts and calls these.
 *
 * {@linkcode canJoin} mirrors the coordinator program's join_run (program.c) check by check, so
 * that a join attempt succeeds exactly when it says yes (read_commands_test.ts checks that
 * against the program in litesvm). It cannot foresee the tick a join sends on a live run.
 *
 * @module
 */
import { type Address, getAddressDecoder } from "@solana/kit";
import {
  ACCOUNT_MAX_CLIENTS,
  type CoordinatorAccount,
  type RunListing,
  runListingOf,
  SPL_TOKEN_PROGRAM_ADDRESS,
} from "../abi/mod.ts";
import type { TreasuryAccount } from "../treasurer/mod.ts";

/** Bytes of an SPL Token account. */
const TOKEN_ACCOUNT_BYTES = 165;
/** The SPL Token account state byte's "Initialized" (1); 2 is Frozen. */
const TOKEN_INITIALIZED = 1;

/** What can-join needs to know of the token account a join would pay its deposit from. */
export interface DepositSource {
  address: Address;
  /** Null when no account exists there, or it is not an initialized SPL Token account. */
  account: { mint: Uint8Array; owner: Uint8Array; amount: bigint } | null;
}

/** Reads an SPL Token account's mint, owner and amount (null when `data` is not one). */
export function tokenAccountOf(
  programOwner: Address | null,
  data: Uint8Array | null,
): DepositSource["account"] {
  if (data === null || programOwner !== SPL_TOKEN_PROGRAM_ADDRESS) return null;
  if (data.length !== TOKEN_ACCOUNT_BYTES || data[108] !== TOKEN_INITIALIZED) return null;
  return {
    mint: data.slice(0, 32),
    owner: data.slice(32, 64),
    amount: new DataView(data.buffer, data.byteOffset, data.length).getBigUint64(64, true),
  };
}

/** One reason a join would be refused: the program's error name and what to do about it. */
export interface JoinRefusal {
  error:
    | "RunFinished"
    | "NotAuthorizedToJoin"
    | "ClientsFull"
    | "MoreClientsThanBatches"
    | "InsufficientDeposit";
  message: string;
}

/** can-join's answer: `reasons` is empty exactly when `canJoin`. */
export interface JoinVerdict {
  canJoin: boolean;
  reasons: JoinRefusal[];
}

const sameKey = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((x, i) => x === b[i]);
const isZero = (a: Uint8Array) => a.every((x) => x === 0);
const base58 = (k: Uint8Array) => getAddressDecoder().decode(k);

/** The wallet's registration slot (the last one with its key, as the program finds it), or -1. */
export function registrationSlot(account: CoordinatorAccount, wallet: Uint8Array): number {
  let slot = -1;
  account.registry.forEach((r, i) => {
    if (sameKey(r.signer, wallet)) slot = i;
  });
  return slot;
}

/** The program's may_join: permissionless, or the authorizer, or one of its delegates. */
function mayJoin(account: CoordinatorAccount, wallet: Uint8Array): boolean {
  if (account.permissionless) return true;
  const authorizer = account.authorizer;
  if (authorizer === null || isZero(authorizer)) return false;
  return sameKey(authorizer, wallet) || account.delegates.some((d) => sameKey(d, wallet));
}

/**
 * The program's is_reusable: a full registry may give slot `i` to a new wallet when its wallet
 * joined neither the next epoch nor the running one and it holds no points (earned or slashed)
 * and no deposit.
 */
export function isReusable(account: CoordinatorAccount, i: number): boolean {
  const r = account.registry[i];
  return r.active + 1n < account.nextActive && r.earned === 0n && r.deposit === 0n &&
    r.slashed === 0n;
}

/**
 * Whether `wallet` may join the run now, and every reason it may not, in the order join_run
 * checks them (the program stops at the first): the run Finished; a permissioned run whose
 * authorizer is not the wallet and has not named it a delegate; a full registry without the
 * wallet's registration or a reusable one; more pending clients than the batch has sequences;
 * a deposit due and `source` missing, not the wallet's of the deposit's mint, or holding less.
 * `source` is ignored while the run takes no deposit or the wallet's registration holds one.
 *
 * @example
 * ```ts ignore
 * const verdict = canJoin(account, walletBytes, { address: ata, account: tokenAccountOf(owner, data) });
 * if (!verdict.canJoin) console.log(verdict.reasons.map((r) => r.error));
 * ```
 */
export function canJoin(
  account: CoordinatorAccount,
  wallet: Uint8Array,
  source: DepositSource | null,
): JoinVerdict {
  const reasons: JoinRefusal[] = [];
  if (account.state.runState === "Finished") {
    reasons.push({ error: "RunFinished", message: "the run is Finished" });
  }
  if (!mayJoin(account, wallet)) {
    reasons.push({
      error: "NotAuthorizedToJoin",
      message: account.authorizer === null
        ? "the run is permissioned and its join authority has granted no authorizer"
        : `the run is permissioned: only its authorizer ${base58(account.authorizer)} and the ` +
          `${account.delegates.length} delegate(s) it named may join`,
    });
  }
  const len = account.registry.length;
  let slot = registrationSlot(account, wallet);
  const alreadyPending = slot >= 0 && account.registry[slot].active === account.nextActive;
  if (slot < 0 && len === ACCOUNT_MAX_CLIENTS) {
    slot = account.registry.findIndex((_, i) => isReusable(account, i));
    if (slot < 0) {
      reasons.push({
        error: "ClientsFull",
        message: `all ${ACCOUNT_MAX_CLIENTS} registrations are taken and none is stale (joined ` +
          "neither the next nor the running epoch, with no earned or slashed points and no deposit)",
      });
    }
  } else if (slot < 0) slot = len;
  const pending = account.registry.filter((r) => r.active === account.nextActive).length;
  const batch = account.state.config.globalBatchSizeEnd;
  if (!alreadyPending && pending + 1 > batch) {
    reasons.push({
      error: "MoreClientsThanBatches",
      message: `${pending} client(s) are pending for the next epoch and its batch has ` +
        `${batch} sequence(s)`,
    });
  }
  const d = account.joinDeposit;
  const holds = slot >= 0 && slot < len && sameKey(account.registry[slot].signer, wallet) &&
    account.registry[slot].deposit > 0n;
  if (d.amount > 0n && !holds && d.mint !== null) {
    const problem = depositProblem(source, d.mint, wallet, d.amount);
    if (problem !== null) reasons.push({ error: "InsufficientDeposit", message: problem });
  }
  return { canJoin: reasons.length === 0, reasons };
}

function depositProblem(
  source: DepositSource | null,
  mint: Uint8Array,
  wallet: Uint8Array,
  amount: bigint,
): string | null {
  const due = `joining pays a deposit of ${amount} of ${base58(mint)}`;
  if (source === null) return `${due}: name the token account with --deposit-token-account`;
  const t = source.account;
  if (t === null) return `${due}, and ${source.address} is not an initialized SPL Token account`;
  if (!sameKey(t.mint, mint)) return `${due}, and ${source.address} holds ${base58(t.mint)}`;
  if (!sameKey(t.owner, wallet)) {
    return `${due}, and ${source.address} belongs to ${base58(t.owner)}, not the wallet`;
  }
  if (t.amount < amount) return `${due}, and ${source.address} holds only ${t.amount}`;
  return null;
}

/** can-join's text: "yes" or "no" and one line a reason. */
export function formatVerdict(runId: string, wallet: Address, v: JoinVerdict): string {
  if (v.canJoin) return `${wallet} can join run "${runId}"`;
  return [
    `${wallet} cannot join run "${runId}":`,
    ...v.reasons.map((r) => `  ${r.error}: ${r.message}`),
  ].join("\n");
}

/** One line of list-runs. */
export interface RunSummary {
  address: Address;
  runId: string;
  mainAuthority: Address;
  state: string;
  epoch: number;
  step: number;
  /** Clients in the running epoch. */
  clients: number;
  /** Registrations pending for the next epoch. */
  pending: number;
  /** Registrations (at most ACCOUNT_MAX_CLIENTS). */
  registered: number;
  /** Points the running epoch shares (u64 as a decimal string). */
  earningRate: string;
  /** The join deposit, or null when none is required. */
  joinDeposit: { amount: string; mint: Address } | null;
}

/** list-runs' line for one run, from the fields it shows (run_listing.ts). */
export function runSummaryOf(address: Address, l: RunListing): RunSummary {
  const d = l.joinDeposit;
  return {
    address,
    runId: l.runId,
    mainAuthority: base58(l.mainAuthority),
    state: l.runState,
    epoch: l.epoch,
    step: l.step,
    clients: l.clients,
    pending: l.pending,
    registered: l.registered,
    earningRate: l.earningRateTotalShared.toString(),
    joinDeposit: d.amount === 0n || d.mint === null
      ? null
      : { amount: d.amount.toString(), mint: base58(d.mint) },
  };
}

/** list-runs' line for a run read whole. */
export function runSummary(address: Address, a: CoordinatorAccount): RunSummary {
  return runSummaryOf(address, runListingOf(a));
}

/** Rows as a table: columns padded to their widest cell, two spaces apart. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  return [header, ...rows].map((r) => r.map((x, c) => x.padEnd(widths[c])).join("  ").trimEnd())
    .join("\n");
}

/** list-runs' text: one line a run (or a sentence when there is none). */
export function formatRuns(runs: RunSummary[]): string {
  if (runs.length === 0) return "no runs";
  return table(
    ["RUN", "STATE", "EPOCH", "STEP", "CLIENTS", "PENDING", "EARNING", "JOIN DEPOSIT", "ACCOUNT"],
    runs.map((r) => [
      r.runId,
      r.state,
      String(r.epoch),
      String(r.step),
      String(r.clients),
      String(r.pending),
      r.earningRate,
      r.joinDeposit === null ? "-" : `${r.joinDeposit.amount} of ${r.joinDeposit.mint}`,
      r.address,
    ]),
  );
}

/** Whether the registration at `slot` joined the epoch that is running (Warmup..Cooldown). */
function inRunningEpoch(a: CoordinatorAccount, slot: number): boolean {
  const live = ["Warmup", "RoundTrain", "RoundWitness", "Cooldown"].includes(a.state.runState);
  return live && a.registry[slot].active + 1n === a.nextActive;
}

/** What a registration is doing: pending for the next epoch, in the running one, or neither. */
export function registrationStatus(a: CoordinatorAccount, slot: number): string {
  if (a.registry[slot].active === a.nextActive) return "pending";
  return inRunningEpoch(a, slot) ? "in the running epoch" : "idle";
}

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

/**
 * show-run's text: the run, its rates, its join deposit and each client's earned and slashed
 * points and deposit.
 */
export function formatRun(address: Address, a: CoordinatorAccount): string {
  const s = runSummary(address, a);
  const d = a.joinDeposit;
  const join = a.permissionless
    ? "permissionless"
    : a.authorizer === null
    ? "permissioned, no authorizer granted"
    : `permissioned: authorizer ${base58(a.authorizer)}, ${a.delegates.length} delegate(s)`;
  const lines = [
    `run "${s.runId}" at ${address}`,
    `  state ${s.state}, epoch ${s.epoch}, step ${s.step}; main authority ${s.mainAuthority}`,
    `  joining: ${join}`,
    `  this epoch shares ${a.currentEpochRates.earningRateTotalShared} points; the next ` +
    `${a.futureEpochRates.earningRateTotalShared}`,
    `  slashing rate ${a.currentEpochRates.slashingRatePerClient} (next ` +
    `${a.futureEpochRates.slashingRatePerClient}) slashed points per client dropped or ejected ` +
    "in an epoch that ends successfully (informational; the treasurer pays earned points)",
    d.mint === null || d.amount === 0n
      ? `  no join deposit${d.forfeited > 0n ? ` (forfeited, not swept: ${d.forfeited})` : ""}`
      : `  join deposit ${d.amount} of ${base58(d.mint)}: held ${d.held}, forfeited ${d.forfeited}`,
  ];
  if (a.registry.length === 0) return [...lines, "  no registrations"].join("\n");
  const rows = a.registry.map((r, i) => [
    String(i),
    base58(r.signer),
    registrationStatus(a, i),
    r.earned.toString(),
    r.slashed.toString(),
    r.deposit.toString(),
  ]);
  const registry = table(["SLOT", "WALLET", "STATUS", "EARNED", "SLASHED", "DEPOSIT"], rows);
  return [...lines, ...registry.split("\n").map((l) => `  ${l}`)].join("\n");
}

/** The treasury part of json-dump-user (null when the run has no treasury). */
export interface UserTreasury {
  address: Address;
  vault: Address;
  vaultAmount: bigint;
  totalClaimed: bigint;
  /** The user's participant account, and what it claimed (0 before it exists). */
  participant: Address;
  participantCreated: boolean;
  claimed: bigint;
}

/**
 * json-dump-user's JSON: the wallet's registration (slot, status, p2p identity, earned and
 * slashed points, deposit held and whether it is locked), and the run's treasury with what the wallet claimed
 * and may claim (u64 values as decimal strings). Pools are not linked to runs by any program,
 * so they are not part of it (json-dump-pool --lender shows a lender's position).
 */
export function userJson(
  run: { address: Address; account: CoordinatorAccount },
  wallet: Address,
  walletKey: Uint8Array,
  treasury: UserTreasury | null,
): Record<string, unknown> {
  const a = run.account;
  const slot = registrationSlot(a, walletKey);
  const r = slot < 0 ? null : a.registry[slot];
  const earned = r?.earned ?? 0n;
  const locked = r !== null && r.deposit > 0n && registrationStatus(a, slot) !== "idle";
  return {
    run: run.address,
    runId: a.state.runId,
    wallet,
    registration: r === null ? null : {
      slot,
      status: registrationStatus(a, slot),
      pending: r.active === a.nextActive,
      active: r.active.toString(),
      p2pIdentity: hex(r.p2pIdentity),
      earned: r.earned.toString(),
      slashed: r.slashed.toString(),
      deposit: r.deposit.toString(),
      depositLocked: locked,
      depositWithdrawable: r.deposit > 0n && !locked ? r.deposit.toString() : "0",
    },
    earned: earned.toString(),
    treasury: treasury === null ? null : {
      address: treasury.address,
      vault: treasury.vault,
      vaultAmount: treasury.vaultAmount.toString(),
      totalClaimed: treasury.totalClaimed.toString(),
      participant: treasury.participant,
      participantCreated: treasury.participantCreated,
      claimed: treasury.claimed.toString(),
      claimableNow: earned > treasury.claimed ? (earned - treasury.claimed).toString() : "0",
    },
  };
}

/** show-user's text, from json-dump-user's JSON. */
export function formatUser(json: ReturnType<typeof userJson>): string {
  const j = json as {
    runId: string;
    wallet: string;
    registration: null | Record<string, string | number | boolean>;
    earned: string;
    treasury: null | Record<string, string | boolean>;
  };
  const lines = [`${j.wallet} in run "${j.runId}"`];
  const r = j.registration;
  if (r === null) lines.push("  no registration");
  else {
    lines.push(
      `  registration ${r.slot}: ${r.status}; p2p identity ${r.p2pIdentity}`,
      `  earned ${r.earned} points, slashed ${r.slashed} (informational)`,
      r.deposit === "0"
        ? "  no join deposit held"
        : `  join deposit ${r.deposit} held, ${
          r.depositLocked ? "locked (pending or in the running epoch)" : "withdrawable"
        }`,
    );
  }
  const t = j.treasury;
  lines.push(
    t === null
      ? "  no treasury for this run"
      : `  treasury ${t.address}: vault holds ${t.vaultAmount}, ${t.totalClaimed} claimed in all; ` +
        `this wallet claimed ${t.claimed}, may claim ${t.claimableNow} now`,
    "  pools: not linked to runs by the pool program (see json-dump-pool --lender)",
  );
  return lines.join("\n");
}

/** The treasury part of json-dump-user from a decoded treasury (see {@linkcode UserTreasury}). */
export function userTreasury(
  at: Address,
  t: TreasuryAccount,
  vaultAmount: bigint,
  participant: { address: Address; claimed: bigint | null },
): UserTreasury {
  return {
    address: at,
    vault: t.vault,
    vaultAmount,
    totalClaimed: t.totalClaimed,
    participant: participant.address,
    participantCreated: participant.claimed !== null,
    claimed: participant.claimed ?? 0n,
  };
}
