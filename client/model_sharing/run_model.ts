/**
 * The client's Warmup model load in one call: where the run's model comes from, given the
 * epoch's checkpoint (psyche.md §2.11):
 *
 * - `--model DIR` override: that folder (weights, or the run-seeded init when it has none);
 * - `P2P` (a previous epoch trained the model; it lives on the clients): fetched from the
 *   epoch's other clients with {@link fetchModel}. A failure is an error, never a silent
 *   fallback to the Hub repo, whose weights are older than everyone else's;
 * - `Hub` / `Dummy`: the repo found locally by {@link loadHubCheckpoint}; a folder with only
 *   `config.json` gives the init seeded by the run id, identical on every client;
 * - `Gcs`, `P2PGcs`, `Ephemeral`: not supported here (clear error).
 *
 * @module
 */
import type { Checkpoint, PublicKeyBytes } from "../../coordinator/types.ts";
import { readModelDir } from "../../model/checkpoint.ts";
import type { LlamaConfig } from "../../model/hf_config.ts";
import { initParams, type ParamLayout } from "../../model/params.ts";
import { isAbsolute, join } from "node:path";
import { runInitSeed } from "../model_source.ts";
import type { PayloadService } from "../p2p/payload_service.ts";
import { type FetchedModel, fetchModel } from "./fetch.ts";
import { type HubLookupOptions, loadHubCheckpoint } from "./hub.ts";
import type { ServedModel } from "./serve.ts";

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
  /** This client's payload service (P2P fetch). */
  readonly payloads: PayloadService;
  /** The epoch's other clients' p2p keys (P2P fetch). */
  readonly providers: readonly PublicKeyBytes[];
  /** A local HF folder overriding the checkpoint (`--model`). */
  readonly override?: string | null;
  /** Hub lookup (mapping, base folder, caches). */
  readonly hub?: HubLookupOptions;
  readonly signal?: AbortSignal;
}

/** Loads the epoch's model from where the checkpoint says (see the module doc). */
export async function loadRunModel(options: LoadRunModelOptions): Promise<RunModel> {
  const { checkpoint, runId } = options;
  const fromFolder = (
    origin: string,
    read: { config: LlamaConfig; layout: ParamLayout; weights: Float32Array | null },
  ): RunModel => ({
    source: read.weights === null ? "seeded" : "loaded",
    origin,
    config: read.config,
    layout: read.layout,
    weights: read.weights ?? initParams(read.layout, read.config, runInitSeed(runId)),
    fetched: null,
    served: null,
  });
  if (options.override) {
    const base = options.hub?.baseDir ?? Deno.cwd();
    const folder = isAbsolute(options.override) ? options.override : join(base, options.override);
    return fromFolder(folder, await readModelDir(folder));
  }
  switch (checkpoint.kind) {
    case "P2P": {
      const fetched = await fetchModel(options.payloads, {
        providers: options.providers,
        signal: options.signal,
      });
      return {
        source: "p2p",
        origin: `p2p:${fetched.manifestHash}`,
        config: fetched.config,
        layout: fetched.layout,
        weights: fetched.weights,
        fetched,
        served: fetched.served,
      };
    }
    case "Hub":
    case "Dummy": {
      const hub = await loadHubCheckpoint(checkpoint.repo, options.hub);
      return fromFolder(hub.folder, hub);
    }
    case "Gcs":
    case "P2PGcs":
    case "Ephemeral":
      throw new UnsupportedCheckpointError(
        `checkpoint ${checkpoint.kind} cannot be loaded by this client: pass --model DIR ` +
          `(a local HF folder)`,
      );
  }
}
