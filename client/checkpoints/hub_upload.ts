/**
 * Uploading a checkpoint folder to a Hugging Face Hub model repo, in one commit, with the
 * maintained `@huggingface/hub` library (its `commitIter`, the generator form of `commit`):
 * every regular file of the folder (`config.json`, `model.safetensors` or the shards and their
 * index) under its own name at the repo's root. The library asks the Hub which files go through
 * LFS (safetensors do), uploads those first, then commits; the commit's oid is the revision the
 * client reports to the coordinator as `Checkpoint::Hub { repo, revision }` (Psyche's rule).
 *
 * A repo that does not exist yet is created first, private, so a run's checkpoints are never
 * published by accident (Psyche requires the repo to exist). The token must be allowed to write
 * (`HF_TOKEN`, as Psyche); the library refuses tokens that do not start with `hf_`. `hubUrl`
 * points the library at another endpoint (a mirror, or the local fake Hub tests use:
 * client/testing/fake_hub.ts).
 *
 * A failure the Hub may get over (no answer, HTTP 5xx, 429) is retried with doubling delays, the
 * whole upload again: LFS objects already stored are not sent twice, since the LFS batch answer
 * asks only for those it lacks. Anything else (a refused token, a 4xx) fails at once.
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import { pathToFileURL } from "node:url";
import { commitIter, createRepo, repoExists } from "@huggingface/hub";
import { abortableSleep, obeyingSignal } from "../../net/mod.ts";

/** The public Hub. */
export const HUB_URL = "https://huggingface.co";

/** What a Hub upload needs: where, which repo, and the write token. */
export interface HubTarget {
  /** `owner/name` of an existing model repo. */
  readonly repoId: string;
  /** The Hub's base URL (default {@link HUB_URL}). */
  readonly hubUrl?: string;
  /** A write token (`hf_…`). */
  readonly token: string;
  /** Tries of one upload before it fails (default {@link DEFAULT_UPLOAD_ATTEMPTS}). */
  readonly attempts?: number;
}

/** Tries of one upload, by default: the first, then retries after 2, 4 and 8 s. */
export const DEFAULT_UPLOAD_ATTEMPTS = 4;

/** The delay before the first retry; each next one doubles. */
export const FIRST_RETRY_DELAY_MS = 2000;

/** The phases of an upload, in order (the library's own). */
export type HubUploadPhase = "preuploading" | "uploadingLargeFiles" | "committing";

/** Options of {@link uploadCheckpoint}. */
export interface UploadCheckpointOptions {
  /** The commit's title (default: the folder's name). */
  readonly title?: string;
  /** The commit's description. */
  readonly description?: string;
  /** Called once the files are listed, before anything is sent. */
  readonly onStart?: (files: readonly { path: string; bytes: number }[]) => void;
  /** Called as each phase begins. */
  readonly onPhase?: (phase: HubUploadPhase) => void;
  /** Called when the repo did not exist and was created (private). */
  readonly onRepoCreated?: () => void;
  /** Called before each retry, with the failure and the wait before it. */
  readonly onRetry?: (retry: { attempt: number; delayMs: number; error: HubUploadError }) => void;
  /** The delay before the first retry (default {@link FIRST_RETRY_DELAY_MS}). */
  readonly firstRetryDelayMs?: number;
  readonly signal?: AbortSignal;
}

/** A finished upload. */
export interface HubUpload {
  /** The commit's oid: the revision to report. */
  readonly revision: string;
  /** The files committed, in name order, with their sizes. */
  readonly files: readonly { readonly path: string; readonly bytes: number }[];
  /** Bytes committed in all. */
  readonly bytes: number;
}

/** An upload the Hub (or the way to it) refused; the message says what and why. */
export class HubUploadError extends Error {
  /** The repo. */
  readonly repoId: string;
  /** The HTTP status, when the Hub answered with one. */
  readonly status: number | null;
  /** Builds the error. */
  constructor(repoId: string, status: number | null, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HubUploadError";
    this.repoId = repoId;
    this.status = status;
  }
}

const REPO_ID = /^[\w][\w.-]*\/[\w][\w.-]*$/;

/** The regular files of `dir`, in name order, with their sizes. */
export async function checkpointFiles(dir: string): Promise<{ path: string; bytes: number }[]> {
  const files: { path: string; bytes: number }[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile) continue;
    files.push({ path: entry.name, bytes: (await Deno.stat(join(dir, entry.name))).size });
  }
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * Commits every file of the checkpoint folder `dir` to `target.repoId` (branch `main`), creating
 * the repo (private) when it does not exist and retrying transient failures, and returns the
 * commit's oid. Throws {@link HubUploadError} naming the repo and the Hub's last answer when the
 * upload fails, RangeError on a repo id that is not `owner/name`, TypeError on a token the
 * library refuses, and the signal's reason when aborted.
 *
 * @example
 * ```ts ignore
 * const { revision } = await uploadCheckpoint("ckpt/run-step12", {
 *   repoId: "me/tiny", token: Deno.env.get("HF_TOKEN")!,
 * });
 * await backend.sendCheckpoint({ kind: "Hub", repo: { repoId: "me/tiny", revision } });
 * ```
 */
export async function uploadCheckpoint(
  dir: string,
  target: HubTarget,
  options: UploadCheckpointOptions = {},
): Promise<HubUpload> {
  if (!REPO_ID.test(target.repoId)) {
    throw new RangeError(`Hub repo "${target.repoId}" is not of the form owner/name`);
  }
  const files = await checkpointFiles(dir);
  if (files.length === 0) throw new RangeError(`Cannot upload "${dir}": it holds no files`);
  options.onStart?.(files);
  const absolute = isAbsolute(dir) ? dir : join(Deno.cwd(), dir);
  const hubUrl = (target.hubUrl ?? HUB_URL).replace(/\/+$/, "");
  const attempts = target.attempts ?? DEFAULT_UPLOAD_ATTEMPTS;
  if (!Number.isInteger(attempts) || attempts < 1) {
    throw new RangeError(`Hub upload attempts must be a positive integer, found ${attempts}`);
  }
  const attempt = async (): Promise<string> => {
    await ensureRepo(target, hubUrl, dir, options);
    return await commitOnce(absolute, files, target, hubUrl, dir, options);
  };
  let delayMs = options.firstRetryDelayMs ?? FIRST_RETRY_DELAY_MS;
  for (let n = 1;; n++) {
    try {
      const revision = await attempt();
      return { revision, files, bytes: files.reduce((total, f) => total + f.bytes, 0) };
    } catch (error) {
      if (!(error instanceof HubUploadError) || !isTransient(error) || n >= attempts) throw error;
      options.onRetry?.({ attempt: n, delayMs, error });
      await abortableSleep(delayMs, options.signal);
      delayMs *= 2;
    }
  }
}

/** Whether the Hub may answer differently later: no answer at all, a 5xx, or 429. */
export function isTransient(error: HubUploadError): boolean {
  return error.status === null || error.status >= 500 || error.status === 429;
}

/** The HTTP status a library error carries, if any. */
function statusOf(cause: unknown): number | null {
  const status = (cause as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === "number" ? status : null;
}

/** The library's failure as a {@link HubUploadError}; an abort or a refused token as is. */
function uploadError(
  cause: unknown,
  what: string,
  target: HubTarget,
  options: UploadCheckpointOptions,
): never {
  if (cause instanceof TypeError && /access token/i.test(cause.message)) throw cause;
  options.signal?.throwIfAborted();
  if (cause instanceof HubUploadError) throw cause;
  const status = statusOf(cause);
  throw new HubUploadError(
    target.repoId,
    status,
    `${what}: ${status === null ? "" : `HTTP ${status}: `}${(cause as Error).message}`,
    { cause },
  );
}

/** Creates the repo, private, when the Hub says it does not exist. */
async function ensureRepo(
  target: HubTarget,
  hubUrl: string,
  dir: string,
  options: UploadCheckpointOptions,
): Promise<void> {
  const what = `Cannot upload "${dir}" to ${hubUrl}/${target.repoId}`;
  let exists: boolean;
  try {
    exists = await repoExists({
      repo: { type: "model", name: target.repoId },
      hubUrl,
      accessToken: target.token,
      fetch: abortableFetch(options.signal),
    });
  } catch (cause) {
    return uploadError(cause, what, target, options);
  }
  if (exists) return;
  try {
    await createRepo({
      repo: { type: "model", name: target.repoId },
      visibility: "private",
      hubUrl,
      accessToken: target.token,
      fetch: abortableFetch(options.signal),
    });
  } catch (cause) {
    return uploadError(
      cause,
      `${what}: the Hub does not show it to this token, and creating it failed`,
      target,
      options,
    );
  }
  options.onRepoCreated?.();
}

/**
 * `fetch` bound to the upload's abort signal (the library's repo calls take no signal), with
 * bodies whose reads obey it too (net/fetch_body.ts: Deno's fetch may leave one pending).
 */
function abortableFetch(signal: AbortSignal | undefined): typeof fetch {
  if (signal === undefined) return fetch;
  return async (input, init) => obeyingSignal(await fetch(input, { ...init, signal }), signal);
}

/** One commit of every file; returns its oid. */
async function commitOnce(
  absolute: string,
  files: readonly { path: string; bytes: number }[],
  target: HubTarget,
  hubUrl: string,
  dir: string,
  options: UploadCheckpointOptions,
): Promise<string> {
  const generator = commitIter({
    repo: { type: "model", name: target.repoId },
    operations: files.map((f) => ({
      operation: "addOrUpdate" as const,
      path: f.path,
      content: pathToFileURL(join(absolute, f.path)),
    })),
    title: options.title ?? absolute.split("/").at(-1) ?? "checkpoint",
    description: options.description,
    hubUrl,
    accessToken: target.token,
    abortSignal: options.signal,
  });
  let output;
  try {
    while (true) {
      const next = await generator.next();
      if (next.done) {
        output = next.value;
        break;
      }
      if (next.value.event === "phase") options.onPhase?.(next.value.phase);
    }
  } catch (cause) {
    uploadError(cause, `Cannot upload "${dir}" to ${hubUrl}/${target.repoId}`, target, options);
  }
  const revision = output?.commit?.oid;
  if (typeof revision !== "string" || revision === "") {
    throw new HubUploadError(
      target.repoId,
      null,
      `The Hub at ${hubUrl} accepted the commit to ${target.repoId} but named no commit oid`,
    );
  }
  return revision;
}
