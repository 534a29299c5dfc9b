/**
 * What `list-runs` shows of a coordinator account, read from a few short slices of it rather
 * than its 227,888 bytes. getProgramAccounts' and getMultipleAccounts' `dataSlice` return one
 * byte range of each account, and the fields list-runs prints lie in four places: the header
 * through the epoch's client count, the registry (each registration's `active`, for the pending
 * count), the current epoch rates and the join deposit. Offsets come from layout.ts. Pure:
 * read_commands.ts fetches the slices.
 *
 * @module
 */
import { RUN_STATES, type RunState } from "../../core/mod.ts";
import {
  ACCOUNT_MAGIC,
  ACCOUNT_MAX_CLIENTS,
  ACCOUNT_VERSION,
  type CoordinatorAccount,
  OFFSETS,
  pendingRegistrations,
} from "./account.ts";
import { AccountDecodeError, limit } from "./account_error.ts";
import { layoutConstant, structLayout } from "./layout.ts";

/** A byte range of an account, as RPC's `dataSlice` takes it. */
export interface AccountSlice {
  offset: number;
  length: number;
}

const E = structLayout("epoch_state_t").offsets;
const REG = structLayout("registration_t");
const RATES = structLayout("epoch_rates_t").offsets;
const DEPOSIT = structLayout("join_deposit_t").offsets;
const RUN_ID_BYTES = layoutConstant("RUN_ID_BYTES");

/** The slices list-runs reads (the registry's depends on its length: {@linkcode registrySlice}). */
export const RUN_LISTING_SLICES = Object.freeze(
  {
    /** Magic through the epoch's client count: the header, config, model and metadata sit between. */
    head: { offset: 0, length: OFFSETS.epochState + E.clientsLen + 2 },
    /** The current epoch's earning rate. */
    rates: { offset: OFFSETS.currentEpochRates + RATES.earningRateTotalShared, length: 8 },
    /** The join deposit's amount through its mint. */
    deposit: { offset: OFFSETS.joinDeposit + DEPOSIT.amount, length: DEPOSIT.mint + 32 },
    /** The nonce alone: read again last, it tells whether the run changed between the reads. */
    nonce: { offset: OFFSETS.nonce, length: 8 },
  } satisfies Record<string, AccountSlice>,
);

/** The first `registered` registrations (only those count as pending). */
export function registrySlice(registered: number): AccountSlice {
  return { offset: OFFSETS.registry, length: registered * REG.size };
}

/** The header fields list-runs prints, plus what the other reads need (nonce, nextActive). */
export interface RunHead {
  nonce: bigint;
  runId: string;
  mainAuthority: Uint8Array;
  runState: RunState;
  epoch: number;
  step: number;
  /** Clients in the running epoch. */
  clients: number;
  /** Registrations in use. */
  registered: number;
  nextActive: bigint;
}

/** Everything a list-runs line shows of a run. */
export interface RunListing extends Omit<RunHead, "nonce" | "nextActive"> {
  /** Registrations pending for the next epoch. */
  pending: number;
  earningRateTotalShared: bigint;
  joinDeposit: { amount: bigint; mint: Uint8Array | null };
}

const utf8Strict = new TextDecoder("utf-8", { fatal: true });

/** `bytes` as a DataView whose offsets are the account's; refuses a slice that is too short. */
function sliceView(name: string, slice: AccountSlice, bytes: Uint8Array) {
  if (bytes.length < slice.length) {
    const end = slice.offset + slice.length;
    throw new AccountDecodeError(
      `${name} slice`,
      slice.offset,
      `expected ${slice.length} bytes (account bytes ${slice.offset}..${end}), found ${bytes.length}`,
    );
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = (offset: number) => offset - slice.offset;
  return {
    u8: (o: number) => v.getUint8(at(o)),
    u16: (o: number) => v.getUint16(at(o), true),
    u32: (o: number) => v.getUint32(at(o), true),
    u64: (o: number) => v.getBigUint64(at(o), true),
    bytes: (o: number, n: number) => bytes.slice(at(o), at(o) + n),
  };
}

/**
 * Decodes the head slice; AccountDecodeError (the field, as the full decoder names it) when it
 * is short or not a version-7 coordinator account, so that list-runs leaves out what
 * decodeCoordinatorAccount would refuse for these fields.
 */
export function decodeRunHead(bytes: Uint8Array): RunHead {
  const s = sliceView("head", RUN_LISTING_SLICES.head, bytes);
  if (!ACCOUNT_MAGIC.every((b, i) => s.u8(OFFSETS.magic + i) === b)) {
    throw new AccountDecodeError("magic", 0, "not an initialized coordinator account");
  }
  const version = s.u32(OFFSETS.version);
  if (version !== ACCOUNT_VERSION) {
    throw new AccountDecodeError(
      "version",
      OFFSETS.version,
      `expected ${ACCOUNT_VERSION}, found ${version}`,
    );
  }
  const runIdLen = limit("runId.length", OFFSETS.runIdLen, s.u8(OFFSETS.runIdLen), RUN_ID_BYTES);
  let runId: string;
  try {
    runId = utf8Strict.decode(s.bytes(OFFSETS.runId, runIdLen));
  } catch {
    throw new AccountDecodeError("runId", OFFSETS.runId, "not UTF-8");
  }
  const code = s.u8(OFFSETS.runState);
  const runState = RUN_STATES[code];
  if (runState === undefined) {
    throw new AccountDecodeError("runState", OFFSETS.runState, `unknown code ${code}`);
  }
  const clientsAt = OFFSETS.epochState + E.clientsLen;
  return {
    nonce: s.u64(OFFSETS.nonce),
    runId,
    mainAuthority: s.bytes(OFFSETS.mainAuthority, 32),
    runState,
    epoch: s.u16(OFFSETS.epoch),
    step: s.u32(OFFSETS.step),
    clients: limit("epochState.clients.length", clientsAt, s.u16(clientsAt), ACCOUNT_MAX_CLIENTS),
    registered: limit(
      "registry.length",
      OFFSETS.registryLen,
      s.u16(OFFSETS.registryLen),
      ACCOUNT_MAX_CLIENTS,
    ),
    nextActive: s.u64(OFFSETS.nextActive),
  };
}

/** The nonce from its slice (compared with the head's to see whether the run changed). */
export function decodeNonce(bytes: Uint8Array): bigint {
  return sliceView("nonce", RUN_LISTING_SLICES.nonce, bytes).u64(OFFSETS.nonce);
}

/** The slices after the head, as read for one run. */
export interface RunTailSlices {
  /** At least {@linkcode registrySlice}(head.registered); longer is fine (it is per batch). */
  registry: Uint8Array;
  rates: Uint8Array;
  deposit: Uint8Array;
}

/** A run's listing from its head and the other slices (AccountDecodeError when one is short). */
export function decodeRunListing(head: RunHead, slices: RunTailSlices): RunListing {
  const reg = sliceView("registry", registrySlice(head.registered), slices.registry);
  let pending = 0;
  for (let i = 0; i < head.registered; i++) {
    if (reg.u64(OFFSETS.registry + i * REG.size + REG.offsets.active) === head.nextActive) {
      pending++;
    }
  }
  const { rates, deposit } = RUN_LISTING_SLICES;
  const d = sliceView("deposit", deposit, slices.deposit);
  const mint = d.bytes(OFFSETS.joinDeposit + DEPOSIT.mint, 32);
  const { nonce: _, nextActive: __, ...shown } = head;
  return {
    ...shown,
    pending,
    earningRateTotalShared: sliceView("rates", rates, slices.rates).u64(rates.offset),
    joinDeposit: {
      amount: d.u64(deposit.offset),
      mint: mint.every((b) => b === 0) ? null : mint,
    },
  };
}

/** The same listing from a wholly decoded account (a run read whole, and the tests). */
export function runListingOf(a: CoordinatorAccount): RunListing {
  return {
    runId: a.state.runId,
    mainAuthority: a.mainAuthority,
    runState: a.state.runState,
    epoch: a.state.progress.epoch,
    step: a.state.progress.step,
    clients: a.state.epochState.clients.length,
    registered: a.registry.length,
    pending: pendingRegistrations(a).length,
    earningRateTotalShared: a.currentEpochRates.earningRateTotalShared,
    joinDeposit: { amount: a.joinDeposit.amount, mint: a.joinDeposit.mint },
  };
}
