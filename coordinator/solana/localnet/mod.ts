/**
 * A local Solana RPC endpoint for end-to-end tests and demos: JSON-RPC over HTTP and
 * WebSocket subscriptions around an in-process litesvm (Agave's loader, verifier,
 * interpreter and syscalls) with the real coordinator program deployed; slots and the
 * Clock sysvar follow wall time. A test harness around the real SVM, not a validator:
 * production points the same clients at a real RPC. See docs/solana.md.
 *
 * @module
 */
export {
  BLOCKHASH_VALID_SLOTS,
  type ExecutionResult,
  Ledger,
  type LedgerAccount,
  type LedgerOptions,
  loadProgramBytes,
  LOCALNET_POOL_PROGRAM_ID,
  LOCALNET_PROGRAM_ID,
  LOCALNET_TREASURER_PROGRAM_ID,
  MalformedTransactionError,
  SLOT_MS,
} from "./ledger.ts";
export { RPC_ERRORS, RpcError, rpcJson, RpcMethods } from "./rpc.ts";
export { type LocalnetServer, type LocalnetServerOptions, startLocalnet } from "./server.ts";
export { Subscriptions } from "./subscriptions.ts";
export { type RpcTransactionError, transactionErrorJson } from "./tx_error.ts";
