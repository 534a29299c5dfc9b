/**
 * The dashboard's HTTP edge: one page (`/`), its script and uPlot (`/app.js`, `/uplot.js`,
 * `/uplot.css`), the view as JSON (`/view.json`), a Server-Sent Events stream of the view
 * (`/events`, one `view` event at connect and after every change, at most one per
 * {@linkcode PUSH_INTERVAL_MS}) and Prometheus metrics (`/metrics`). The coordinator feeds it
 * its events with {@linkcode DashboardServer.publish}; the view is built by the pure reducer.
 *
 * @module
 */
import type { ServerEvent } from "../server/mod.ts";
import { METRICS_CONTENT_TYPE, metricsText } from "./metrics.ts";
import { ASSETS, dashboardPage } from "./page.ts";
import type { RunSnapshot } from "./snapshot.ts";
import { type DashboardView, emptyView, reduceEvent, reduceSnapshot } from "./view.ts";

/** The most often the live stream sends the view (ms): a burst of events sends one. */
export const PUSH_INTERVAL_MS = 250;

/** Options of {@linkcode startDashboard}. */
export interface DashboardOptions {
  /** Address to listen on (default 127.0.0.1: the dashboard is for the operator). */
  hostname?: string;
  /** 0: any free port. */
  port: number;
  /** The coordinator's state now (read after every published event). */
  snapshot: () => RunSnapshot;
  /** Milliseconds since the epoch (default Date.now). */
  clock?: () => number;
}

/** A running dashboard. */
export interface DashboardServer {
  /** `http://host:port`. */
  readonly url: string;
  readonly port: number;
  /** Feeds one coordinator event (then the state snapshot) into the view. */
  publish(event: ServerEvent): void;
  /** Re-reads the snapshot with no event: a poller's new state (the Solana dashboard). */
  refresh(): void;
  /** The view now. */
  view(): DashboardView;
  /** Ends the live streams and stops listening. */
  close(): Promise<void>;
}

const encoder = new TextEncoder();

/** Starts the dashboard on `hostname:port`. Throws Deno's listen errors (address in use). */
export function startDashboard(options: DashboardOptions): DashboardServer {
  const clock = options.clock ?? Date.now;
  let view = reduceSnapshot(emptyView(), options.snapshot(), clock());
  const streams = new Set<ReadableStreamDefaultController<Uint8Array>>();
  let pushTimer: ReturnType<typeof setTimeout> | null = null;
  const frame = () => encoder.encode(`event: view\ndata: ${JSON.stringify(view)}\n\n`);

  const push = () => {
    pushTimer = null;
    const bytes = frame();
    for (const c of streams) {
      try {
        c.enqueue(bytes);
      } catch {
        streams.delete(c); // the browser went away
      }
    }
  };

  const handler = (request: Request): Response => {
    const path = new URL(request.url).pathname;
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("only GET\n", { status: 405, headers: { allow: "GET, HEAD" } });
    }
    if (path === "/") {
      return new Response(dashboardPage(view), {
        headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
      });
    }
    if (path === "/metrics") {
      return new Response(metricsText(view), { headers: { "content-type": METRICS_CONTENT_TYPE } });
    }
    if (path === "/view.json") return Response.json(view);
    if (path === "/events") {
      let self: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          self = controller;
          streams.add(controller);
          controller.enqueue(frame());
        },
        cancel() {
          streams.delete(self);
        },
      });
      return new Response(body, {
        headers: {
          "content-type": "text/event-stream",
          "cache-control": "no-store",
          connection: "keep-alive",
        },
      });
    }
    const asset = Object.hasOwn(ASSETS, path) ? ASSETS[path] : undefined;
    if (asset !== undefined) {
      return new Response(asset.body, {
        headers: { "content-type": asset.contentType, "cache-control": "max-age=3600" },
      });
    }
    return new Response("not found\n", { status: 404 });
  };

  const server = Deno.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port,
    onListen: () => {},
  }, handler);
  const addr = server.addr as Deno.NetAddr;
  const shown = addr.hostname === "0.0.0.0" ? "127.0.0.1" : addr.hostname;
  const url = `http://${shown.includes(":") ? `[${shown}]` : shown}:${addr.port}`;

  let closed: Promise<void> | null = null;
  return {
    url,
    port: addr.port,
    publish(event) {
      const now = clock();
      view = reduceSnapshot(reduceEvent(view, event, now), options.snapshot(), now);
      pushTimer ??= setTimeout(push, PUSH_INTERVAL_MS);
    },
    refresh() {
      view = reduceSnapshot(view, options.snapshot(), clock());
      pushTimer ??= setTimeout(push, PUSH_INTERVAL_MS);
    },
    view: () => view,
    close() {
      closed ??= (async () => {
        if (pushTimer !== null) clearTimeout(pushTimer);
        for (const c of streams) {
          try {
            c.close();
          } catch { /* already closed */ }
        }
        streams.clear();
        await server.shutdown();
      })();
      return closed;
    },
  };
}
