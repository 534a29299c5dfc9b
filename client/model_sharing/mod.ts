/**
 * P2P model sharing and Hub checkpoints: how a client gets the run's model at Warmup and how it
 * serves its own at Cooldown.
 *
 * - `serveModelYielding(payloads, model, { digest })`: at Cooldown, snapshot the parameters into
 *   blobs (bf16 for a tensor whose values are all exactly bf16, f32 otherwise) plus a manifest
 *   of their sha256s and dtypes, and serve them, giving the event loop a turn every few ms
 *   (serve.ts, blobs.ts, steps.ts; `serveModel` does the same in one go);
 * - `fetchModel(payloads, { providers })`: at Warmup of a `P2P` epoch, accept the manifest a
 *   majority of the answering peers serve, fetch every tensor by hash from those peers in
 *   parallel, verified, with retries, and rebuild the model (fetch.ts, quorum.ts);
 * - `downloadHubRepo(repo, { cacheDir, endpoint })`: fill the Hugging Face cache from the Hub
 *   with `@huggingface/hub` (hub_download.ts). Reading a `Hub`/`Dummy` checkpoint from a local
 *   folder is model/hub.ts (`loadHubCheckpoint`); `loadRunModel` downloads one that is not on
 *   disk when given `hubDownload`.
 *
 * Import client/p2p/mod.ts (or its exit fix) before this in an entry point.
 *
 * @example
 * ```ts ignore
 * import { fetchModel, loadHubCheckpoint, serveModelYielding } from "./client/model_sharing/mod.ts";
 * const model = checkpoint.kind === "P2P"
 *   ? await fetchModel(exchange.payloads, { providers: otherClients, signal })
 *   : await loadHubCheckpoint(checkpoint.repo);
 * // … train the epoch; at Cooldown, after the last apply:
 * served = await serveModelYielding(exchange.payloads, { config, layout, weights },
 *   { step, digest: await trainer.paramsHash(), replaces: served });
 * ```
 *
 * @module
 */
export {
  CONFIG_BLOB,
  isBf16Exact,
  MAX_CONFIG_BLOB_BYTES,
  ModelBlobError,
  modelFromBlobs,
  modelToBlobs,
  modelToBlobSteps,
  type SharedModel,
  tensorElements,
} from "./blobs.ts";
export {
  type AgreedManifest,
  agreeOnManifest,
  ManifestDisagreementError,
  type ManifestReport,
} from "./quorum.ts";
export {
  servedHashes,
  type ServedModel,
  servedModel,
  serveModel,
  serveModelYielding,
  type ServeOptions,
  SNAPSHOT_PHASES,
  SNAPSHOT_STEP_BYTES,
  type SnapshotPhase,
  weightBytes,
} from "./serve.ts";
export {
  DEFAULT_MANIFEST_TIMEOUT_MS,
  type FetchedModel,
  fetchModel,
  type FetchModelOptions,
  MAX_MANIFEST_BYTES,
} from "./fetch.ts";
export {
  DEFAULT_HUB_ENDPOINT,
  downloadHubRepo,
  HubDownloadError,
  type HubDownloadOptions,
  hubFileUrl,
} from "./hub_download.ts";
export {
  type HubDownloadTarget,
  loadRunModel,
  type LoadRunModelOptions,
  type RunModel,
  UnsupportedCheckpointError,
} from "./run_model.ts";
export { ModelDigestMismatchError, ModelUnavailableError } from "./fetch.ts";
export { MODEL_LOAD_PHASES, type ModelLoadPhase, type ModelLoadProgress } from "./load_progress.ts";
