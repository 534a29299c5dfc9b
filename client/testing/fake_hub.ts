/**
 * A stand-in for the Hugging Face Hub, for tests: huggingface.co is unreachable from the
 * machines these tests run on, so a local HTTP server (Deno.serve) answers just the endpoints
 * `@huggingface/hub` calls to commit files and to download them, and the real library and the
 * client's real code path run against it (`hubUrl` points the library here):
 *
 * - `POST /api/models/{owner}/{name}/preupload/{rev}`: which files go through LFS (`.safetensors`
 *   and anything over 10 MB, as the Hub's default `.gitattributes`) and which are sent inline;
 * - `POST /{owner}/{name}.git/info/lfs/objects/batch`: the LFS "basic" transfer, one upload URL per
 *   object not stored yet (so the library falls back from Xet to a plain PUT);
 * - `PUT /lfs-upload/{oid}`: the object's bytes, checked against its sha256 oid;
 * - `POST /api/models/{owner}/{name}/commit/{rev}`: the NDJSON commit (a header, inline base64
 *   files, LFS pointers), answered with a new 40-hex commit oid;
 * - `GET /{owner}/{name}/resolve/{rev}/{path}`: a file at a commit (or a branch), with `Range`
 *   requests, `ETag` and `X-Repo-Commit`; a missing file is `404` with `X-Error-Code:
 *   EntryNotFound`, as the library expects;
 * - `GET /api/models/{owner}/{name}/revision/{rev}`: the model's info, whose `sha` is the commit a
 *   branch points to (the library's `modelInfo`);
 * - `GET /api/models/{owner}/{name}`: whether the repo exists (`repoExists`);
 * - `POST /api/repos/create`: a new model repo (`createRepo`), recorded with its visibility.
 *
 * Reads are public; writes need the token. Every request is recorded; `failing` makes every
 * endpoint answer 500 (an outage), `failNext` only the next so many requests (a blip), and
 * `stallDownloads` makes whole-file downloads (no `Range`) send their headers and first byte, then
 * nothing.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** One commit the fake Hub accepted. */
export interface FakeHubCommit {
  readonly repoId: string;
  readonly oid: string;
  readonly branch: string;
  readonly title: string;
  readonly description: string | null;
  /** The files this commit added or replaced, by path. */
  readonly files: ReadonlyMap<string, Uint8Array>;
  /** The paths that went through LFS rather than inline. */
  readonly lfs: readonly string[];
}

/** Options of {@link FakeHub.start}. */
export interface FakeHubOptions {
  /** Every write must carry `Authorization: Bearer {token}` (default: any `hf_` token). */
  readonly token?: string;
  /** Repos that exist (default: any `owner/name`). */
  readonly repos?: readonly string[];
}

const LFS_ABOVE_BYTES = 10 * 1024 * 1024;

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function notFound(code: string, message: string): Response {
  return json({ error: message }, 404, { "x-error-code": code });
}

/** A running fake Hub; `await using` shuts it down. */
export class FakeHub implements AsyncDisposable {
  /** Base URL to pass as `hubUrl` / `--hub-url`. */
  readonly url: string;
  /** Every request, in order: method and path. */
  readonly requests: { method: string; path: string }[] = [];
  /** Every accepted commit, in order. */
  readonly commits: FakeHubCommit[] = [];
  /** When true, every endpoint answers 500. */
  failing = false;
  /** The next this many requests answer 500, then the Hub works again. */
  failNext = 0;
  /** When true, a file download sends its headers and first byte, then stalls. */
  stallDownloads = false;
  /** Every repo created through the API, in order, with the visibility asked for. */
  readonly created: { repoId: string; visibility: string | null }[] = [];
  readonly #repos: Set<string> | null;
  readonly #stalled = new Set<ReadableStreamDefaultController<Uint8Array>>();
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #options: FakeHubOptions;
  readonly #lfs = new Map<string, Uint8Array>();
  /** Files by repo, branch head and commit oid: `repo@oid` → (path → bytes). */
  readonly #trees = new Map<string, Map<string, Uint8Array>>();
  readonly #heads = new Map<string, string>();

  private constructor(options: FakeHubOptions) {
    this.#options = options;
    this.#repos = options.repos === undefined ? null : new Set(options.repos);
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (req) => this.#handle(req),
    );
    this.url = `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** Starts a fake Hub on a free local port. */
  static start(options: FakeHubOptions = {}): FakeHub {
    return new FakeHub(options);
  }

  /** The files of `repoId` at `revision` (a commit oid, or a branch: default `main`). */
  files(repoId: string, revision = "main"): Map<string, Uint8Array> | null {
    const oid = this.#heads.get(`${repoId}@${revision}`) ?? revision;
    return this.#trees.get(`${repoId}@${oid}`) ?? null;
  }

  /** Stops the server. */
  async [Symbol.asyncDispose](): Promise<void> {
    for (const stalled of this.#stalled) stalled.error(new Error("fake hub: shutting down"));
    await this.#server.shutdown();
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const path = decodeURIComponent(url.pathname);
    this.requests.push({ method: req.method, path });
    if (this.failing || this.failNext > 0) {
      this.failNext = Math.max(0, this.failNext - 1);
      await req.body?.cancel();
      return json({ error: "fake hub: internal server error" }, 500);
    }
    const auth = req.headers.get("authorization");
    const token = auth?.startsWith("Bearer ") ? auth.slice(7) : null;
    const authorized = this.#options.token === undefined
      ? token?.startsWith("hf_") === true
      : token === this.#options.token;
    let m: RegExpExecArray | null;
    if ((m = /^\/lfs-upload\/([0-9a-f]{64})$/.exec(path)) && req.method === "PUT") {
      return this.#lfsUpload(m[1], new Uint8Array(await req.arrayBuffer()));
    }
    // Reads are public (as for a public repo); writes need the token.
    if (!authorized && req.method !== "GET" && req.method !== "HEAD") {
      await req.body?.cancel();
      return json({ error: "Invalid credentials in Authorization header" }, 401);
    }
    if ((m = /^\/api\/models\/([^/]+\/[^/]+)\/preupload\/(.+)$/.exec(path))) {
      if (!this.#exists(m[1])) return notFound("RepoNotFound", `Repository ${m[1]} not found`);
      const body = await req.json() as { files: { path: string; size: number }[] };
      return json({
        files: body.files.map((f) => ({
          path: f.path,
          uploadMode: f.path.endsWith(".safetensors") || f.size > LFS_ABOVE_BYTES
            ? "lfs"
            : "regular",
        })),
      });
    }
    if ((m = /^\/([^/]+\/[^/]+)\.git\/info\/lfs\/objects\/batch$/.exec(path))) {
      if (!this.#exists(m[1])) return notFound("RepoNotFound", `Repository ${m[1]} not found`);
      const body = await req.json() as { objects: { oid: string; size: number }[] };
      return json({
        transfer: "basic",
        objects: body.objects.map((o) =>
          this.#lfs.has(o.oid) ? { oid: o.oid, size: o.size } : {
            oid: o.oid,
            size: o.size,
            actions: { upload: { href: `${this.url}/lfs-upload/${o.oid}` } },
          }
        ),
      });
    }
    if ((m = /^\/api\/models\/([^/]+\/[^/]+)\/commit\/(.+)$/.exec(path))) {
      return this.#commit(m[1], m[2], await req.text());
    }
    if ((m = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/(.+)$/.exec(path))) {
      return this.#info(m[1], m[2]);
    }
    if ((m = /^\/api\/models\/([^/]+\/[^/]+)$/.exec(path)) && req.method === "GET") {
      return this.#exists(m[1])
        ? json({ _id: m[1], id: m[1], likes: 0 })
        : notFound("RepoNotFound", `Repository ${m[1]} not found`);
    }
    if (path === "/api/repos/create" && req.method === "POST") {
      return this.#create(await req.json());
    }
    if ((m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path))) {
      return this.#resolve(m[1], m[2], m[3], req);
    }
    await req.body?.cancel();
    return json({ error: `fake hub: no route ${req.method} ${path}` }, 404);
  }

  #exists(repoId: string): boolean {
    return this.#repos === null || this.#repos.has(repoId);
  }

  #create(body: { name?: string; organization?: string; type?: string; visibility?: string }) {
    const repoId = `${body.organization}/${body.name}`;
    if (body.type !== "model" || !/^[\w.-]+\/[\w.-]+$/.test(repoId)) {
      return json({ error: `fake hub: cannot create ${body.type} repo ${repoId}` }, 400);
    }
    if (this.#exists(repoId)) return json({ error: "You already created this model repo" }, 409);
    this.#repos?.add(repoId);
    this.created.push({ repoId, visibility: body.visibility ?? null });
    return json({ url: `${this.url}/${repoId}`, name: repoId, id: repoId });
  }

  #lfsUpload(oid: string, bytes: Uint8Array): Response {
    if (sha256Hex(bytes) !== oid) {
      return json({ error: `the body's sha256 is not ${oid}` }, 400);
    }
    this.#lfs.set(oid, bytes);
    return new Response(null, { status: 200, headers: { etag: `"${oid}"` } });
  }

  #commit(repoId: string, branch: string, ndjson: string): Response {
    if (!this.#exists(repoId)) return notFound("RepoNotFound", `Repository ${repoId} not found`);
    let title = "";
    let description: string | null = null;
    const files = new Map<string, Uint8Array>();
    const lfs: string[] = [];
    for (const line of ndjson.split("\n").filter((l) => l.trim() !== "")) {
      const { key, value } = JSON.parse(line);
      if (key === "header") {
        title = value.summary;
        description = value.description ?? null;
      } else if (key === "file") {
        if (value.encoding !== "base64") return json({ error: "expected base64" }, 400);
        files.set(value.path, Uint8Array.from(atob(value.content), (c) => c.charCodeAt(0)));
      } else if (key === "lfsFile") {
        const bytes = this.#lfs.get(value.oid);
        if (bytes === undefined || bytes.length !== value.size) {
          return json({ error: `LFS object ${value.oid} of ${value.path} was not uploaded` }, 422);
        }
        files.set(value.path, bytes);
        lfs.push(value.path);
      } else {
        return json({ error: `fake hub: unsupported commit entry ${key}` }, 400);
      }
    }
    const parent = this.#heads.get(`${repoId}@${branch}`) ?? null;
    const hash = createHash("sha256").update(`${repoId}\0${parent}\0${this.commits.length}`);
    for (const [p, bytes] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
      hash.update(`${p}\0`).update(bytes);
    }
    const oid = hash.digest("hex").slice(0, 40);
    const tree = new Map(parent === null ? [] : this.#trees.get(`${repoId}@${parent}`));
    for (const [p, bytes] of files) tree.set(p, bytes);
    this.#trees.set(`${repoId}@${oid}`, tree);
    this.#heads.set(`${repoId}@${branch}`, oid);
    this.commits.push({ repoId, oid, branch, title, description, files, lfs });
    return json({ commitOid: oid, commitUrl: `${this.url}/${repoId}/commit/${oid}` });
  }

  #info(repoId: string, revision: string): Response {
    if (!this.#exists(repoId)) return notFound("RepoNotFound", `Repository ${repoId} not found`);
    const oid = this.#heads.get(`${repoId}@${revision === "HEAD" ? "main" : revision}`) ??
      revision;
    const tree = this.#trees.get(`${repoId}@${oid}`);
    if (tree === undefined) return notFound("RevisionNotFound", `Invalid rev id: ${revision}`);
    return json({
      _id: repoId,
      id: repoId,
      sha: oid,
      private: false,
      gated: false,
      downloads: 0,
      likes: 0,
      lastModified: new Date(0).toISOString(),
      siblings: [...tree.keys()].map((rfilename) => ({ rfilename })),
    });
  }

  #resolve(repoId: string, revision: string, file: string, req: Request): Response {
    if (!this.#exists(repoId)) return notFound("RepoNotFound", `Repository ${repoId} not found`);
    const oid = this.#heads.get(`${repoId}@${revision}`) ?? revision;
    const tree = this.#trees.get(`${repoId}@${oid}`);
    if (tree === undefined) return notFound("RevisionNotFound", `Invalid rev id: ${revision}`);
    const bytes = tree.get(file);
    if (bytes === undefined) return notFound("EntryNotFound", `${file} does not exist`);
    const headers: Record<string, string> = {
      etag: `"${sha256Hex(bytes)}"`,
      "x-repo-commit": oid,
      "accept-ranges": "bytes",
      "content-type": "application/octet-stream",
    };
    if (this.stallDownloads && req.method === "GET" && !req.headers.has("range")) {
      const stalled = this.#stalled;
      let held: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          held = controller;
          stalled.add(controller);
          controller.enqueue(bytes.slice(0, 1));
        },
        cancel() {
          stalled.delete(held);
        },
      });
      return new Response(body, { headers });
    }
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.get("range") ?? "");
    if (range !== null && bytes.length > 0) {
      const start = Number(range[1]);
      const end = Math.min(range[2] === "" ? bytes.length - 1 : Number(range[2]), bytes.length - 1);
      const body = bytes.slice(start, end + 1);
      return new Response(body, {
        status: 206,
        headers: { ...headers, "content-range": `bytes ${start}-${end}/${bytes.length}` },
      });
    }
    return new Response(req.method === "HEAD" ? null : bytes.slice(), { headers });
  }
}
