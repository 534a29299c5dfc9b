/**
 * The coordinator's TCP server (`deno task coordinator run`): the wire protocol shared
 * with the client's TCP backend, the pure host that drives the state machine, the server
 * that puts it on the network, saved states and logs. See docs/server.md.
 *
 * @module
 */
export {
  type ClientMessage,
  COORDINATOR_CONTEXT,
  decodeClientMessage,
  decodeServerMessage,
  encodeClientMessage,
  encodeServerMessage,
  MAX_REASON_BYTES,
  type ServerMessage,
} from "./protocol.ts";
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
  DEFAULT_MAX_CONNECTIONS,
  PUSH_INTERVAL_MS,
  startCoordinatorServer,
  TICK_INTERVAL_MS,
} from "./server.ts";
export {
  coordinatorFromRunConfig,
  coordinatorFromToml,
  resumableRunConfig,
  savedStateFileName,
  saveRunConfig,
} from "./save_state.ts";
export {
  eventJson,
  eventLogger,
  formatEvent,
  LOG_FORMATS,
  type LogFormat,
  type ServerEvent,
} from "./log.ts";
export { parseRunArgs, RUN_USAGE, runCommand, type RunOptions, UsageError } from "./run_command.ts";
