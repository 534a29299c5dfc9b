/**
 * Talking to the coordinator program over a Solana RPC, shared by the operator commands and the
 * training client's Solana backend: the JSON-RPC and account-subscription client, the
 * transaction sender (retries, a second RPC as fallback, typed program errors), Solana keypair
 * files, and the default program id and RPC address.
 *
 * @module
 */
export {
  DEFAULT_POOL_PROGRAM_ID,
  DEFAULT_PROGRAM_ID,
  DEFAULT_RPC_URL,
  DEFAULT_TREASURER_PROGRAM_ID,
} from "./defaults.ts";
export {
  KeypairFileError,
  keypairJson,
  loadWallet,
  parseKeypairJson,
  type Wallet,
  walletFromBytes,
} from "./keypair.ts";
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
