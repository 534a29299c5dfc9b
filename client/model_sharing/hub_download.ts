/**
 * Downloading a Hub repo into the Hugging Face cache layout that hub.ts reads
 * (`<cache>/models--owner--name/snapshots/<commit>/<file>` and `refs/main`), over
 * `GET {endpoint}/{repo_id}/resolve/{revision}/{file}` as huggingface_hub does. The commit comes
 * from the `X-Repo-Commit` response header (falling back to the requested revision).
 *
 * This path needs huggingface.co, which this project's machines cannot reach: it is not used by
 * the client offline, and its tests drive it against a local HTTP server that answers like the
 * Hub. Files are written to a temporary name and renamed, so a failed download never leaves a
 * half-written file that hub.ts would load.
 *
 * @module
 */
import { dirname, join } from "node:path";
import type { HubRepo } from "../../common/mod.ts";
import { CONFIG_FILE, hfCacheFolderName, WEIGHTS_FILE } from "../../model/mod.ts";

/** The public Hub. */
export const DEFAULT_HUB_ENDPOINT = "https://huggingface.co";

/** A download failed; the message names the URL and the HTTP status or error. */
export class HubDownloadError extends Error {
  /** The URL that failed. */
  readonly url: string;
  /** Builds the error. */
  constructor(url: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HubDownloadError";
    this.url = url;
  }
}

/** Options for {@link downloadHubRepo}. */
export interface HubDownloadOptions {
  /** The cache root to write into (see hub.ts `defaultHfCache`). */
  readonly cacheDir: string;
  /** Hub base URL (default {@link DEFAULT_HUB_ENDPOINT}). */
  readonly endpoint?: string;
  /** Sent as `Authorization: Bearer …` (the `HF_TOKEN` of gated repos). */
  readonly token?: string;
  /** Files to fetch (default `config.json` and `model.safetensors`). */
  readonly files?: readonly string[];
  /** Aborts the download. */
  readonly signal?: AbortSignal;
  /** `fetch`, injectable for tests. */
  readonly fetch?: typeof fetch;
}

/** The resolve URL of one file of a repo at a revision. */
export function hubFileUrl(
  repo: HubRepo,
  file: string,
  endpoint: string = DEFAULT_HUB_ENDPOINT,
): string {
  if (!/^\w[\w.-]*(\/\w[\w.-]*)?$/.test(repo.repoId)) {
    throw new RangeError(`repo id "${repo.repoId}" is not of the form owner/name`);
  }
  const revision = encodeURIComponent(repo.revision ?? "main");
  const path = file.split("/").map(encodeURIComponent).join("/");
  return `${endpoint.replace(/\/+$/, "")}/${repo.repoId}/resolve/${revision}/${path}`;
}

/**
 * Downloads `files` of `repo` into the cache and returns the snapshot folder (which hub.ts then
 * resolves). Throws {@link HubDownloadError} on any HTTP error.
 */
export async function downloadHubRepo(repo: HubRepo, options: HubDownloadOptions): Promise<string> {
  const doFetch = options.fetch ?? fetch;
  const files = options.files ?? [CONFIG_FILE, WEIGHTS_FILE];
  const root = join(options.cacheDir, hfCacheFolderName(repo.repoId));
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let commit: string | null = null;
  for (const file of files) {
    const url = hubFileUrl(
      { repoId: repo.repoId, revision: commit ?? repo.revision },
      file,
      options.endpoint,
    );
    let response: Response;
    try {
      response = await doFetch(url, { headers, signal: options.signal });
    } catch (cause) {
      throw new HubDownloadError(url, `Cannot download ${url}: ${(cause as Error).message}`, {
        cause,
      });
    }
    if (!response.ok || response.body === null) {
      await response.body?.cancel();
      throw new HubDownloadError(url, `Cannot download ${url}: HTTP ${response.status}`);
    }
    commit ??= response.headers.get("x-repo-commit") ?? repo.revision ?? "main";
    if (!/^[\w.-]+$/.test(commit)) {
      await response.body.cancel();
      throw new HubDownloadError(url, `${url} names an unusable commit "${commit}"`);
    }
    const target = join(root, "snapshots", commit, file);
    await Deno.mkdir(dirname(target), { recursive: true });
    const partial = `${target}.partial`;
    try {
      await Deno.writeFile(partial, response.body, { signal: options.signal });
      await Deno.rename(partial, target);
    } catch (cause) {
      await Deno.remove(partial).catch(() => {});
      throw new HubDownloadError(
        url,
        `Cannot save ${url} to "${target}": ${(cause as Error).message}`,
        {
          cause,
        },
      );
    }
  }
  const snapshot = join(root, "snapshots", commit ?? repo.revision ?? "main");
  if (repo.revision === null && commit !== null) {
    await Deno.mkdir(join(root, "refs"), { recursive: true });
    await Deno.writeTextFile(join(root, "refs", "main"), commit);
  }
  return snapshot;
}
