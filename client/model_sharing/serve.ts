/**
 * The serving side of P2P model sharing: at Cooldown, once the epoch's last results are applied,
 * a client snapshots its parameters into blobs (see blobs.ts) and serves them with a manifest
 * (client/p2p/model_share.ts) until its next snapshot. Joiners of the next epoch fetch it.
 *
 * A snapshot replaces the previous one: blobs of the old snapshot that the new one does not
 * share are forgotten, so a long run keeps one model's worth of blobs in memory.
 *
 * @module
 */
import type { ContentHash } from "../p2p/content_store.ts";
import { decodeManifest, shareModel } from "../p2p/model_share.ts";
import type { PayloadService } from "../p2p/payload_service.ts";
import { modelToBlobs, type SharedModel } from "./blobs.ts";

/** What one snapshot serves. */
export interface ServedModel {
  /** sha256 of the manifest; equal on every honest client of the epoch. */
  readonly manifestHash: ContentHash;
  /** Every blob hash served for it (manifest included). */
  readonly hashes: ReadonlySet<ContentHash>;
  /** Bytes of the blobs (manifest excluded). */
  readonly bytes: number;
}

/** The blob hashes a served manifest lists, plus the manifest's own. */
export function servedHashes(payloads: PayloadService, manifestHash: ContentHash): ServedModel {
  const manifest = payloads.store.get(manifestHash);
  if (manifest === undefined) {
    throw new RangeError(`manifest ${manifestHash} is not served by this node`);
  }
  const entries = decodeManifest(manifest);
  return {
    manifestHash,
    hashes: new Set([manifestHash, ...entries.map((e) => e.hash)]),
    bytes: entries.reduce((n, e) => n + e.size, 0),
  };
}

/**
 * Serves a snapshot of `model` (copied: later training does not change what is served) and
 * returns what is served. With `replaces`, the previous snapshot's blobs that this one does not
 * use are forgotten.
 *
 * @example
 * ```ts ignore
 * // At Cooldown, after the last apply:
 * served = serveModel(exchange.payloads, { config, layout, weights: await model.readParams() },
 *   { replaces: served });
 * ```
 */
export function serveModel(
  payloads: PayloadService,
  model: SharedModel,
  options: { replaces?: ServedModel | null } = {},
): ServedModel {
  const manifestHash = shareModel(payloads, modelToBlobs(model));
  const served = servedHashes(payloads, manifestHash);
  const old = options.replaces;
  if (old != null) {
    payloads.forget([...old.hashes].filter((h) => !served.hashes.has(h)));
  }
  return served;
}
