/**
 * The client's side of the peer-to-peer layer: the run's gossip of small signed announcements
 * (what they are, how they are signed, sent, rebroadcast, archived and pulled when gossip lost
 * them) and which participants to dial. It rides on the network layer in net/p2p/ (the node,
 * its gate, payload transfers, the relay).
 *
 * Importing this module installs the `BroadcastChannel` fix that lets `deno run` exit after
 * `node.stop()` (net/p2p/exit_fix.ts).
 *
 * @example
 * ```ts ignore
 * import { createP2PNode, PayloadService } from "./net/p2p/mod.ts";
 * import { RunGossip } from "./client/p2p/mod.ts";
 * const node = await createP2PNode({ secretKey, allowedPeers: epochClientKeys });
 * const gossip = new RunGossip(node, { runId, secretKey, onAnnouncement: (a) => handle(a) });
 * const payloads = await PayloadService.start(node);
 * const hash = payloads.provide(resultBytes, { step });
 * await gossip.publish({ kind: "TrainingResult", step, proof, batch, commitment,
 *   contentHash: hashToBytes(hash), payloadSize: resultBytes.length });
 * ```
 *
 * @module
 */
import "../../net/p2p/mod.ts";

export { DEFAULT_TARGET_NEIGHBOURS, peersToDial, type PeersToDialInput } from "./bootstrap.ts";
export {
  type Announcement,
  ANNOUNCEMENT_VERSION,
  AnnouncementDecodeError,
  type AnnouncementEnvelope,
  decodeEnvelope,
  decodeMessage,
  encodeMessage,
  type FinishedAnnouncement,
  gossipTopic,
  HASH_BYTES,
  MAX_ADDRESS_BYTES,
  MAX_ANNOUNCEMENT_BYTES,
  MAX_PEER_ADDRESSES,
  type PeerAddressesAnnouncement,
  type RoundAnnouncement,
  signAnnouncement,
  type SignOptions,
  type TrainingResultAnnouncement,
  verifyEnvelope,
} from "./announcement.ts";
export {
  type GossipStats,
  type ReceivedAnnouncement,
  RunGossip,
  type RunGossipOptions,
} from "./gossip.ts";
export { DEFAULT_REBROADCAST_STEPS, RebroadcastQueue } from "./rebroadcast.ts";
