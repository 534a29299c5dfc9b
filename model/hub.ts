/**
 * `Hub` checkpoints read from local folders: where a run's `HubRepo { repo_id, revision }`
 * lives on this machine, and loading the HF-format folder there (`config.json` +
 * `model.safetensors`, or a sharded index). Nothing here touches the network; downloading into
 * the same cache layout is hub_download.ts, kept apart because it cannot run offline.
 *
 * A repo id is looked up, first match wins:
 *
 * 1. `mapping[repoId + "@" + revision]`, then `mapping[repoId]` (explicit repo → folder table);
 * 2. the repo id read as a path (absolute, or relative to `baseDir`), when that folder holds a
 *    `config.json`: the bundled runs name `config/models/llama-tiny` this way;
 * 3. `hubDir/<repo id>` (a plain mirror: `hubDir/owner/name/config.json`), `hubDir` defaulting
 *    to `$PSYCHE_HUB_DIR`;
 * 4. the Hugging Face cache as `huggingface-cli download` fills it:
 *    `<cache>/models--owner--name/snapshots/<revision>/` where the revision defaults to the
 *    commit in `refs/main`, and `<cache>` defaults to `$HF_HUB_CACHE`, else `$HF_HOME/hub`,
 *    else `~/.cache/huggingface/hub`.
 *
 * A folder with `config.json` but no weights is a valid `Dummy`/fresh-init checkpoint: `weights`
 * comes back null and the caller builds its seeded init.
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import { CONFIG_FILE, readModelDir, type ReadProgress } from "./checkpoint.ts";
import type { LlamaConfig } from "./hf_config.ts";
import type { ParamLayout } from "./params.ts";
import type { HubRepo } from "../common/mod.ts";

/** The repo cannot be found or read; the message names every place looked at. */
export class HubCheckpointError extends Error {
  /** The repo id asked for. */
  readonly repoId: string;
  /** Builds the error. */
  constructor(repoId: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HubCheckpointError";
    this.repoId = repoId;
  }
}

/** Where to look for repos (see the module doc for the order). */
export interface HubLookupOptions {
  /** Explicit repo id (or `id@revision`) → folder table. */
  readonly mapping?: Readonly<Record<string, string>>;
  /** Folder relative repo ids and mapped folders resolve against (default: working directory). */
  readonly baseDir?: string;
  /** A plain mirror of repos as `hubDir/owner/name` (default `$PSYCHE_HUB_DIR`). */
  readonly hubDir?: string;
  /** The Hugging Face hub cache (default from `$HF_HUB_CACHE`, `$HF_HOME`, `$HOME`). */
  readonly hfCache?: string;
  /** Environment lookup (default `Deno.env.get`), injectable for tests. */
  readonly env?: (name: string) => string | undefined;
}

/** The folder name of a repo in the Hugging Face cache: `models--owner--name`. */
export function hfCacheFolderName(repoId: string): string {
  return `models--${repoId.split("/").join("--")}`;
}

/** The Hugging Face cache root from the environment, as huggingface_hub computes it. */
export function defaultHfCache(env: (name: string) => string | undefined): string | null {
  const explicit = env("HF_HUB_CACHE");
  if (explicit) return explicit;
  const home = env("HF_HOME");
  if (home) return join(home, "hub");
  const user = env("HOME");
  return user ? join(user, ".cache", "huggingface", "hub") : null;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return false;
    throw e;
  }
}

async function readRef(path: string): Promise<string | null> {
  try {
    return (await Deno.readTextFile(path)).trim() || null;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/**
 * The local folder holding `repo`. Throws {@link HubCheckpointError} listing every candidate
 * tried when none holds a `config.json`.
 */
export async function resolveHubRepo(
  repo: HubRepo,
  options: HubLookupOptions = {},
): Promise<string> {
  const env = options.env ?? ((name: string) => Deno.env.get(name));
  const base = options.baseDir ?? Deno.cwd();
  const resolve = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const tried: string[] = [];
  const candidates: string[] = [];
  const mapped =
    (repo.revision !== null ? options.mapping?.[`${repo.repoId}@${repo.revision}`] : undefined) ??
      options.mapping?.[repo.repoId];
  if (mapped !== undefined) {
    // An explicit mapping is final: a wrong entry must not silently fall through to another copy.
    const folder = resolve(mapped);
    if (await isFile(join(folder, CONFIG_FILE))) return folder;
    throw new HubCheckpointError(
      repo.repoId,
      `Hub repo "${repo.repoId}" is mapped to "${folder}", which has no ${CONFIG_FILE}`,
    );
  }
  candidates.push(resolve(repo.repoId));
  const hubDir = options.hubDir ?? env("PSYCHE_HUB_DIR");
  if (hubDir) candidates.push(join(resolve(hubDir), repo.repoId));
  for (const folder of candidates) {
    if (await isFile(join(folder, CONFIG_FILE))) return folder;
    tried.push(folder);
  }
  const cache = options.hfCache ?? defaultHfCache(env);
  if (cache !== null) {
    const root = join(resolve(cache), hfCacheFolderName(repo.repoId));
    const revision = repo.revision ?? await readRef(join(root, "refs", "main"));
    if (revision !== null) {
      const folder = join(root, "snapshots", revision);
      if (await isFile(join(folder, CONFIG_FILE))) return folder;
      tried.push(folder);
    } else {
      tried.push(join(root, "refs", "main"));
    }
  }
  throw new HubCheckpointError(
    repo.repoId,
    `Hub repo "${repo.repoId}"${repo.revision === null ? "" : `@${repo.revision}`} is not ` +
      `available locally: no ${CONFIG_FILE} in ${tried.map((t) => `"${t}"`).join(", ")} ` +
      `(map it with a local folder, set PSYCHE_HUB_DIR, or download it into the HF cache)`,
  );
}

/** A Hub checkpoint read from disk. */
export interface HubCheckpoint {
  readonly folder: string;
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  /** Null when the folder holds only `config.json` (the caller builds its seeded init). */
  readonly weights: Float32Array | null;
}

/**
 * Finds `repo` locally (see {@link resolveHubRepo}) and reads its config and weights. Throws
 * {@link HubCheckpointError} naming the folder when it is missing or unreadable.
 *
 * @example
 * ```ts
 * import { loadHubCheckpoint } from "./hub.ts";
 * const hub = await loadHubCheckpoint({ repoId: "config/models/llama-tiny", revision: null });
 * if (hub.config.hiddenSize !== 64 || hub.weights !== null) throw new Error("unexpected");
 * ```
 */
export async function loadHubCheckpoint(
  repo: HubRepo,
  options: HubLookupOptions & { onProgress?: ReadProgress } = {},
): Promise<HubCheckpoint> {
  const folder = await resolveHubRepo(repo, options);
  try {
    return { folder, ...(await readModelDir(folder, { onProgress: options.onProgress })) };
  } catch (cause) {
    throw new HubCheckpointError(
      repo.repoId,
      `Cannot load Hub repo "${repo.repoId}" from "${folder}": ${(cause as Error).message}`,
      { cause },
    );
  }
}
