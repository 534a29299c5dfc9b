/**
 * The joining side of P2P model sharing (psyche.md §4.5). During Warmup of an epoch whose
 * checkpoint is `P2P`, a client that does not hold the model:
 *
 * 1. asks every provider (the epoch's other clients) for the manifest it serves, in parallel,
 *    each within `manifestTimeoutMs` (peers that joined with us answer NotFound and do not vote),
 *    and stops waiting as soon as one manifest has a majority of all providers;
 * 2. accepts the manifest hash a strict majority of the answering peers report (quorum.ts);
 * 3. fetches `config.json` (at most 64 KiB), refuses the manifest unless it lists exactly the
 *    config's tensors at their f32 sizes, then fetches every tensor by the sha256 the manifest
 *    lists, spread across the peers that reported that manifest, each verified on arrival and
 *    cut at its size, with retries on other peers (client/p2p/model_share.ts and the payload
 *    service's fallback policy);
 * 4. rebuilds the flat f32 model from the blobs (blobs.ts), checking every tensor's size.
 *
 * By default it then serves what it fetched, so later joiners can fetch from it as well.
 *
 * @module
 */
import type { PublicKeyBytes } from "../../coordinator/types.ts";
import { bytesToHex } from "../p2p/hex.ts";
import type { ContentHash } from "../p2p/content_store.ts";
import {
  fetchModel as fetchModelBlobs,
  MANIFEST_NAME,
  MAX_MANIFEST_BYTES,
} from "../p2p/model_share.ts";
import type { PayloadService } from "../p2p/payload_service.ts";
import {
  CONFIG_BLOB,
  MAX_CONFIG_BLOB_BYTES,
  modelFromBlobs,
  type SharedModel,
  tensorBlobSizes,
} from "./blobs.ts";
import { agreeOnManifest, type ManifestReport } from "./quorum.ts";
import { servedHashes, type ServedModel } from "./serve.ts";

/** How long one provider may take to hand over its manifest, by default. */
export const DEFAULT_MANIFEST_TIMEOUT_MS = 8_000;
/** Largest manifest accepted (client/p2p/model_share.ts). */
export { MAX_MANIFEST_BYTES };

/** Options for {@link fetchModel}. */
export interface FetchModelOptions {
  /** The peers that may hold the model (the epoch's other clients), by public key. */
  readonly providers: readonly PublicKeyBytes[];
  /** Aborts everything. */
  readonly signal?: AbortSignal;
  /** Fewest peers that must serve the agreed manifest (default 1). */
  readonly minSupporters?: number;
  /** How long each provider may take to answer the manifest request. */
  readonly manifestTimeoutMs?: number;
  /** Serve the fetched model afterwards (default true). */
  readonly reshare?: boolean;
}

/** A fetched model, with where it came from. */
export interface FetchedModel extends SharedModel {
  readonly manifestHash: ContentHash;
  /** Peers (hex keys) that served the agreed manifest. */
  readonly supporters: string[];
  /** Peers that served a different manifest (logged by the caller: lying or stale). */
  readonly dissenters: string[];
  /** Peers that did not answer, with why. */
  readonly silent: { peer: string; error: string }[];
  /** What this node now serves (pass it as `replaces` to the next `serveModel`); null without reshare. */
  readonly served: ServedModel | null;
}

/**
 * Fetches the model the epoch's peers agree on. Throws `ManifestDisagreementError` when no
 * manifest has a majority, `PayloadFetchError` when a blob could not be fetched from any
 * supporter, `ManifestSizeError` (before any tensor is fetched) when the manifest's sizes are
 * not its config's, `ManifestDecodeError` / `ModelBlobError` when the agreed blobs are not a
 * model.
 */
export async function fetchModel(
  payloads: PayloadService,
  options: FetchModelOptions,
): Promise<FetchedModel> {
  const { providers, signal } = options;
  const timeoutMs = options.manifestTimeoutMs ?? DEFAULT_MANIFEST_TIMEOUT_MS;
  const reports: ManifestReport[] = [];
  const silent: { peer: string; error: string }[] = [];
  // Once one hash is reported by more than half of all providers, no other answer can change
  // the outcome: stop waiting for the rest (e.g. other joiners, who answer NotFound until
  // their requests time out).
  const decided = new AbortController();
  const majority = Math.floor(providers.length / 2) + 1;
  const votes = new Map<ContentHash, number>();
  await Promise.all(providers.map(async (key) => {
    const peer = bytesToHex(key);
    const limits = [AbortSignal.timeout(timeoutMs), decided.signal];
    try {
      const { hash } = await payloads.fetchNamed(MANIFEST_NAME, {
        providers: [key],
        signal: AbortSignal.any(signal === undefined ? limits : [signal, ...limits]),
        maxBytes: MAX_MANIFEST_BYTES,
      });
      reports.push({ peer, hash });
      const count = (votes.get(hash) ?? 0) + 1;
      votes.set(hash, count);
      if (count >= majority) decided.abort();
    } catch (e) {
      signal?.throwIfAborted();
      silent.push({ peer, error: decided.signal.aborted ? "not needed" : (e as Error).message });
    }
  }));
  // Keep the providers' order (reports arrive in completion order).
  const order = new Map(providers.map((k, i) => [bytesToHex(k), i]));
  reports.sort((a, b) => (order.get(a.peer) ?? 0) - (order.get(b.peer) ?? 0));
  const agreed = agreeOnManifest(reports, { minSupporters: options.minSupporters });
  const supporterKeys = providers.filter((k) => agreed.supporters.includes(bytesToHex(k)));
  const reshare = options.reshare ?? true;
  const blobs = await fetchModelBlobs(payloads, {
    providers: supporterKeys,
    manifestHash: agreed.hash,
    signal,
    reshare,
    sizesFrom: { blob: CONFIG_BLOB, maxBytes: MAX_CONFIG_BLOB_BYTES, sizes: tensorBlobSizes },
  });
  const model = modelFromBlobs(blobs);
  return {
    ...model,
    manifestHash: agreed.hash,
    supporters: agreed.supporters,
    dissenters: agreed.dissenters,
    silent,
    served: reshare ? servedHashes(payloads, agreed.hash) : null,
  };
}
