/**
 * The state behind the localnet RPC: an in-process litesvm (Agave's runtime) with the
 * coordinator program deployed, plus what a validator would add around it: slots that
 * advance with wall time (the Clock sysvar follows, so time-based coordinator transitions
 * happen), a window of recent blockhashes, signature statuses, change notifications, and a
 * bounded history of executed transactions by account (for `getSignaturesForAddress` and
 * `getTransaction`).
 *
 * This is a test harness around the real SVM, not a validator: one process, no
 * consensus, every transaction executes (and "finalizes") the moment it arrives.
 * Time comes from the injected `now`, so tests drive it.
 *
 * @module
 */

import {
  type Address,
  getBase58Decoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  lamports,
  type Transaction,
} from "@solana/kit";
import { Clock, FailedTransactionMetadata, LiteSVM, type TransactionMetadata } from "litesvm";
import { type RpcTransactionError, transactionErrorJson } from "./tx_error.ts";
import {
  DEFAULT_POOL_PROGRAM_ID,
  DEFAULT_PROGRAM_ID,
  DEFAULT_TREASURER_PROGRAM_ID,
} from "../rpc/mod.ts";
import {
  buildProgram,
  PROGRAM_OUTPUT,
  PROGRAM_SOURCES_DIR,
  sourcesHash,
} from "../toolchain/mod.ts";

/** The program id the localnet deploys the coordinator at (and the tools default to). */
export const LOCALNET_PROGRAM_ID: Address = DEFAULT_PROGRAM_ID;
/** The program id the localnet deploys the mining pool at, when it is given the pool's bytes. */
export const LOCALNET_POOL_PROGRAM_ID: Address = DEFAULT_POOL_PROGRAM_ID;
/** The program id the localnet deploys the treasurer at, when it is given the treasurer's bytes. */
export const LOCALNET_TREASURER_PROGRAM_ID: Address = DEFAULT_TREASURER_PROGRAM_ID;
/** Milliseconds per slot (Solana's target). */
export const SLOT_MS = 400;
/** How many slots a blockhash stays valid (Solana: 150). */
export const BLOCKHASH_VALID_SLOTS = 150;

/** An account as the ledger holds it. */
export interface LedgerAccount {
  lamports: bigint;
  data: Uint8Array;
  owner: Address;
  executable: boolean;
}

/** Executed transactions kept for `getTransaction`, oldest dropped first. */
export const MAX_KEPT_TRANSACTIONS = 20_000;
/** Signatures kept per account for `getSignaturesForAddress`, oldest dropped first. */
export const MAX_SIGNATURES_PER_ADDRESS = 1000;

/** An executed transaction as `getTransaction` returns it. */
export interface KeptTransaction {
  /** Its wire bytes. */
  bytes: Uint8Array;
  result: ExecutionResult;
  /** Seconds since the Unix epoch at execution. */
  blockTime: number;
}

/** What happened to one transaction. */
export interface ExecutionResult {
  signature: string;
  slot: bigint;
  /** RPC JSON of the error, or null on success. */
  err: RpcTransactionError | null;
  logs: string[];
  unitsConsumed: bigint;
}

/** A transaction's bytes could not be decoded. */
export class MalformedTransactionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MalformedTransactionError";
  }
}

/** Options of {@linkcode Ledger.create}. */
export interface LedgerOptions {
  /** Where the coordinator program goes (default {@linkcode LOCALNET_PROGRAM_ID}). */
  programId?: Address;
  /** The program's bytes (default: the built .so, built first when missing). */
  programBytes?: Uint8Array;
  /** The mining pool's bytes, deployed at {@linkcode LOCALNET_POOL_PROGRAM_ID} (none: no pool). */
  poolProgramBytes?: Uint8Array;
  /** The treasurer's bytes, deployed at {@linkcode LOCALNET_TREASURER_PROGRAM_ID} (none: none). */
  treasurerProgramBytes?: Uint8Array;
  /** Wall time in ms (default Date.now). */
  now?: () => number;
}

/**
 * Reads the built program, building it first when the file is missing or was built from other
 * sources: a stale build would run yesterday's program against today's clients and fail as a
 * protocol error far from its cause. The build writes beside it (`.sources`) the hash of the C
 * sources and headers of `sources` it came from; a copy, a checkout or a clock cannot fool that.
 */
export async function loadProgramBytes(
  path = PROGRAM_OUTPUT,
  sources = PROGRAM_SOURCES_DIR,
): Promise<Uint8Array> {
  const want = await sourcesHash(sources);
  const stamp = `${path}.sources`;
  if ((await readTextOrNull(stamp))?.trim() === want) {
    const bytes = await readOrNull(path);
    if (bytes !== null) return bytes;
  }
  const program = await buildProgram();
  await Deno.mkdir(new URL(".", `file://${path}`), { recursive: true });
  // Written beside, then renamed: a test process reading them at the same time sees whole files.
  await writeAtomically(path, program.bytes);
  await writeAtomically(stamp, new TextEncoder().encode(`${want}\n`));
  return program.bytes;
}

async function readOrNull(path: string): Promise<Uint8Array | null> {
  try {
    return await Deno.readFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

async function readTextOrNull(path: string): Promise<string | null> {
  const bytes = await readOrNull(path);
  return bytes === null ? null : new TextDecoder().decode(bytes);
}

async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  const partial = `${path}.${Deno.pid}.partial`;
  await Deno.writeFile(partial, bytes);
  await Deno.rename(partial, path);
}

/** litesvm plus slots, blockhashes, statuses and change listeners. */
export class Ledger {
  readonly svm: LiteSVM;
  readonly programId: Address;
  readonly #now: () => number;
  readonly #genesisMs: number;
  #slot = 0n;
  /** blockhash → the slot it was issued in. */
  readonly #blockhashes = new Map<string, bigint>();
  #latestBlockhash = "";
  readonly #statuses = new Map<string, ExecutionResult>();
  /** signature -> the executed transaction (insertion order: oldest first). */
  readonly #transactions = new Map<string, KeptTransaction>();
  /** account -> the signatures of executed transactions naming it, oldest first. */
  readonly #byAddress = new Map<string, string[]>();
  readonly #listeners = new Set<() => void>();

  private constructor(svm: LiteSVM, programId: Address, now: () => number) {
    this.svm = svm;
    this.programId = programId;
    this.#now = now;
    this.#genesisMs = now();
    this.#enterSlot(1n);
  }

  /** A ledger with the coordinator program deployed at `programId`. */
  static async create(opts: LedgerOptions = {}): Promise<Ledger> {
    const bytes = opts.programBytes ?? await loadProgramBytes();
    const svm = new LiteSVM().withBlockhashCheck(false).withTransactionHistory(100_000n);
    const programId = opts.programId ?? LOCALNET_PROGRAM_ID;
    svm.addProgram(programId, bytes);
    if (opts.poolProgramBytes !== undefined) {
      svm.addProgram(LOCALNET_POOL_PROGRAM_ID, opts.poolProgramBytes);
    }
    if (opts.treasurerProgramBytes !== undefined) {
      svm.addProgram(LOCALNET_TREASURER_PROGRAM_ID, opts.treasurerProgramBytes);
    }
    return new Ledger(svm, programId, opts.now ?? Date.now);
  }

  /** The current slot, after catching up with wall time. */
  slot(): bigint {
    this.advance();
    return this.#slot;
  }

  /** Moves to the slot wall time says (one slot per {@linkcode SLOT_MS}); never back. */
  advance(): void {
    const target = 1n + BigInt(Math.max(0, Math.floor((this.#now() - this.#genesisMs) / SLOT_MS)));
    if (target > this.#slot) this.#enterSlot(target);
  }

  #freshBlockhash(slot: bigint): void {
    this.svm.expireBlockhash();
    this.#latestBlockhash = this.svm.latestBlockhash();
    this.#blockhashes.set(this.#latestBlockhash, slot);
  }

  #enterSlot(slot: bigint): void {
    this.#slot = slot;
    const unix = BigInt(Math.floor(this.#now() / 1000));
    this.svm.setClock(new Clock(slot, 0n, 0n, 0n, unix));
    this.#freshBlockhash(slot);
    for (const [hash, at] of this.#blockhashes) {
      if (at + BigInt(BLOCKHASH_VALID_SLOTS) < slot) this.#blockhashes.delete(hash);
    }
  }

  /** The newest blockhash and the last block height it is valid at. */
  latestBlockhash(): { blockhash: string; lastValidBlockHeight: bigint } {
    this.advance();
    return {
      blockhash: this.#latestBlockhash,
      lastValidBlockHeight: this.#slot + BigInt(BLOCKHASH_VALID_SLOTS),
    };
  }

  /** Whether `blockhash` is one of the recent blockhashes. */
  isBlockhashValid(blockhash: string): boolean {
    this.advance();
    return this.#blockhashes.has(blockhash);
  }

  /** Calls `listener` after every change of account state (transactions, airdrops). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const l of [...this.#listeners]) l();
  }

  /** The account at `at`, or null. */
  account(at: Address): LedgerAccount | null {
    const acc = this.svm.getAccount(at);
    if (!acc.exists) return null;
    return {
      lamports: acc.lamports,
      data: acc.data,
      owner: acc.programAddress,
      executable: acc.executable,
    };
  }

  /** Every account owned by `owner`. */
  programAccounts(owner: Address): { pubkey: Address; account: LedgerAccount }[] {
    return this.svm.getProgramAccounts(owner).map((a) => ({
      pubkey: a.address,
      account: {
        lamports: a.lamports,
        data: a.data as Uint8Array,
        owner: a.programAddress,
        executable: a.executable,
      },
    }));
  }

  /** Rent-exempt minimum for `bytes` of data. */
  minimumBalanceForRentExemption(bytes: bigint): bigint {
    return this.svm.minimumBalanceForRentExemption(bytes);
  }

  /** Credits `amount` lamports to `to`; returns a signature-like id for status queries. */
  airdrop(to: Address, amount: bigint): ExecutionResult {
    const slot = this.slot();
    // litesvm signs airdrops with the latest blockhash: a fresh one keeps two equal
    // airdrops in one slot from being the same (AlreadyProcessed) transaction.
    this.#freshBlockhash(slot);
    const result = this.svm.airdrop(to, lamports(amount));
    const signature = result === null || result instanceof FailedTransactionMetadata
      ? `airdrop-${to}-${slot}`
      : getBase58Decoder().decode(result.signature());
    const out: ExecutionResult = {
      signature,
      slot,
      err: result instanceof FailedTransactionMetadata ? transactionErrorJson(result.err()) : null,
      logs: [],
      unitsConsumed: 0n,
    };
    this.#statuses.set(signature, out);
    this.#changed();
    return out;
  }

  /** Decodes wire bytes into a transaction (MalformedTransactionError naming the problem). */
  decode(bytes: Uint8Array): { tx: Transaction; signature: string; blockhash: string } {
    let tx: Transaction;
    let blockhash: string;
    try {
      tx = getTransactionDecoder().decode(bytes);
      blockhash = getCompiledTransactionMessageDecoder().decode(tx.messageBytes).lifetimeToken;
    } catch (e) {
      throw new MalformedTransactionError(
        `cannot decode transaction (${bytes.length} bytes): ${(e as Error).message}`,
      );
    }
    const first = Object.values(tx.signatures)[0];
    if (first === undefined || first === null) {
      throw new MalformedTransactionError("transaction carries no signature");
    }
    return { tx, signature: getBase58Decoder().decode(first), blockhash };
  }

  /** Executes a transaction and records its status. */
  execute(bytes: Uint8Array): ExecutionResult {
    const slot = this.slot();
    const { tx, signature, blockhash } = this.decode(bytes);
    if (!this.#blockhashes.has(blockhash)) {
      return { signature, slot, err: "BlockhashNotFound", logs: [], unitsConsumed: 0n };
    }
    const result = this.#outcome(signature, slot, this.svm.sendTransaction(tx));
    // A duplicate is refused without replacing the first execution's status.
    if (result.err !== "AlreadyProcessed") {
      this.#statuses.set(signature, result);
      this.#keep(tx, bytes, result);
      this.#changed();
    }
    return result;
  }

  /** Records an executed transaction under every account its message names. */
  #keep(tx: Transaction, bytes: Uint8Array, result: ExecutionResult): void {
    const { signature } = result;
    this.#transactions.set(signature, {
      bytes: bytes.slice(),
      result,
      blockTime: Math.floor(this.#now() / 1000),
    });
    if (this.#transactions.size > MAX_KEPT_TRANSACTIONS) {
      this.#transactions.delete(this.#transactions.keys().next().value!);
    }
    const accounts = getCompiledTransactionMessageDecoder().decode(tx.messageBytes).staticAccounts;
    for (const account of new Set(accounts)) {
      const list = this.#byAddress.get(account) ?? [];
      list.push(signature);
      if (list.length > MAX_SIGNATURES_PER_ADDRESS) list.shift();
      this.#byAddress.set(account, list);
    }
  }

  /**
   * The signatures of executed transactions that named `at`, newest first, at most `limit`,
   * starting after `before` when given (as `getSignaturesForAddress` pages).
   */
  signaturesFor(at: Address, opts: { limit: number; before?: string }): KeptTransaction[] {
    const list = this.#byAddress.get(at) ?? [];
    let end = list.length;
    if (opts.before !== undefined) {
      const i = list.lastIndexOf(opts.before);
      end = i < 0 ? 0 : i;
    }
    const out: KeptTransaction[] = [];
    for (let i = end - 1; i >= 0 && out.length < opts.limit; i--) {
      const kept = this.#transactions.get(list[i]);
      if (kept !== undefined) out.push(kept);
    }
    return out;
  }

  /** An executed transaction still kept, or null. */
  transaction(signature: string): KeptTransaction | null {
    return this.#transactions.get(signature) ?? null;
  }

  /** Runs a transaction without committing it. */
  simulate(bytes: Uint8Array): ExecutionResult {
    const slot = this.slot();
    const { tx, signature, blockhash } = this.decode(bytes);
    if (!this.#blockhashes.has(blockhash)) {
      return { signature, slot, err: "BlockhashNotFound", logs: [], unitsConsumed: 0n };
    }
    const sim = this.svm.simulateTransaction(tx);
    return this.#outcome(
      signature,
      slot,
      sim instanceof FailedTransactionMetadata ? sim : sim.meta(),
    );
  }

  #outcome(
    signature: string,
    slot: bigint,
    r: TransactionMetadata | FailedTransactionMetadata,
  ): ExecutionResult {
    if (r instanceof FailedTransactionMetadata) {
      const meta = r.meta();
      return {
        signature,
        slot,
        err: transactionErrorJson(r.err()),
        logs: meta.logs(),
        unitsConsumed: meta.computeUnitsConsumed(),
      };
    }
    return { signature, slot, err: null, logs: r.logs(), unitsConsumed: r.computeUnitsConsumed() };
  }

  /** The recorded status of `signature`, or null when unknown. */
  status(signature: string): ExecutionResult | null {
    return this.#statuses.get(signature) ?? null;
  }
}
