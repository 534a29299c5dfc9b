/**
 * The localnet's network face: Solana JSON-RPC over HTTP (POST, single or batch requests)
 * and the subscription methods over WebSocket, on two ports as a validator has them
 * (8899 and 8900 by default). The WebSocket endpoint also answers on the HTTP port.
 *
 * A test harness around the real SVM (see ledger.ts), not a validator.
 *
 * @module
 */

import { Ledger, type LedgerOptions } from "./ledger.ts";
import { RPC_ERRORS, RpcError, rpcJson, RpcMethods } from "./rpc.ts";
import { Subscriptions } from "./subscriptions.ts";

/** Options of {@linkcode startLocalnet}. */
export interface LocalnetServerOptions extends LedgerOptions {
  /** Listen address (default 127.0.0.1). */
  hostname?: string;
  /** HTTP JSON-RPC port (default 8899; 0 picks a free one). */
  port?: number;
  /** WebSocket port (default 8900; 0 picks a free one). */
  wsPort?: number;
  /** An existing ledger to serve (default: a fresh one). */
  ledger?: Ledger;
  /** Called with each request's method (for the log). */
  onRequest?: (method: string) => void;
}

/** A running localnet. */
export interface LocalnetServer extends AsyncDisposable {
  /** `http://host:port` */
  readonly url: string;
  /** `ws://host:wsPort` */
  readonly wsUrl: string;
  readonly ledger: Ledger;
  /** Stops both listeners and closes every socket. */
  close(): Promise<void>;
}

interface RpcRequest {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

function errorResponse(id: unknown, e: unknown): Record<string, unknown> {
  if (e instanceof RpcError) {
    const error: Record<string, unknown> = { code: e.code, message: e.message };
    if (e.data !== undefined) error.data = e.data;
    return { jsonrpc: "2.0", id, error };
  }
  return {
    jsonrpc: "2.0",
    id,
    error: { code: -32603, message: `Internal error: ${(e as Error).message}` },
  };
}

function answer(req: RpcRequest, run: (method: string, params: unknown[]) => unknown) {
  const id = req.id ?? null;
  try {
    if (typeof req !== "object" || req === null || typeof req.method !== "string") {
      throw new RpcError(RPC_ERRORS.InvalidRequest, "Invalid request: no method");
    }
    const params = req.params === undefined ? [] : req.params;
    if (!Array.isArray(params)) {
      throw new RpcError(RPC_ERRORS.InvalidParams, "Invalid params: params must be an array");
    }
    return { jsonrpc: "2.0", id, result: run(req.method, params) };
  } catch (e) {
    return errorResponse(id, e);
  }
}

/** Starts the HTTP and WebSocket listeners around a ledger. */
export async function startLocalnet(opts: LocalnetServerOptions = {}): Promise<LocalnetServer> {
  const ledger = opts.ledger ?? await Ledger.create(opts);
  const methods = new RpcMethods(ledger);
  const subscriptions = new Subscriptions(ledger);
  const sockets = new Set<WebSocket>();
  const hostname = opts.hostname ?? "127.0.0.1";

  const websocket = (req: Request): Response => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    const send = (text: string) => socket.send(text);
    sockets.add(socket);
    socket.onmessage = (event) => {
      let reply: unknown;
      try {
        const parsed = JSON.parse(String(event.data)) as RpcRequest | RpcRequest[];
        const one = (r: RpcRequest) =>
          answer(r, (m, p) => {
            opts.onRequest?.(m);
            return subscriptions.call(m, p, send);
          });
        reply = Array.isArray(parsed) ? parsed.map(one) : one(parsed);
      } catch {
        reply = errorResponse(null, new RpcError(-32700, "Parse error"));
      }
      if (socket.readyState === WebSocket.OPEN) socket.send(rpcJson(reply));
    };
    socket.onclose = () => {
      sockets.delete(socket);
      subscriptions.dropSocket(send);
    };
    return response;
  };

  const http = async (req: Request): Promise<Response> => {
    if (req.headers.get("upgrade")?.toLowerCase() === "websocket") return websocket(req);
    if (req.method !== "POST") {
      return new Response("Solana JSON-RPC (localnet): POST a request\n", { status: 405 });
    }
    let parsed: RpcRequest | RpcRequest[];
    try {
      parsed = JSON.parse(await req.text());
    } catch {
      return json(errorResponse(null, new RpcError(-32700, "Parse error")));
    }
    const one = (r: RpcRequest) =>
      answer(r, (m, p) => {
        opts.onRequest?.(m);
        return methods.call(m, p);
      });
    return json(Array.isArray(parsed) ? parsed.map(one) : one(parsed));
  };

  const httpServer = Deno.serve({
    hostname,
    port: opts.port ?? 8899,
    onListen: () => {},
  }, http);
  let wsServer: Deno.HttpServer<Deno.NetAddr>;
  try {
    wsServer = Deno.serve({ hostname, port: opts.wsPort ?? 8900, onListen: () => {} }, websocket);
  } catch (e) {
    await httpServer.shutdown();
    throw e;
  }
  const close = async () => {
    for (const s of sockets) s.close();
    subscriptions.close();
    await Promise.all([httpServer.shutdown(), wsServer.shutdown()]);
  };
  return {
    url: `http://${hostname}:${httpServer.addr.port}`,
    wsUrl: `ws://${hostname}:${wsServer.addr.port}`,
    ledger,
    close,
    [Symbol.asyncDispose]: close,
  };
}

function json(body: unknown): Response {
  return new Response(rpcJson(body), { headers: { "content-type": "application/json" } });
}
