/**
 * Keeping a client in the run's gossip mesh: which participants to dial next.
 *
 * Psyche (`ensure_gossip_connected`) checks on each coordinator update and every 10 s (not more
 * often than every 6 s), once the client is in the epoch's client list, and joins up to
 * `3 - neighbours` random participants. `peersToDial` is that choice, with the randomness
 * injected; the client owns the timer and calls `P2PNode.connectTo` for each key returned.
 *
 * @module
 */
import { type PublicKeyBytes, toHex } from "../../common/mod.ts";

/** Neighbours Psyche aims for in the gossip mesh. */
export const DEFAULT_TARGET_NEIGHBOURS = 3;

/** Inputs of `peersToDial`. */
export interface PeersToDialInput {
  /** The epoch's participants (usually the coordinator's client list), ourselves included or not. */
  participants: readonly PublicKeyBytes[];
  /** Our own key (never dialled). */
  self: PublicKeyBytes;
  /** Keys of participants we are connected to now. */
  connected: readonly PublicKeyBytes[];
  /** Participants we know how to reach (e.g. from PeerAddresses); others cannot be dialled. */
  reachable: (key: PublicKeyBytes) => boolean;
  /** Neighbours to aim for. Default 3. */
  target?: number;
  /** Uniform integer in `[0, n)`: the caller's randomness (seeded in tests). */
  randomIndex: (n: number) => number;
}

/**
 * The participants to dial now: up to `target - connected` random ones among those we are not
 * connected to and can reach. Empty when we already have enough neighbours.
 */
export function peersToDial(input: PeersToDialInput): PublicKeyBytes[] {
  const target = input.target ?? DEFAULT_TARGET_NEIGHBOURS;
  if (!Number.isInteger(target) || target < 0) {
    throw new RangeError(`target must be a non-negative integer, found ${target}`);
  }
  const self = toHex(input.self);
  const connected = new Set(input.connected.map(toHex));
  const want = target - connected.size;
  if (want <= 0) return [];
  const seen = new Set<string>();
  const candidates = input.participants.filter((key) => {
    const hex = toHex(key);
    if (hex === self || connected.has(hex) || seen.has(hex)) return false;
    seen.add(hex);
    return input.reachable(key);
  });
  // Partial Fisher-Yates: the first `want` entries become a uniform random sample.
  const picked = candidates.slice();
  const count = Math.min(want, picked.length);
  for (let i = 0; i < count; i++) {
    const j = i + input.randomIndex(picked.length - i);
    [picked[i], picked[j]] = [picked[j], picked[i]];
  }
  return picked.slice(0, count);
}
