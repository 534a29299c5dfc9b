/**
 * The binary encoding of a whole {@linkcode CoordinatorState}: one compact, versioned
 * layout that the TCP server broadcasts and the Solana account stores, simple enough to
 * mirror field by field in C. docs/state-encoding.md documents it byte by byte.
 *
 * Rules: an 8-byte header (magic `PSYC`, u16 version, u16 reserved zero); then every
 * field in declaration order; integers little-endian and fixed-width; times and durations
 * as integer milliseconds (version 2; version 1, still read and written for the Solana
 * program, has whole seconds); floats as IEEE-754
 * f64 (finite only); booleans one byte (0 or 1); strings as a u8 byte length and UTF-8
 * bytes, capped by the MAX_* constants; lists as a u16 (clients) or u8 (witnesses) count
 * then the items; unions and enums as a u8 code (their order in the `*_KINDS` tables
 * below, RUN_STATES and CLIENT_STATES); optional values as a u8 flag then the value.
 *
 * {@linkcode encodeCoordinatorState} throws RangeError/TypeError naming the field path
 * when the state cannot be represented; {@linkcode decodeCoordinatorState} throws
 * {@linkcode StateDecodeError} naming the field and byte offset for every defect
 * (truncation, trailing bytes, unknown codes, caps, bad UTF-8, inconsistent values).
 *
 * @module
 */

export {
  ARCHITECTURE_KINDS,
  CHECKPOINT_KINDS,
  DATA_LOCATION_KINDS,
  DATA_TYPE_KINDS,
  HTTP_LOCATION_KINDS,
  LR_SCHEDULE_KINDS,
  OPTIMIZER_KINDS,
  SEAT_VERDICT_KINDS,
  SHUFFLE_KINDS,
  SNAPSHOT_DTYPE_KINDS,
  SNAPSHOT_DTYPE_SINCE_VERSION,
  STATE_ENCODING_VERSION,
  STATE_ENCODING_VERSIONS,
  STATE_HEADER_BYTES,
  STATE_MAGIC,
  StateDecodeError,
  type StateEncodingVersion,
  TOKEN_SIZE_KINDS,
  VERIFICATION_SINCE_VERSION,
} from "./layout.ts";
export {
  encodeConfigPart,
  encodeCoordinatorState,
  encodeModelPart,
  type EncodeStateOptions,
} from "./write.ts";
export { decodeCoordinatorState } from "./read.ts";
export { coordinatorStateFromJson, coordinatorStateToJson, type Json } from "./json.ts";
