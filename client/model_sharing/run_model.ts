/**
 * The client's model load in one call: the parameters an epoch starts from (`step`, the epoch's
 * first step), from wherever they can be had, accepted only if they are the run's.
 *
 * Which parameters are the run's: when the coordinator recorded a digest for `step`
 * (coordinator/core/params_digest.ts), exactly those; a source whose parameters have another digest
 * is refused, whatever it is. Without a record for `step`, a P2P epoch takes what a majority of
 * the answering peers serve, a repo's weights are taken as the operator's checkpoint, and the
 * seeded init only while the run has recorded nothing else: a run whose parameters ever moved
 * away from it never restarts from it (that would silently reset the model).
 *
 * Sources, in order, the first acceptable one wins:
 * 1. `--model DIR` (override): that folder (weights, or the run-seeded init without them);
 * 2. the epoch's other clients (P2P model sharing, fetch.ts), when the checkpoint is `P2P` or the
 *    run has trained (step > 1: someone may hold its model even if the coordinator fell back
 *    to `Hub` after a restart);
 * 3. `localCheckpoints`: folders this client wrote itself (`{checkpoint-dir}/{run}-step{N}`),
 *    taken only with a matching record;
 * 4. `Hub` / `Dummy` (or `P2P` with a record): the repo found locally (hub.ts: a mapping, the
 *    repo id as a path, a mirror folder, or the Hugging Face cache at the revision), else, with
 *    `hubDownload`, downloaded into the cache at its revision (hub_download.ts, the
 *    `@huggingface/hub` library); a folder with only `config.json` gives the init seeded by the
 *    run id, identical on every client. A checkpointer's upload (`Hub { repo, revision }`) is
 *    taken only when its parameters have the digest the run recorded for `step`;
 * `Gcs`, `P2PGcs`, `Ephemeral` are not supported (clear error).
 *
 * When none is acceptable it throws {@link ModelUnavailableError} listing what each source
 * offered, so the client can say what it waits for and retry.
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import { runInitSeed } from "../model_source.ts";
import type { PayloadService } from "../../net/p2p/mod.ts";
import { type FetchedModel, fetchModel, ModelUnavailableError } from "./fetch.ts";
import type { ModelLoadProgress } from "./load_progress.ts";
import { type ServedModel, weightBytes } from "./serve.ts";
import type { PublicKeyBytes } from "../../common/mod.ts";
import { downloadHubRepo } from "./hub_download.ts";
import {
  hfCacheFolderName,
  type HubCheckpoint,
  HubCheckpointError,
  type HubLookupOptions,
  initParamsParallel,
  type LlamaConfig,
  loadHubCheckpoint,
  type ParamLayout,
  readModelDir,
} from "../../model/mod.ts";
import type { Checkpoint } from "../../coordinator/core/mod.ts";
import { digestBytesYielding } from "../../shaders/mod.ts";

export { ModelUnavailableError };

/** Whether `repoId` names a Hub repo (`owner/name`), not a local path. */
function isHubRepoId(repoId: string): boolean {
  return /^\w[\w.-]*\/\w[\w.-]*$/.test(repoId);
}

/** A checkpoint this client cannot load. */
export class UnsupportedCheckpointError extends Error {
  /** Builds the error. */
  constructor(message: string) {
    super(message);
    this.name = "UnsupportedCheckpointError";
  }
}

/** The model a client starts an epoch with, and where it came from. */
export interface RunModel {
  /** `p2p`: fetched from peers; `loaded`: weights from a folder; `seeded`: run-seeded init. */
  readonly source: "p2p" | "loaded" | "seeded";
  /** The folder read, or `p2p:<manifest hash>`. */
  readonly origin: string;
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  readonly weights: Float32Array;
  /** The parameters' digest (shaders/digest.ts), hex. */
  readonly digest: string;
  /** For `p2p`: the fetch's details (supporters, dissenters, silent peers). */
  readonly fetched: FetchedModel | null;
  /** What this node now serves (p2p reshare), to pass as `replaces` to the next `serveModel`. */
  readonly served: ServedModel | null;
}

/** Options for {@link loadRunModel}. */
export interface LoadRunModelOptions {
  readonly checkpoint: Checkpoint;
  /** Seeds the init of a weightless folder (client/model_source.ts `runInitSeed`). */
  readonly runId: string;
  /** The run step whose parameters are loaded: the epoch's first step. */
  readonly step: number;
  /** The digest (hex) the run recorded for `step`, or null when it has none. */
  readonly recordedDigest: string | null;
  /** Every digest (hex) the run recorded (coordinator state `paramsDigests`), any step. */
  readonly runDigests?: readonly string[];
  /** This client's payload service (P2P fetch). */
  readonly payloads: PayloadService;
  /** The epoch's other clients' p2p keys (P2P fetch). */
  readonly providers: readonly PublicKeyBytes[];
  /** A local HF folder overriding the checkpoint (`--model`). */
  readonly override?: string | null;
  /** Folders this client saved the run's model to, checked against the record. */
  readonly localCheckpoints?: readonly string[];
  /** Hub lookup (mapping, base folder, caches). */
  readonly hub?: HubLookupOptions;
  /**
   * Where to download a `Hub` repo that is not on disk (the Hub's URL, an `hf_…` token for
   * private repos, the cache to fill); none: local folders only.
   */
  readonly hubDownload?: HubDownloadTarget | null;
  /** How long each peer may take to hand over its manifest (fetch.ts default). */
  readonly manifestTimeoutMs?: number;
  /** Hears how far a peer fetch, a seeded init and each digest got (load_progress.ts). */
  readonly progress?: ModelLoadProgress;
  readonly signal?: AbortSignal;
}

/** Where {@link loadRunModel} downloads a Hub repo it cannot find locally. */
export interface HubDownloadTarget {
  /** The Hub's base URL. */
  readonly endpoint: string;
  /** An `hf_…` token (private or gated repos); none: anonymous. */
  readonly token?: string;
  /** The Hugging Face cache to download into (hub.ts then reads it). */
  readonly cacheDir: string;
}

type FolderRead = { config: LlamaConfig; layout: ParamLayout; weights: Float32Array | null };

/** Loads the epoch's model from the first source that has the run's (see the module doc). */
export async function loadRunModel(options: LoadRunModelOptions): Promise<RunModel> {
  const { checkpoint, runId, step, recordedDigest } = options;
  const refusals: string[] = [];
  /** A folder's weights read a tensor at a time, said as the `read` phase. */
  const reading = () => ({ onProgress: options.progress?.("read") });
  /** A folder's model if acceptable, else null (and why, in `refusals`). */
  const fromFolder = async (
    origin: string,
    read: FolderRead,
    local = false,
  ): Promise<RunModel | null> => {
    const seeded = read.weights === null;
    const weights = read.weights ??
      await initParamsParallel(read.layout, {
        config: read.config,
        seed: runInitSeed(runId),
        onProgress: options.progress?.("seeded_init"),
      });
    // Yielding between chunks: the TUI repaints while a 1B model is digested (seconds).
    const digest = await digestBytesYielding(weightBytes({ ...read, weights }), {
      onProgress: options.progress?.("digest"),
    });
    const what = `${seeded ? "the seeded init of" : "the weights in"} ${origin}`;
    if (recordedDigest !== null && digest !== recordedDigest) {
      refusals.push(
        `${what} have digest ${digest}, but the run recorded ${recordedDigest} for step ${step}`,
      );
      return null;
    }
    if (recordedDigest === null && local) {
      refusals.push(`${what}: the run recorded no digest to check them against`);
      return null;
    }
    const moved = (options.runDigests ?? []).find((d) => d !== digest);
    if (recordedDigest === null && seeded && moved !== undefined) {
      refusals.push(
        `${what}: the run recorded other parameters (${moved.slice(0, 16)}…), it does not ` +
          `restart from its init`,
      );
      return null;
    }
    return {
      source: seeded ? "seeded" : "loaded",
      origin,
      config: read.config,
      layout: read.layout,
      weights,
      digest,
      fetched: null,
      served: null,
    };
  };

  if (
    checkpoint.kind === "Gcs" || checkpoint.kind === "P2PGcs" || checkpoint.kind === "Ephemeral"
  ) {
    if (!options.override) {
      throw new UnsupportedCheckpointError(
        `checkpoint ${checkpoint.kind} cannot be loaded by this client: pass --model DIR ` +
          `(a local HF folder)`,
      );
    }
  }
  if (options.override) {
    const base = options.hub?.baseDir ?? Deno.cwd();
    const folder = isAbsolute(options.override) ? options.override : join(base, options.override);
    const model = await fromFolder(folder, await readModelDir(folder, reading()));
    if (model !== null) return model;
  }
  const history = (options.runDigests ?? []).length > 0;
  const tryPeers = checkpoint.kind === "P2P" || step > 1 || recordedDigest !== null;
  if (tryPeers && options.providers.length > 0) {
    try {
      const fetched = await fetchModel(options.payloads, {
        providers: options.providers,
        step,
        expectedDigest: recordedDigest,
        manifestTimeoutMs: options.manifestTimeoutMs,
        progress: options.progress,
        signal: options.signal,
      });
      return {
        source: "p2p",
        origin: `p2p:${fetched.manifestHash}`,
        config: fetched.config,
        layout: fetched.layout,
        weights: fetched.weights,
        digest: fetched.digest,
        fetched,
        served: fetched.served,
      };
    } catch (e) {
      options.signal?.throwIfAborted();
      refusals.push(`peers: ${(e as Error).message}`);
    }
  } else if (tryPeers) {
    refusals.push("peers: this epoch has no other client");
  }
  for (const folder of options.localCheckpoints ?? []) {
    let read: FolderRead;
    try {
      read = await readModelDir(folder, reading());
    } catch {
      continue; // not written (or not this step's): nothing to refuse
    }
    const model = await fromFolder(folder, read, true);
    if (model !== null) return model;
  }
  // A P2P run's repo holds older weights than the run's: only a record can make them fit (or a
  // run that never recorded any, whose model nobody ever held).
  const repo = checkpoint.kind === "Hub" || checkpoint.kind === "Dummy" ||
      checkpoint.kind === "P2P"
    ? checkpoint.repo
    : null;
  if (repo !== null && (checkpoint.kind !== "P2P" || recordedDigest !== null || !history)) {
    const where = `${checkpoint.kind} repo ${repo.repoId}` +
      (repo.revision === null ? "" : `@${repo.revision}`);
    const download = isHubRepoId(repo.repoId) ? options.hubDownload ?? null : null;
    let local: HubCheckpoint | null = null;
    let missing: Error | null = null;
    try {
      local = await loadHubCheckpoint(repo, { ...options.hub, ...reading() });
    } catch (e) {
      if (!(e instanceof HubCheckpointError)) throw e;
      missing = e;
    }
    if (local !== null) {
      const model = await fromFolder(`${local.folder} (${where})`, local);
      if (model !== null) return { ...model, origin: local.folder };
    }
    // Not on disk, or a copy with other parameters (a mirror of an older upload): the Hub has
    // the revision itself.
    const cached = download === null || repo.revision === null
      ? null
      : join(download.cacheDir, hfCacheFolderName(repo.repoId), "snapshots", repo.revision);
    if (download !== null && local?.folder !== cached) {
      try {
        const progress = options.progress;
        const snapshot = await downloadHubRepo(repo, {
          ...download,
          signal: options.signal,
          progress: progress && (() => progress("download")),
        });
        const model = await fromFolder(
          `${snapshot} (${where}, downloaded)`,
          await readModelDir(snapshot, reading()),
        );
        if (model !== null) return { ...model, origin: snapshot };
      } catch (e) {
        options.signal?.throwIfAborted();
        refusals.push(
          `${where}: ${missing === null ? "" : `not on disk (${missing.message}), and `}` +
            `the download from ${download.endpoint} failed: ${(e as Error).message}`,
        );
      }
    } else if (missing !== null) {
      refusals.push(`${checkpoint.kind} repo: ${missing.message}`);
    }
  } else if (repo !== null) {
    refusals.push(`the P2P checkpoint's repo "${repo.repoId}" is older than the run's model`);
  }
  const wanted = recordedDigest === null
    ? `the parameters of step ${step}`
    : `the parameters of step ${step} (digest ${recordedDigest.slice(0, 16)}…)`;
  throw new ModelUnavailableError(`no source has ${wanted}: ${refusals.join("; ")}`);
}
