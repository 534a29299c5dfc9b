/**
 * Solana's JSON-RPC methods over a {@linkcode Ledger}: the request/response shapes of the
 * real RPC (https://solana.com/docs/rpc), for the methods the project's clients and
 * `@solana/kit` use. Transport-free: the HTTP and WebSocket server (server.ts) feeds it
 * parsed requests and serializes what it returns with {@linkcode rpcJson}.
 *
 * @module
 */

import { type Address, address, getBase58Decoder, getBase58Encoder } from "@solana/kit";
import { decodeBase64, encodeBase64 } from "./base64.ts";
import {
  type ExecutionResult,
  type Ledger,
  type LedgerAccount,
  MalformedTransactionError,
} from "./ledger.ts";

/** JSON-RPC error codes used here (the standard ones and Solana's server errors). */
export const RPC_ERRORS = Object.freeze({
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  /** sendTransaction's preflight simulation failed. */
  PreflightFailure: -32002,
});

/** A JSON-RPC error response. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.data = data;
  }
}

/** The u64 max, as a real RPC reports `rentEpoch` of rent-exempt accounts. */
const RENT_EPOCH_EXEMPT = 18_446_744_073_709_551_615n;
/** Real RPCs refuse base58 for larger account data. */
const MAX_BASE58_BYTES = 128;

/**
 * JSON text for a response, with bigints written as plain JSON numbers (u64 lamports and
 * slots exceed 2^53; Solana clients parse them as such).
 */
export function rpcJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v) => typeof v === "bigint" ? `\u0000big${v.toString()}\u0000` : v,
  ).replace(/"\\u0000big(-?\d+)\\u0000"/g, "$1");
}

type Params = unknown[];

function param<T>(params: Params, i: number, what: string, check: (v: unknown) => v is T): T {
  const v = params[i];
  if (!check(v)) {
    throw new RpcError(RPC_ERRORS.InvalidParams, `Invalid params: ${what} (param ${i})`);
  }
  return v;
}

const isString = (v: unknown): v is string => typeof v === "string";
const isStringArray = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((x) => typeof x === "string");
const isInteger = (v: unknown): v is number | bigint =>
  (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) ||
  (typeof v === "bigint" && v >= 0n);

function config(params: Params, i: number): Record<string, unknown> {
  const v = params[i];
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v)) {
    throw new RpcError(
      RPC_ERRORS.InvalidParams,
      `Invalid params: config (param ${i}) is not an object`,
    );
  }
  return v as Record<string, unknown>;
}

function pubkey(params: Params, i: number): Address {
  const text = param(params, i, "expected a base58 public key", isString);
  try {
    return address(text);
  } catch {
    throw new RpcError(RPC_ERRORS.InvalidParams, `Invalid param: Invalid public key "${text}"`);
  }
}

function encodeData(data: Uint8Array, encoding: unknown): [string, string] {
  switch (encoding ?? "base58") {
    case "base64":
    case "jsonParsed": // no parsers here: real RPCs fall back to base64 as well
      return [encodeBase64(data), "base64"];
    case "base58":
    case "binary":
      if (data.length > MAX_BASE58_BYTES) {
        throw new RpcError(
          RPC_ERRORS.InvalidRequest,
          `Encoded binary (base 58) data should be less than ${MAX_BASE58_BYTES} bytes, ` +
            `please use Base64 encoding.`,
        );
      }
      return [getBase58Decoder().decode(data), "base58"];
    default:
      throw new RpcError(
        RPC_ERRORS.InvalidParams,
        `Invalid params: unsupported encoding "${String(encoding)}" (base64 or base58)`,
      );
  }
}

/** A `dataSlice` of a request: a byte range of each account's data. */
export interface DataSlice {
  offset: number;
  length: number;
}

/**
 * The config's `dataSlice`, or null when it has none. As Solana's RPC does, refuses one with
 * `jsonParsed` (a parsed account cannot be cut) with InvalidRequest.
 */
function dataSlice(cfg: Record<string, unknown>): DataSlice | null {
  const s = cfg.dataSlice;
  if (s === undefined || s === null) return null;
  const { offset, length } = (typeof s === "object" ? s : {}) as Record<string, unknown>;
  if (!isInteger(offset) || !isInteger(length)) {
    throw new RpcError(
      RPC_ERRORS.InvalidParams,
      "Invalid params: dataSlice needs a non-negative integer offset and length",
    );
  }
  if (cfg.encoding === "jsonParsed") {
    throw new RpcError(
      RPC_ERRORS.InvalidRequest,
      "Sliced account data can only be encoded using binary (base 58) or base64 encoding.",
    );
  }
  return { offset: Number(offset), length: Number(length) };
}

/** Solana's slice: `length` bytes from `offset`, clipped to the data (empty past its end). */
export function sliceData(data: Uint8Array, slice: DataSlice | null): Uint8Array {
  if (slice === null) return data;
  const start = Math.min(slice.offset, data.length);
  return data.subarray(start, Math.min(data.length, start + slice.length));
}

/**
 * An account in RPC JSON: its data cut to `slice` (the base58 limit applies to the cut),
 * `space` the whole data's length, as Solana's RPC reports them.
 */
export function accountJson(
  acc: LedgerAccount,
  encoding: unknown,
  slice: DataSlice | null = null,
): Record<string, unknown> {
  return {
    data: encodeData(sliceData(acc.data, slice), encoding),
    executable: acc.executable,
    lamports: acc.lamports,
    owner: acc.owner,
    rentEpoch: RENT_EPOCH_EXEMPT,
    space: acc.data.length,
  };
}

function transactionBytes(params: Params): Uint8Array {
  const text = param(params, 0, "expected the encoded transaction", isString);
  const encoding = config(params, 1).encoding ?? "base58";
  try {
    if (encoding === "base64") return decodeBase64(text);
    if (encoding === "base58") return getBase58Encoder().encode(text) as Uint8Array;
  } catch (e) {
    throw new RpcError(
      RPC_ERRORS.InvalidParams,
      `invalid transaction: cannot decode ${encoding}: ${(e as Error).message}`,
    );
  }
  throw new RpcError(
    RPC_ERRORS.InvalidParams,
    `Invalid params: unsupported transaction encoding "${String(encoding)}"`,
  );
}

function matchesFilter(acc: LedgerAccount, filter: unknown): boolean {
  if (typeof filter !== "object" || filter === null) {
    throw new RpcError(RPC_ERRORS.InvalidParams, "Invalid params: a filter is not an object");
  }
  const f = filter as {
    dataSize?: unknown;
    memcmp?: { offset?: unknown; bytes?: unknown; encoding?: unknown };
  };
  if (f.dataSize !== undefined) return acc.data.length === Number(f.dataSize);
  if (f.memcmp !== undefined) {
    const offset = Number(f.memcmp.offset);
    if (!Number.isSafeInteger(offset) || offset < 0 || typeof f.memcmp.bytes !== "string") {
      throw new RpcError(RPC_ERRORS.InvalidParams, "Invalid params: memcmp needs offset and bytes");
    }
    const want = f.memcmp.encoding === "base64"
      ? decodeBase64(f.memcmp.bytes)
      : getBase58Encoder().encode(f.memcmp.bytes);
    if (offset + want.length > acc.data.length) return false;
    return want.every((b, i) => acc.data[offset + i] === b);
  }
  throw new RpcError(
    RPC_ERRORS.InvalidParams,
    "Invalid params: unknown filter (dataSize or memcmp)",
  );
}

function simulationValue(r: ExecutionResult): Record<string, unknown> {
  return {
    err: r.err,
    logs: r.logs,
    accounts: null,
    unitsConsumed: r.unitsConsumed,
    returnData: null,
  };
}

/** Dispatches the HTTP methods of the Solana RPC to a ledger. */
export class RpcMethods {
  readonly ledger: Ledger;
  constructor(ledger: Ledger) {
    this.ledger = ledger;
  }

  #context(): { slot: bigint; apiVersion: string } {
    return { slot: this.ledger.slot(), apiVersion: "2.2.0" };
  }

  /** Runs `method` with `params`; throws RpcError for unknown methods and bad params. */
  call(method: string, params: Params): unknown {
    const l = this.ledger;
    try {
      switch (method) {
        case "getVersion":
          return { "solana-core": "2.2.0", "feature-set": 0 };
        case "getHealth":
          return "ok";
        case "getSlot":
        case "getBlockHeight":
          return l.slot();
        case "getLatestBlockhash":
          return { context: this.#context(), value: l.latestBlockhash() };
        case "isBlockhashValid":
          return {
            context: this.#context(),
            value: l.isBlockhashValid(param(params, 0, "expected a blockhash", isString)),
          };
        case "getMinimumBalanceForRentExemption":
          return l.minimumBalanceForRentExemption(
            BigInt(param(params, 0, "expected a data length", isInteger)),
          );
        case "getBalance":
          return { context: this.#context(), value: l.account(pubkey(params, 0))?.lamports ?? 0n };
        case "getAccountInfo": {
          const acc = l.account(pubkey(params, 0));
          const cfg = config(params, 1);
          const slice = dataSlice(cfg);
          return {
            context: this.#context(),
            value: acc === null ? null : accountJson(acc, cfg.encoding, slice),
          };
        }
        case "getMultipleAccounts": {
          const keys = param(params, 0, "expected an array of public keys", isStringArray);
          const cfg = config(params, 1);
          const slice = dataSlice(cfg);
          return {
            context: this.#context(),
            value: keys.map((_, i) => {
              const acc = l.account(pubkey(keys, i));
              return acc === null ? null : accountJson(acc, cfg.encoding, slice);
            }),
          };
        }
        case "getProgramAccounts": {
          const cfg = config(params, 1);
          const filters = Array.isArray(cfg.filters) ? cfg.filters : [];
          const slice = dataSlice(cfg);
          // The filters see the whole data; only what is returned is cut.
          const value = l.programAccounts(pubkey(params, 0))
            .filter((a) => filters.every((f) => matchesFilter(a.account, f)))
            .map((a) => ({
              pubkey: a.pubkey,
              account: accountJson(a.account, cfg.encoding, slice),
            }));
          return cfg.withContext === true ? { context: this.#context(), value } : value;
        }
        case "requestAirdrop": {
          const to = pubkey(params, 0);
          const amount = BigInt(param(params, 1, "expected lamports", isInteger));
          return l.airdrop(to, amount).signature;
        }
        case "sendTransaction": {
          const bytes = transactionBytes(params);
          if (config(params, 1).skipPreflight !== true) {
            const sim = l.simulate(bytes);
            if (sim.err !== null) {
              throw new RpcError(
                RPC_ERRORS.PreflightFailure,
                `Transaction simulation failed: ${JSON.stringify(sim.err)}`,
                simulationValue(sim),
              );
            }
          }
          return l.execute(bytes).signature;
        }
        case "simulateTransaction": {
          const sim = l.simulate(transactionBytes(params));
          return { context: this.#context(), value: simulationValue(sim) };
        }
        case "getSignaturesForAddress": {
          const at = pubkey(params, 0);
          const cfg = config(params, 1);
          const limit = cfg.limit === undefined ? 1000 : cfg.limit;
          if (!isInteger(limit) || limit < 1 || limit > 1000) {
            throw new RpcError(RPC_ERRORS.InvalidParams, `Invalid limit; max 1000, found ${limit}`);
          }
          const before = typeof cfg.before === "string" ? cfg.before : undefined;
          return l.signaturesFor(at, { limit: Number(limit), before }).map((k) => ({
            signature: k.result.signature,
            slot: k.result.slot,
            err: k.result.err,
            memo: null,
            blockTime: k.blockTime,
            confirmationStatus: "finalized",
          }));
        }
        case "getTransaction": {
          const signature = param(params, 0, "expected a signature", isString);
          const cfg = config(params, 1);
          const kept = l.transaction(signature);
          if (kept === null) return null;
          const r = kept.result;
          return {
            slot: r.slot,
            blockTime: kept.blockTime,
            version: "legacy",
            transaction: encodeData(kept.bytes, cfg.encoding ?? "base64"),
            meta: {
              err: r.err,
              status: r.err === null ? { Ok: null } : { Err: r.err },
              fee: 5000,
              logMessages: r.logs,
              computeUnitsConsumed: r.unitsConsumed,
              preBalances: [],
              postBalances: [],
              innerInstructions: [],
              preTokenBalances: [],
              postTokenBalances: [],
              loadedAddresses: { writable: [], readonly: [] },
              rewards: [],
            },
          };
        }
        case "getSignatureStatuses": {
          const sigs = param(params, 0, "expected an array of signatures", isStringArray);
          return {
            context: this.#context(),
            value: sigs.map((s) => {
              const r = l.status(s);
              return r === null ? null : {
                slot: r.slot,
                confirmations: null,
                err: r.err,
                status: r.err === null ? { Ok: null } : { Err: r.err },
                confirmationStatus: "finalized",
              };
            }),
          };
        }
        default:
          throw new RpcError(RPC_ERRORS.MethodNotFound, `Method not found: ${method}`);
      }
    } catch (e) {
      if (e instanceof MalformedTransactionError) {
        throw new RpcError(RPC_ERRORS.InvalidParams, `invalid transaction: ${e.message}`);
      }
      throw e;
    }
  }
}
