/**
 * The peer-to-peer network layer over js-libp2p, shared by the client and the coordinator: a
 * node whose identity is an ed25519 key and which talks only to the peers its gate allows (and
 * the run's relays); hash-verified payload transfers over `/psyche/payload/1`, large ones over
 * an authenticated plain-TCP bulk path unless it is turned off; P2P model sharing's manifest;
 * reachability behind NAT; and the members-only circuit relay a coordinator serves.
 * What the run says over it (gossip, announcements) is client/p2p/'s.
 *
 * Importing this module installs the `BroadcastChannel` fix that lets `deno run` exit after
 * `node.stop()` (see `exit_fix.ts`); import it before anything else that loads libp2p.
 *
 * @example
 * ```ts ignore
 * import { createP2PNode, PayloadService } from "./net/p2p/mod.ts";
 * const node = await createP2PNode({ secretKey, allowedPeers: epochClientKeys });
 * const payloads = await PayloadService.start(node);
 * const hash = payloads.provide(resultBytes, { step });
 * const bytes = await payloads.fetch(hash, { providers: [provider], expectedSize, signal });
 * ```
 *
 * @module
 */
import "./exit_fix.ts";

export { type Relay, type RelayOptions, type RelayStats, startRelay } from "./relay.ts";
export { createP2PNode, P2PNode, type P2PNodeOptions, type P2PServices } from "./node.ts";

export { Allowlist, allowlistGater } from "./allowlist.ts";

export { ipOfAddress, isRelayed, type Reachability, reachability } from "./reachability.ts";

export {
  ED25519_KEY_BYTES,
  ED25519_SIGNATURE_BYTES,
  libp2pPrivateKey,
  peerIdOf,
  publicKeyOf,
  publicKeyOfPeer,
} from "./identity.ts";

export {
  type BulkOptions,
  DEFAULT_BULK_MIN_BYTES,
  DEFAULT_CHUNK_BYTES,
  DEFAULT_MAX_CONCURRENT_DOWNLOADS,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type FetchOptions,
  PayloadService,
  type PayloadServiceOptions,
  type PayloadStats,
} from "./payload_service.ts";

export {
  type ContentHash,
  contentHash,
  contentHashSteps,
  ContentStore,
  HASH_STEP_BYTES,
  hashFromBytes,
  hashToBytes,
  type ProvideOptions,
} from "./content_store.ts";

export {
  type AttemptFailureCode,
  DEFAULT_RETRY_POLICY,
  type FailedAttempt,
  PayloadAttemptError,
  PayloadFetchError,
  type RetryPolicy,
} from "./fallback.ts";

export {
  type BulkFailureCode,
  bulkFetch,
  BulkFetchError,
  type BulkFetchOptions,
  bulkWorthwhile,
  DEFAULT_BULK_ANSWER_TIMEOUT_MS,
  DEFAULT_BULK_BYTES_PER_RTT_MS,
} from "./bulk_fetch.ts";

export {
  BulkListener,
  type BulkListenerOptions,
  type BulkListenerStats,
  DEFAULT_BULK_IDLE_TIMEOUT_MS,
  DEFAULT_BULK_MAX_CONNECTIONS,
  DEFAULT_BULK_MAX_CONNECTIONS_PER_ADDRESS,
  DEFAULT_BULK_REQUEST_TIMEOUT_MS,
} from "./bulk_listener.ts";

export { type ByteCharge, RoundByteBudget } from "./byte_budget.ts";

export { type DeclaredContent, PartialContent, PrefixConflict } from "./partial_content.ts";

export {
  DEFAULT_MAX_TICKETS,
  DEFAULT_MAX_TICKETS_PER_PEER,
  DEFAULT_TICKET_LIFETIME_MS,
  type Redemption,
  TicketBook,
  type TicketBookOptions,
  type TicketRefusal,
} from "./bulk_tickets.ts";

export {
  BULK_REQUEST_BYTES,
  BULK_REQUEST_FROM_BYTES,
  BULK_STATUSES,
  type BulkRefusal,
  type BulkRequest,
  bulkRequestBytes,
  type BulkResponseHeader,
  type BulkStatus,
  BulkWireError,
  decodeBulkRequest,
  encodeBulkRequest,
  encodeBulkResponseHeader,
} from "./bulk_wire.ts";

export {
  BLOB_DTYPES,
  type BlobDtype,
  type BlobToShare,
  checkManifestSizes,
  decodeManifest,
  encodeManifest,
  fetchModel,
  type FetchModelOptions,
  MANIFEST_NAME,
  MANIFEST_VERSION,
  ManifestDecodeError,
  type ManifestEntry,
  ManifestSizeError,
  MAX_MANIFEST_BYTES,
  MAX_MANIFEST_ENTRIES,
  shareModel,
  shareModelSteps,
  TENSOR_DTYPE_BYTES,
} from "./model_share.ts";

export {
  decodeRequest,
  encodeResponseHeader,
  MAX_NAME_BYTES,
  MAX_REQUEST_BYTES,
  PAYLOAD_PROTOCOL,
  type PayloadRequest,
  PayloadWireError,
  type ResponseHeader,
  type ResponseStatus,
  TICKET_BYTES,
} from "./payload_wire.ts";

export { sendChunked } from "./payload_stream.ts";

export { StreamReader } from "./stream_reader.ts";

export { describeDialFailure } from "./dial_failure.ts";
export { RecentSet } from "./recent_set.ts";
