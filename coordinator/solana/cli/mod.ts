/**
 * Talking to the coordinator program over a Solana RPC: the JSON-RPC client, the
 * transaction sender (retries, `--rpc-2` fallback, typed program errors), keypair files,
 * the run operator's actions, and `deno task solana`'s argument parser. Used by the
 * operator commands (main.ts) and the training client's Solana backend.
 *
 * @module
 */
export { parseSolanaArgs, type SolanaArgs, type SolanaCommand } from "./args.ts";
export { DEFAULT_PROGRAM_ID, DEFAULT_RPC_URL } from "./defaults.ts";
export {
  KeypairFileError,
  keypairJson,
  loadWallet,
  parseKeypairJson,
  type Wallet,
  walletFromBytes,
} from "./keypair.ts";
export { readRun, runJson, RunNotFoundError, RunOperator, type RunUpdate } from "./operator.ts";
export {
  decodeAccountData,
  defaultWsUrl,
  followAccount,
  type FollowAccountOptions,
  RpcResponseError,
  RpcTransportError,
  type SignatureStatus,
  SolanaRpcClient,
} from "./rpc_client.ts";
export {
  customErrorCode,
  transactionError,
  TransactionFailedError,
  TransactionSender,
  type TransactionSenderOptions,
  TransactionUnconfirmedError,
} from "./transactions.ts";
