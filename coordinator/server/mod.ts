/**
 * The coordinator's TCP server (`deno task coordinator run`): the wire protocol shared
 * with the client's TCP backend, the pure host that drives the state machine, the server
 * that puts it on the network, saved states and logs. See docs/server.md.
 *
 * @module
 */
export {
  clientFrameLimitFor,
  type ClientFrameLimits,
  clientFrameLimits,
  type ClientMessage,
  type ClientMessageHead,
  COORDINATOR_CONTEXT,
  decodeClientMessage,
  decodeServerMessage,
  encodeClientMessage,
  encodeServerMessage,
  isStateFrame,
  MAX_REASON_BYTES,
  peekClientMessage,
  type ServerMessage,
  STATE_CHECKSUM_BYTES,
} from "./protocol.ts";
export { applyDelta, DeltaError, type DeltaOp, deltaWireBytes, diffBytes } from "./state_delta.ts";
export {
  type ClientTelemetry,
  MAX_PHASE_MS,
  MAX_TOKENS_PER_SEC,
  readTelemetry,
  STEP_PHASES,
  type StepPhase,
  TELEMETRY_BYTES,
  writeTelemetry,
} from "./telemetry.ts";
export {
  CoordinatorHost,
  type DataVerdict,
  type HostEvent,
  type HostOptions,
  type HostReply,
} from "./host.ts";
export {
  type CoordinatorServer,
  type CoordinatorServerOptions,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
  defaultRateLimits,
  PUSH_INTERVAL_MS,
  type RateLimits,
  startCoordinatorServer,
  TICK_INTERVAL_MS,
} from "./server.ts";
export {
  type Backoff,
  type BackoffCause,
  backoffReason,
  DEFAULT_JOIN_BACKOFF_EPOCHS,
  JoinBackoff,
} from "./join_backoff.ts";
export {
  AuthorizedKeysError,
  decodeBase58,
  parseAuthorizedKeys,
  parsePublicKey,
} from "./authorized_keys.ts";
export { DEFAULT_MAX_QUEUED_REPLIES, Outbox, UnreadRepliesError } from "./outbox.ts";
export {
  coordinatorFromRunConfig,
  coordinatorFromToml,
  resumableRunConfig,
  savedStateFileName,
  saveRunConfig,
} from "./save_state.ts";
export {
  eventFromJson,
  eventJson,
  eventLevel,
  eventLogger,
  formatEvent,
  LOG_FORMATS,
  type LogFormat,
  type ServerEvent,
} from "./log.ts";
export {
  type DashboardStarter,
  parseRunArgs,
  RUN_USAGE,
  runCommand,
  type RunDashboard,
  type RunOptions,
} from "./run_command.ts";
