/**
 * A small HTTP/1.1 file server on 127.0.0.1 for tests and benchmarks, written on raw
 * TCP so it can misbehave on purpose: drop the connection mid-body, send a short or
 * mislabelled range, stall, answer 500, or ignore `Range`. Serves `HEAD` and `GET`
 * (with a single `bytes=a-b` range) of files in one folder; every response closes the
 * connection. Test-only; not exported from data/mod.ts.
 *
 * @module
 */
import { writeAll } from "../../net/mod.ts";

/** How to answer one request. */
export type Fault =
  | "none"
  | "drop-mid-body"
  | "short-range"
  | "wrong-content-range"
  | "stall"
  | "status-500"
  | "ignore-range";

/** What the fault hook sees of a request. */
export interface RequestInfo {
  /** 0-based count of requests received so far. */
  n: number;
  method: string;
  path: string;
  range: [number, number] | null;
}

/** A running test server. */
export interface TestHttpServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** Requests received so far. */
  readonly requests: RequestInfo[];
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts the server over `dir`; `fault` decides how each request is (mis)answered. */
export function startTestHttpServer(
  dir: string,
  fault: (req: RequestInfo) => Fault = () => "none",
): TestHttpServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const handlers = new Set<Promise<void>>();
  const requests: RequestInfo[] = [];
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      const h = handle(conn).catch(() => {}).finally(() => {
        conns.delete(conn);
        handlers.delete(h);
        try {
          conn.close();
        } catch { /* already closed */ }
      });
      handlers.add(h);
    }
  })().catch(() => {});

  async function handle(conn: Deno.Conn): Promise<void> {
    const head = await readHead(conn);
    if (head === null) return;
    const [requestLine, ...headerLines] = head.split("\r\n");
    const [method, path] = requestLine.split(" ");
    const rangeHeader = headerLines.find((l) => l.toLowerCase().startsWith("range:"));
    const m = rangeHeader ? /bytes=(\d+)-(\d+)/.exec(rangeHeader) : null;
    const info: RequestInfo = {
      n: requests.length,
      method,
      path,
      range: m ? [Number(m[1]), Number(m[2])] : null,
    };
    requests.push(info);
    const what = fault(info);
    const send = (status: string, headers: Record<string, string | number>, body?: Uint8Array) =>
      writeAll(
        conn,
        new TextEncoder().encode(
          `HTTP/1.1 ${status}\r\n${
            Object.entries({ ...headers, Connection: "close" }).map(([k, v]) => `${k}: ${v}\r\n`)
              .join("")
          }\r\n`,
        ),
      ).then(() => body && writeAll(conn, body));
    if (what === "stall") {
      await conn.read(new Uint8Array(1));
      return;
    }
    if (what === "status-500") {
      return void await send("500 Internal Server Error", { "Content-Length": 0 });
    }
    let file: Uint8Array;
    try {
      file = await Deno.readFile(`${dir}/${decodeURIComponent(path.slice(1))}`);
    } catch {
      return void await send("404 Not Found", { "Content-Length": 0 });
    }
    if (method === "HEAD") return void await send("200 OK", { "Content-Length": file.length });
    if (info.range === null || what === "ignore-range") {
      return void await send("200 OK", { "Content-Length": file.length }, file);
    }
    const [a, b] = info.range;
    const body = file.subarray(a, Math.min(b + 1, file.length));
    const label = what === "wrong-content-range"
      ? `bytes ${a + 2}-${b + 2}/${file.length}`
      : `bytes ${a}-${a + body.length - 1}/${file.length}`;
    if (what === "short-range") {
      const short = body.subarray(0, Math.floor(body.length / 2));
      return void await send("206 Partial Content", {
        "Content-Range": `bytes ${a}-${a + short.length - 1}/${file.length}`,
        "Content-Length": short.length,
      }, short);
    }
    if (what === "drop-mid-body") {
      // Promise the whole range, send half, then close: the client sees a dropped connection.
      await send("206 Partial Content", { "Content-Range": label, "Content-Length": body.length });
      await writeAll(conn, body.subarray(0, Math.floor(body.length / 2)));
      return;
    }
    await send(
      "206 Partial Content",
      { "Content-Range": label, "Content-Length": body.length },
      body,
    );
  }

  const close = async () => {
    listener.close();
    for (const c of conns) {
      try {
        c.close();
      } catch { /* already closed */ }
    }
    await Promise.all([accepting, ...handlers]);
  };
  return {
    url: `http://127.0.0.1:${listener.addr.port}`,
    requests,
    close,
    [Symbol.asyncDispose]: close,
  };
}

async function readHead(conn: Deno.Conn): Promise<string | null> {
  const buf = new Uint8Array(16 * 1024);
  let filled = 0;
  while (filled < buf.length) {
    const n = await conn.read(buf.subarray(filled));
    if (n === null) return null;
    filled += n;
    const text = new TextDecoder().decode(buf.subarray(0, filled));
    const end = text.indexOf("\r\n\r\n");
    if (end >= 0) return text.slice(0, end);
  }
  return null;
}
