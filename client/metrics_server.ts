/**
 * The HTTP edge of the client's metrics (`train --metrics-port P`): `GET /metrics` answers the
 * Prometheus text of the view that client/metrics.ts folds from every event the client logs.
 * It is a {@linkcode ClientLogger}, so main.ts feeds it beside the chosen display.
 *
 * @module
 */
import { PROMETHEUS_CONTENT_TYPE } from "../common/mod.ts";
import type { ClientLogger } from "./log.ts";
import {
  clientMetricsText,
  type ClientMetricsView,
  initialClientMetrics,
  reduceClientMetrics,
} from "./metrics.ts";
import type { LoggedEvent } from "./tui/view.ts";

/** Options of {@linkcode startClientMetrics}. */
export interface ClientMetricsOptions {
  /** The run, for the info metric. */
  runId: string;
  /** Address to listen on (default 127.0.0.1). */
  hostname?: string;
  /** 0: any free port. */
  port: number;
  /** Milliseconds since the epoch (default Date.now). */
  clock?: () => number;
}

/** A running metrics endpoint. */
export interface ClientMetricsServer extends ClientLogger {
  /** `http://host:port/metrics`. */
  readonly url: string;
  /** The view now. */
  view(): ClientMetricsView;
  /** Stops listening. */
  close(): Promise<void>;
}

/** Starts serving `/metrics` on `hostname:port`. Throws Deno's listen errors (address in use). */
export function startClientMetrics(options: ClientMetricsOptions): ClientMetricsServer {
  const clock = options.clock ?? Date.now;
  let view = initialClientMetrics(options.runId);
  const server = Deno.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port,
    onListen: () => {},
  }, (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("only GET\n", { status: 405, headers: { allow: "GET, HEAD" } });
    }
    if (new URL(request.url).pathname !== "/metrics") {
      return new Response("not found: the metrics are at /metrics\n", { status: 404 });
    }
    return new Response(clientMetricsText(view), {
      headers: { "content-type": PROMETHEUS_CONTENT_TYPE },
    });
  });
  const addr = server.addr as Deno.NetAddr;
  const shown = addr.hostname === "0.0.0.0" ? "127.0.0.1" : addr.hostname;
  const url = `http://${shown.includes(":") ? `[${shown}]` : shown}:${addr.port}/metrics`;
  let closed: Promise<void> | null = null;
  return {
    url,
    log(event, fields) {
      view = reduceClientMetrics(view, { event, fields } as LoggedEvent, clock());
    },
    view: () => view,
    close() {
      closed ??= server.shutdown();
      return closed;
    },
  };
}
