/**
 * Sending coordinator transactions the way Psyche's clients do: a fresh blockhash, the
 * payer's signature, preflight on, confirmation by polling the signature status; on
 * transport failures retry with exponential back-off (x1.5) and then fall back to the
 * next RPC (`--rpc-2`). A refusal by the program is final and comes back as the typed
 * error: {@linkcode CoordinatorError} for the machine's codes (6000+), the program's own
 * {@linkcode CoordinatorProgramError} (6100+), {@linkcode TransactionFailedError} for the
 * rest (missing funds, bad signature).
 *
 * @module
 */

import {
  appendTransactionMessageInstructions,
  type Blockhash,
  createTransactionMessage,
  type Instruction,
  type KeyPairSigner,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { RpcResponseError, RpcTransportError, type SolanaRpcClient } from "./rpc_client.ts";
import {
  COORDINATOR_ERROR_BASE,
  CoordinatorProgramError,
  PROGRAM_ERROR_BASE,
  programErrorName,
  setComputeUnitLimitInstruction,
} from "../abi/mod.ts";
import { CoordinatorError, coordinatorErrorCodeOf } from "../../core/mod.ts";
import { abortableSleep } from "../../../net/mod.ts";

/** The JSON-RPC code of a failed preflight simulation. */
const PREFLIGHT_FAILURE = -32002;

/** A transaction failed for a reason that is not a coordinator program error. */
export class TransactionFailedError extends Error {
  /** The RPC's JSON of the transaction error. */
  readonly err: unknown;
  readonly logs: string[];
  constructor(err: unknown, logs: string[]) {
    super(`transaction failed: ${JSON.stringify(err)}${lastLog(logs)}`);
    this.name = "TransactionFailedError";
    this.err = err;
    this.logs = logs;
  }
}

/** No RPC confirmed the transaction after every retry. */
export class TransactionUnconfirmedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TransactionUnconfirmedError";
  }
}

function lastLog(logs: readonly string[]): string {
  const lines = logs.filter((l) => l.startsWith("Program log: "));
  return lines.length === 0 ? "" : ` (${lines[lines.length - 1].slice("Program log: ".length)})`;
}

/** The custom program error code in an RPC transaction error, or null. */
export function customErrorCode(err: unknown): number | null {
  if (typeof err !== "object" || err === null) return null;
  const ie = (err as { InstructionError?: unknown }).InstructionError;
  if (!Array.isArray(ie) || ie.length !== 2) return null;
  const inner = ie[1] as { Custom?: unknown } | null;
  return typeof inner === "object" && inner !== null && typeof inner.Custom === "number"
    ? inner.Custom
    : null;
}

/**
 * The typed error for a failed transaction: the coordinator's CoordinatorError for codes
 * 6000.., CoordinatorProgramError for the program's own codes, else TransactionFailedError.
 */
export function transactionError(err: unknown, logs: string[]): Error {
  const code = customErrorCode(err);
  const detail = lastLog(logs).replace(/^ \((.*)\)$/, "$1");
  if (code !== null && code >= COORDINATOR_ERROR_BASE && code < PROGRAM_ERROR_BASE) {
    const name = coordinatorErrorCodeOf(code - COORDINATOR_ERROR_BASE);
    if (name !== undefined) return new CoordinatorError(name, detail || `program error ${code}`);
  }
  if (code !== null) {
    const name = programErrorName(code);
    if (name !== undefined) {
      return new CoordinatorProgramError(name, detail || `program error ${code}`);
    }
  }
  return new TransactionFailedError(err, logs);
}

/** Errors worth another attempt: no answer, or a blockhash that expired in flight. */
function retryable(e: unknown): boolean {
  if (e instanceof RpcTransportError || e instanceof TransactionUnconfirmedError) return true;
  if (e instanceof TransactionFailedError) {
    return e.err === "BlockhashNotFound" || e.err === "AlreadyProcessed";
  }
  return e instanceof RpcResponseError && e.code !== PREFLIGHT_FAILURE;
}

/** Options of {@linkcode TransactionSender}. */
export interface TransactionSenderOptions {
  /** The RPCs to use, in order of preference (the first, then `--rpc-2`, ...). */
  rpcs: readonly SolanaRpcClient[];
  /** Pays the fee and signs. */
  payer: KeyPairSigner;
  /** Attempts per RPC before falling back to the next (default 4). */
  attemptsPerRpc?: number;
  /** First back-off in ms, multiplied by 1.5 per attempt (default 200). */
  backoffMs?: number;
  /** How long to wait for a status before trying again (default 20000 ms). */
  confirmTimeoutMs?: number;
  /** Reports each retry (for the log). */
  onRetry?: (info: { rpc: string; attempt: number; error: Error }) => void;
}

/** Per-send options. */
export interface SendTransactionOptions {
  signal?: AbortSignal;
  /** Prepend a compute-budget instruction with this limit. */
  computeUnitLimit?: number;
  /** More signers besides the payer (found in the instructions' account metas anyway). */
}

/** Signs, sends and confirms transactions with retries and RPC fallback. */
export class TransactionSender {
  readonly payer: KeyPairSigner;
  readonly #o: Required<Omit<TransactionSenderOptions, "onRetry">> & TransactionSenderOptions;

  constructor(opts: TransactionSenderOptions) {
    if (opts.rpcs.length === 0) throw new TypeError("TransactionSender needs at least one RPC");
    this.payer = opts.payer;
    this.#o = {
      ...opts,
      attemptsPerRpc: opts.attemptsPerRpc ?? 4,
      backoffMs: opts.backoffMs ?? 200,
      confirmTimeoutMs: opts.confirmTimeoutMs ?? 20_000,
    };
  }

  /** Sends `instructions` in one transaction; resolves with its signature once confirmed. */
  async send(instructions: Instruction[], opts: SendTransactionOptions = {}): Promise<string> {
    const all = opts.computeUnitLimit === undefined
      ? instructions
      : [setComputeUnitLimitInstruction(opts.computeUnitLimit), ...instructions];
    let last: Error | null = null;
    for (const rpc of this.#o.rpcs) {
      let backoff = this.#o.backoffMs;
      for (let attempt = 1; attempt <= this.#o.attemptsPerRpc; attempt++) {
        opts.signal?.throwIfAborted();
        try {
          return await this.#attempt(rpc, all, opts.signal);
        } catch (e) {
          if (opts.signal?.aborted) throw opts.signal.reason;
          if (!retryable(e)) throw e;
          last = e as Error;
          this.#o.onRetry?.({ rpc: rpc.url, attempt, error: last });
          if (attempt < this.#o.attemptsPerRpc) await abortableSleep(backoff, opts.signal);
          backoff = Math.round(backoff * 1.5);
        }
      }
    }
    throw new TransactionUnconfirmedError(
      `no RPC confirmed the transaction (${this.#o.rpcs.map((r) => r.url).join(", ")}): ` +
        `${last?.message}`,
      { cause: last },
    );
  }

  async #attempt(rpc: SolanaRpcClient, ixs: Instruction[], signal?: AbortSignal) {
    const { blockhash, lastValidBlockHeight } = await rpc.latestBlockhash(signal);
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(this.payer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: blockhash as Blockhash, lastValidBlockHeight },
          m,
        ),
      (m) => appendTransactionMessageInstructions(ixs, m),
    );
    const tx = await signTransactionMessageWithSigners(message);
    let signature: string;
    try {
      signature = await rpc.sendTransaction(tx, signal);
    } catch (e) {
      if (e instanceof RpcResponseError && e.code === PREFLIGHT_FAILURE) {
        const data = (e.data ?? {}) as { err?: unknown; logs?: string[] | null };
        throw transactionError(data.err ?? e.message, data.logs ?? []);
      }
      throw e;
    }
    const deadline = Date.now() + this.#o.confirmTimeoutMs;
    let wait = 20;
    for (;;) {
      const [status] = await rpc.signatureStatuses([signature], signal);
      if (status !== null && status !== undefined) {
        if (status.err !== null) throw transactionError(status.err, []);
        return signature;
      }
      if (Date.now() > deadline) {
        throw new TransactionUnconfirmedError(
          `${rpc.url} did not confirm ${signature} in ${this.#o.confirmTimeoutMs} ms`,
        );
      }
      await abortableSleep(wait, signal);
      wait = Math.min(500, wait * 2);
    }
  }
}
