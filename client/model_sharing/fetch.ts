/**
 * The joining side of P2P model sharing (Psyche's shared/network/src/p2p_model_sharing.rs). During
 * Warmup of an epoch whose checkpoint is `P2P`, a client that does not hold the model:
 *
 * 1. asks every provider (the epoch's other clients) for the manifest it serves, in parallel,
 *    each within `manifestTimeoutMs` (peers that joined with us answer NotFound and do not vote);
 *    a manifest labels its parameters with their run step and digest;
 * 2. when the run recorded a digest for the step it wants (coordinator/core/params_digest.ts),
 *    takes a manifest that claims exactly that step and digest, from any peer, and stops waiting at
 *    the first; otherwise takes the manifest a strict majority of the answering peers report for
 *    that step (quorum.ts), and stops once one has a majority of all providers;
 * 3. fetches `config.json` (at most 64 KiB), refuses the manifest unless it lists exactly the
 *    config's tensors, each as f32 or bf16 at its size in that dtype, then fetches every tensor by the sha256 the manifest
 *    lists, spread across the peers that reported that manifest, each verified on arrival and
 *    cut at its size, with retries on other peers (net/p2p/model_share.ts and the payload
 *    service's fallback policy);
 * 4. rebuilds the flat f32 model from the blobs (blobs.ts; bf16 blobs expand exactly),
 *    checking every tensor's size, and
 *    checks that the parameters have the digest the manifest claims: a peer can lie about the
 *    label, never get a model with a false label accepted.
 *
 * By default it then serves what it fetched, so later joiners can fetch from it as well.
 *
 * @module
 */
import type { ContentHash } from "../../net/p2p/mod.ts";
import {
  decodeManifest,
  fetchModel as fetchModelBlobs,
  MANIFEST_NAME,
  MAX_MANIFEST_BYTES,
} from "../../net/p2p/mod.ts";
import type { PayloadService } from "../../net/p2p/mod.ts";
import {
  CONFIG_BLOB,
  MAX_CONFIG_BLOB_BYTES,
  modelFromBlobs,
  type SharedModel,
  tensorElements,
} from "./blobs.ts";
import { type AgreedManifest, agreeOnManifest, type ManifestReport } from "./quorum.ts";
import { type ServedModel, serveModelYielding, weightBytes } from "./serve.ts";
import { type PublicKeyBytes, toHex } from "../../common/mod.ts";
import { digestBytesYielding } from "../../shaders/mod.ts";
import type { ModelLoadProgress } from "./load_progress.ts";

/** How long one provider may take to hand over its manifest, by default. */
export const DEFAULT_MANIFEST_TIMEOUT_MS = 8_000;
/** Largest manifest accepted (net/p2p/model_share.ts). */
export { MAX_MANIFEST_BYTES };

/** Options for {@link fetchModel}. */
export interface FetchModelOptions {
  /** The peers that may hold the model (the epoch's other clients), by public key. */
  readonly providers: readonly PublicKeyBytes[];
  /** The run step whose parameters are wanted; manifests of other steps are ignored. */
  readonly step: number;
  /**
   * The digest (hex) the run recorded for `step`: only a manifest claiming it is taken. Null
   * when the run has none: the manifest a majority of the answering peers serve is taken.
   */
  readonly expectedDigest: string | null;
  /** Aborts everything. */
  readonly signal?: AbortSignal;
  /** Fewest peers that must serve the agreed manifest when there is no digest (default 1). */
  readonly minSupporters?: number;
  /** How long each provider may take to answer the manifest request. */
  readonly manifestTimeoutMs?: number;
  /** Serve the fetched model afterwards (default true). */
  readonly reshare?: boolean;
  /** Hears how far the long phases got: the blobs' download (`fetch`), then their `digest`. */
  readonly progress?: ModelLoadProgress;
}

/** A fetched model, with where it came from. */
export interface FetchedModel extends SharedModel {
  readonly manifestHash: ContentHash;
  /** The digest of the parameters (hex), checked against the manifest's claim. */
  readonly digest: string;
  /** Peers (hex keys) that served the chosen manifest. */
  readonly supporters: string[];
  /** Peers that served a different manifest (logged by the caller: lying or stale). */
  readonly dissenters: string[];
  /** Peers that did not answer, with why. */
  readonly silent: { peer: string; error: string }[];
  /** What this node now serves (pass it as `replaces` to the next `serveModel`); null without reshare. */
  readonly served: ServedModel | null;
}

/** No peer serves the wanted parameters; the message says what the peers serve instead. */
export class ModelUnavailableError extends Error {
  /** Builds the error. */
  constructor(message: string) {
    super(message);
    this.name = "ModelUnavailableError";
  }
}

/** A manifest claimed a digest its parameters do not have. */
export class ModelDigestMismatchError extends Error {
  /** Builds the error. */
  constructor(message: string) {
    super(message);
    this.name = "ModelDigestMismatchError";
  }
}

/** The `silent` error of a peer whose manifest was no longer needed when it came. */
const NOT_NEEDED = "not needed";

interface Report extends ManifestReport {
  readonly step: number;
  readonly digest: string;
}

/**
 * Fetches the parameters of `options.step` from the peers (see the module doc). Throws
 * {@link ModelUnavailableError} when no peer serves them (with a recorded digest),
 * `ManifestDisagreementError` when no manifest has a majority (without one),
 * {@link ModelDigestMismatchError} when the chosen manifest's parameters do not have the digest
 * it claims, `PayloadFetchError` when a blob could not be fetched from any provider that may hold it,
 * `ManifestSizeError` (before any tensor is fetched) when the manifest's sizes are not its
 * config's, `ManifestDecodeError` / `ModelBlobError` when the blobs are not a model.
 */
export async function fetchModel(
  payloads: PayloadService,
  options: FetchModelOptions,
): Promise<FetchedModel> {
  const { providers, signal, step, expectedDigest } = options;
  const timeoutMs = options.manifestTimeoutMs ?? DEFAULT_MANIFEST_TIMEOUT_MS;
  const reports: Report[] = [];
  const silent: { peer: string; error: string }[] = [];
  // Stop waiting once the outcome is decided: the first manifest with the recorded digest, or
  // (without one) a hash reported by more than half of all providers; other joiners answer
  // NotFound only when their requests time out.
  const decided = new AbortController();
  const majority = Math.floor(providers.length / 2) + 1;
  const votes = new Map<ContentHash, number>();
  await Promise.all(providers.map(async (key) => {
    const peer = toHex(key);
    const limits = [AbortSignal.timeout(timeoutMs), decided.signal];
    try {
      const { hash, bytes } = await payloads.fetchNamed(MANIFEST_NAME, {
        providers: [key],
        signal: AbortSignal.any(signal === undefined ? limits : [signal, ...limits]),
        maxBytes: MAX_MANIFEST_BYTES,
      });
      const { label } = decodeManifest(bytes);
      const report = { peer, hash, step: label.step, digest: toHex(label.digest) };
      reports.push(report);
      if (report.step !== step) return;
      if (expectedDigest !== null) {
        if (report.digest === expectedDigest) decided.abort();
        return;
      }
      const count = (votes.get(hash) ?? 0) + 1;
      votes.set(hash, count);
      if (count >= majority) decided.abort();
    } catch (e) {
      signal?.throwIfAborted();
      silent.push({ peer, error: decided.signal.aborted ? NOT_NEEDED : (e as Error).message });
    }
  }));
  // Keep the providers' order (reports arrive in completion order).
  const order = new Map(providers.map((k, i) => [toHex(k), i]));
  reports.sort((a, b) => (order.get(a.peer) ?? 0) - (order.get(b.peer) ?? 0));
  const chosen = chooseManifest(reports, options);
  const supporterKeys = providers.filter((k) => chosen.supporters.includes(toHex(k)));
  // Peers whose manifest request was cut short once the manifest was decided (a recorded
  // digest stops at the first match) most likely hold the same blobs, and each blob is checked
  // against its hash: spreading the tensors over them too uses every provider's uplink, not only
  // the first to answer's. One that lacks a blob costs a NotFound, then the next provider.
  const unasked = new Set(silent.filter((s) => s.error === NOT_NEEDED).map((s) => s.peer));
  const blobProviders = [...supporterKeys, ...providers.filter((k) => unasked.has(toHex(k)))];
  const reshare = options.reshare ?? true;
  const { entries, blobs } = await fetchModelBlobs(payloads, {
    providers: blobProviders,
    manifestHash: chosen.hash,
    signal,
    reshare: false,
    sizesFrom: { blob: CONFIG_BLOB, maxBytes: MAX_CONFIG_BLOB_BYTES, elements: tensorElements },
    onProgress: options.progress?.("fetch"),
  });
  const model = modelFromBlobs(entries.map((e) => [e.name, blobs.get(e.name)!, e.dtype]));
  const digest = await digestBytesYielding(weightBytes(model), {
    onProgress: options.progress?.("digest"),
  });
  if (digest !== chosen.digest) {
    throw new ModelDigestMismatchError(
      `the model manifest ${chosen.hash.slice(0, 12)}… served by ${
        chosen.supporters.map((p) => p.slice(0, 12)).join(", ")
      } claims parameters ${chosen.digest.slice(0, 16)}…, the parameters it lists have ` +
        `${digest.slice(0, 16)}…`,
    );
  }
  // Serve it only once it proved to be what it claims.
  // The digest just checked is the model's: not hashed again, and the loop keeps turning.
  const served = reshare ? await serveModelYielding(payloads, model, { step, digest }) : null;
  return {
    ...model,
    manifestHash: chosen.hash,
    digest,
    supporters: chosen.supporters,
    dissenters: chosen.dissenters,
    silent,
    served,
  };
}

/** The manifest to fetch: the recorded digest's, or the majority's; see {@link fetchModel}. */
function chooseManifest(
  reports: readonly Report[],
  options: FetchModelOptions,
): AgreedManifest & { digest: string } {
  const { step, expectedDigest } = options;
  const forStep = reports.filter((r) => r.step === step);
  if (expectedDigest === null) {
    const agreed = agreeOnManifest(forStep, { minSupporters: options.minSupporters });
    const digest = forStep.find((r) => r.hash === agreed.hash)!.digest;
    return {
      ...agreed,
      dissenters: reports.filter((r) => r.hash !== agreed.hash).map((r) => r.peer),
      digest,
    };
  }
  const matching = forStep.filter((r) => r.digest === expectedDigest);
  if (matching.length === 0) {
    const served = reports.map((r) =>
      `${r.peer.slice(0, 12)}… serves step ${r.step} ` +
      `(${r.digest.slice(0, 12)}…)`
    );
    throw new ModelUnavailableError(
      `no peer serves the parameters of step ${step} (digest ${expectedDigest.slice(0, 16)}…)` +
        (served.length === 0 ? ": no peer answered" : `: ${served.join("; ")}`),
    );
  }
  // Honest peers at the same step serve byte-identical manifests; take the most served.
  const agreed = agreeOnManifest(matching);
  return {
    ...agreed,
    dissenters: reports.filter((r) => r.hash !== agreed.hash).map((r) => r.peer),
    digest: expectedDigest,
  };
}
