/**
 * Downloading a Hub repo into the Hugging Face cache layout that hub.ts reads
 * (`<cache>/models--owner--name/snapshots/<commit>/<file>`, and `refs/main` for an unpinned
 * repo), with the maintained `@huggingface/hub` library (`downloadFile`, and `modelInfo` to learn
 * the commit a branch points to): `config.json`, then `model.safetensors`, or the shard index
 * `model.safetensors.index.json` and every shard it names. A repo with only `config.json` is a
 * valid fresh-init checkpoint.
 *
 * huggingface.co is unreachable from this project's machines: the tests drive this against a
 * local fake Hub (client/testing/fake_hub.ts) that answers the library's endpoints. Files are
 * written to a temporary name and renamed, so a failed download never leaves a half-written
 * file that hub.ts would load.
 *
 * Every request the library makes goes through one `fetch` that carries the caller's abort
 * signal (the library's download calls take none) and a stall watchdog: a request that waits
 * longer than `stallTimeoutMs` for its answer or for its next bytes is cut, and the download
 * fails naming the file, rather than a joiner hanging on a Hub that stopped sending. A slow but
 * moving download is never cut: the watchdog measures silence, not total time.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { downloadFile, modelInfo } from "@huggingface/hub";
import type { HubRepo } from "../../common/mod.ts";
import { CONFIG_FILE, hfCacheFolderName, INDEX_FILE, WEIGHTS_FILE } from "../../model/mod.ts";
import { obeyingSignal } from "../../net/mod.ts";

/** The public Hub. */
export const DEFAULT_HUB_ENDPOINT = "https://huggingface.co";

/** A download failed; the message names the repo, the file and the Hub's answer. */
export class HubDownloadError extends Error {
  /** The file's resolve URL (or the repo's, when no file was reached). */
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
  /** An `hf_…` token, for private or gated repos (none: anonymous). */
  readonly token?: string;
  /** Aborts the download. */
  readonly signal?: AbortSignal;
  /** Silence after which a request is cut (default {@link DEFAULT_STALL_TIMEOUT_MS}). */
  readonly stallTimeoutMs?: number;
  /** `fetch`, injectable for tests. */
  readonly fetch?: typeof fetch;
  /**
   * Called as each weights file (`model.safetensors` or a shard) starts; what it returns hears
   * that file's bytes written so far and its size: a 1B model's 2.5-4.9 GB take minutes.
   */
  readonly progress?: (file: string) => (doneBytes: number, totalBytes: number) => void;
}

/** How long a request may wait for its answer or its next bytes, by default. */
export const DEFAULT_STALL_TIMEOUT_MS = 60_000;

const REPO_ID = /^\w[\w.-]*\/\w[\w.-]*$/;

/** The reason a watched request was cut. */
export class HubStallError extends Error {
  /** Builds the error. */
  constructor(url: string, ms: number) {
    super(`the Hub sent nothing for ${ms / 1000} s (${url})`);
    this.name = "HubStallError";
  }
}

/**
 * `base` with the abort `signal` on every request and a watchdog that cuts a request once it
 * has waited `stallMs` for its response or for its body's next chunk.
 */
export function watchedFetch(
  base: typeof fetch,
  signal: AbortSignal | undefined,
  stallMs: number,
): typeof fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const watchdog = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => watchdog.abort(new HubStallError(url, stallMs)), stallMs);
    };
    const disarm = () => clearTimeout(timer);
    const signals = [watchdog.signal, signal, init?.signal ?? undefined].filter(
      (s): s is AbortSignal => s !== undefined,
    );
    const stop = AbortSignal.any(signals);
    arm();
    let response: Response;
    try {
      response = await base(input, { ...init, signal: stop });
    } catch (error) {
      throw watchdog.signal.aborted ? watchdog.signal.reason : error;
    } finally {
      disarm();
    }
    // Deno's fetch does not always end a body read that is pending when its signal aborts
    // (net/fetch_body.ts): each read races the abort itself, re-arming the watchdog.
    return obeyingSignal(response, stop, { beforeRead: arm, afterRead: disarm });
  };
}
const COMMIT = /^[0-9a-f]{40}$/;

/** Passes bytes through, telling `onProgress` the bytes passed so far of `total`. */
function counting(
  total: number,
  onProgress: (doneBytes: number, totalBytes: number) => void,
): TransformStream<Uint8Array, Uint8Array> {
  let done = 0;
  return new TransformStream({
    transform(chunk, controller) {
      done += chunk.byteLength;
      onProgress(done, total);
      controller.enqueue(chunk);
    },
  });
}

/** The resolve URL of one file of a repo at a revision. */
export function hubFileUrl(
  repo: HubRepo,
  file: string,
  endpoint: string = DEFAULT_HUB_ENDPOINT,
): string {
  if (!REPO_ID.test(repo.repoId)) {
    throw new RangeError(`repo id "${repo.repoId}" is not of the form owner/name`);
  }
  const revision = encodeURIComponent(repo.revision ?? "main");
  const path = file.split("/").map(encodeURIComponent).join("/");
  return `${endpoint.replace(/\/+$/, "")}/${repo.repoId}/resolve/${revision}/${path}`;
}

/**
 * Downloads the model files of `repo` into the cache and returns the snapshot folder (which
 * hub.ts then resolves). A pinned revision (a 40-hex commit, as checkpointers report) names the
 * snapshot; otherwise the branch's commit is asked first and `refs/main` written. Throws
 * {@link HubDownloadError} naming the file and the Hub's answer on any failure, RangeError on a
 * repo id that is not `owner/name`.
 */
export async function downloadHubRepo(repo: HubRepo, options: HubDownloadOptions): Promise<string> {
  const endpoint = (options.endpoint ?? DEFAULT_HUB_ENDPOINT).replace(/\/+$/, "");
  if (!REPO_ID.test(repo.repoId)) {
    throw new RangeError(`repo id "${repo.repoId}" is not of the form owner/name`);
  }
  const credentials = options.token ? { accessToken: options.token } : {};
  const stallMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  const fetch = watchedFetch(options.fetch ?? globalThis.fetch, options.signal, stallMs);
  const name = repo.repoId;
  const fail = (url: string, what: string, cause: unknown): never => {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new HubDownloadError(url, `Cannot download ${what}: ${reason}`, {
      cause,
    });
  };
  let commit = repo.revision;
  if (commit === null || !COMMIT.test(commit)) {
    const revision = commit ?? "main";
    const url = `${endpoint}/api/models/${name}/revision/${revision}`;
    try {
      const info = await modelInfo({
        name,
        revision,
        hubUrl: endpoint,
        additionalFields: ["sha"],
        fetch,
        ...credentials,
      });
      commit = typeof info.sha === "string" ? info.sha : null;
    } catch (cause) {
      fail(url, `the commit of ${name}@${revision}`, cause);
    }
    if (commit === null || !/^[\w.-]+$/.test(commit)) {
      throw new HubDownloadError(url, `${url} names no usable commit for ${name}@${revision}`);
    }
  }
  const root = join(options.cacheDir, hfCacheFolderName(name));
  const snapshot = join(root, "snapshots", commit);
  /** Downloads `file` into the snapshot; false when the repo has no such file. */
  const fetchFile = async (file: string): Promise<boolean> => {
    const url = hubFileUrl({ repoId: name, revision: commit }, file, endpoint);
    options.signal?.throwIfAborted();
    let blob: Blob | null;
    try {
      blob = await downloadFile({
        repo: { type: "model", name },
        path: file,
        revision: commit!,
        hubUrl: endpoint,
        fetch,
        ...credentials,
      });
    } catch (cause) {
      return fail(url, url, cause);
    }
    if (blob === null) return false;
    const target = join(snapshot, file);
    await Deno.mkdir(dirname(target), { recursive: true });
    const partial = `${target}.partial`;
    const heard = file === CONFIG_FILE || file === INDEX_FILE
      ? undefined
      : options.progress?.(file);
    try {
      const body = heard === undefined ? blob.stream() : blob.stream().pipeThrough(counting(
        blob.size,
        heard,
      ));
      await Deno.writeFile(partial, body, { signal: options.signal });
      await Deno.rename(partial, target);
    } catch (cause) {
      await Deno.remove(partial).catch(() => {});
      options.signal?.throwIfAborted();
      fail(url, `${url} to "${target}"`, cause);
    }
    return true;
  };
  if (!(await fetchFile(CONFIG_FILE))) {
    throw new HubDownloadError(
      hubFileUrl({ repoId: name, revision: commit }, CONFIG_FILE, endpoint),
      `Cannot download ${name}@${commit}: it has no ${CONFIG_FILE}`,
    );
  }
  if (!(await fetchFile(WEIGHTS_FILE)) && (await fetchFile(INDEX_FILE))) {
    const index = JSON.parse(await Deno.readTextFile(join(snapshot, INDEX_FILE)));
    const shards = new Set<string>(Object.values(index?.weight_map ?? {}) as string[]);
    for (const shard of [...shards].sort()) {
      if (!/^[\w.-]+$/.test(shard)) {
        throw new HubDownloadError(
          hubFileUrl({ repoId: name, revision: commit }, INDEX_FILE, endpoint),
          `${name}@${commit}'s ${INDEX_FILE} names an unusable shard "${shard}"`,
        );
      }
      if (!(await fetchFile(shard))) {
        throw new HubDownloadError(
          hubFileUrl({ repoId: name, revision: commit }, shard, endpoint),
          `Cannot download ${name}@${commit}: ${INDEX_FILE} names ${shard}, which it lacks`,
        );
      }
    }
  }
  if (repo.revision === null) {
    await Deno.mkdir(join(root, "refs"), { recursive: true });
    await Deno.writeTextFile(join(root, "refs", "main"), commit);
  }
  return snapshot;
}
