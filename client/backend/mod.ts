/**
 * Coordinator backends for the training client: the interface every backend implements
 * and the TCP implementation that talks to `deno task coordinator run`.
 *
 * @module
 */
export {
  BackendError,
  type BackendErrorKind,
  type CallOptions,
  type CoordinatorBackend,
  type EvalResult,
  MAX_EVAL_NAME_BYTES,
  MAX_METADATA_EVALS,
  MAX_PROMPT_RESULTS,
  type WitnessMetadata,
} from "./backend.ts";
export { parseAddress, TcpBackend, type TcpBackendEvent, type TcpBackendOptions } from "./tcp.ts";
export { MemoryBackend, MemoryCoordinator, type MemoryCoordinatorOptions } from "./memory.ts";
export { StateFeed } from "./state_feed.ts";
export {
  nextAccount,
  SolanaBackend,
  type SolanaBackendEvent,
  type SolanaBackendOptions,
  tickDue,
  tickProbability,
} from "./solana.ts";
