/**
 * Uploading a checkpoint folder to a Hugging Face Hub model repo, in one commit, with the
 * maintained `@huggingface/hub` library (its `commitIter`, the generator form of `commit`):
 * every regular file of the folder (`config.json`, `model.safetensors` or the shards and their
 * index) under its own name at the repo's root. The library asks the Hub which files go through
 * LFS (safetensors do), uploads those first, then commits; the commit's oid is the revision the
 * client reports to the coordinator as `Checkpoint::Hub { repo, revision }` (Psyche's rule).
 *
 * The repo must exist and the token must be allowed to write to it (`HF_TOKEN`, as Psyche); the
 * library refuses tokens that do not start with `hf_`. `hubUrl` points the library at another
 * endpoint (a mirror, or the local fake Hub tests use: client/testing/fake_hub.ts).
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import { pathToFileURL } from "node:url";
import { commitIter } from "@huggingface/hub";

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
}

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
 * Commits every file of the checkpoint folder `dir` to `target.repoId` (branch `main`) and
 * returns the commit's oid. Throws {@link HubUploadError} naming the repo and the Hub's answer
 * when the upload fails, RangeError on a repo id that is not `owner/name`, TypeError on a token
 * the library refuses.
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
    if (cause instanceof TypeError && /access token/i.test(cause.message)) throw cause;
    options.signal?.throwIfAborted();
    const status = typeof (cause as { statusCode?: unknown }).statusCode === "number"
      ? (cause as { statusCode: number }).statusCode
      : null;
    throw new HubUploadError(
      target.repoId,
      status,
      `Cannot upload "${dir}" to ${hubUrl}/${target.repoId}: ` +
        `${status === null ? "" : `HTTP ${status}: `}${(cause as Error).message}`,
      { cause },
    );
  }
  const revision = output?.commit?.oid;
  if (typeof revision !== "string" || revision === "") {
    throw new HubUploadError(
      target.repoId,
      null,
      `The Hub at ${hubUrl} accepted the commit to ${target.repoId} but named no commit oid`,
    );
  }
  return { revision, files, bytes: files.reduce((n, f) => n + f.bytes, 0) };
}
