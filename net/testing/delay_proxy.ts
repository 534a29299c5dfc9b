/**
 * A TCP proxy that adds latency: every byte is forwarded `delayMs` after it arrived, each way,
 * in order. The network lab puts one in front of the coordinator and its relay (lab topology 2):
 * this kernel has no `netem` (nor `fq`, which a BPF departure time would need), and behind NAT
 * every byte between peers crosses the relay, so delaying the relay's connections delays the
 * clients' links. A client's round trip to the relay grows by `2 x delayMs`, to a peer through
 * the relay by `4 x delayMs`.
 *
 * Bytes wait in memory; a direction holding more than {@link DelayProxyOptions.maxBufferedBytes}
 * stops reading until its writes catch up, so a fast sender meets backpressure as on a real link.
 *
 * @example
 * ```ts ignore
 * import { startDelayProxy } from "./delay_proxy.ts";
 * await using proxy = startDelayProxy({
 *   listen: { hostname: "10.77.20.1", port: 0 },
 *   target: { hostname: "10.77.20.1", port: 9000 },
 *   delayMs: 25,
 * });
 * console.log(`dial ${proxy.hostname}:${proxy.port}`);
 * ```
 *
 * @module
 */

/** Options of {@link startDelayProxy}. */
export interface DelayProxyOptions {
  /** Where the proxy listens (port 0: any free one). */
  readonly listen: { readonly hostname: string; readonly port: number };
  /** Where each accepted connection is forwarded. */
  readonly target: { readonly hostname: string; readonly port: number };
  /** Milliseconds each byte waits, each way. */
  readonly delayMs: number;
  /** Bytes a direction may hold before it stops reading (default 4 MiB). */
  readonly maxBufferedBytes?: number;
}

/** A running proxy. */
export interface DelayProxy extends AsyncDisposable {
  readonly hostname: string;
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /**
   * From now on forwards nothing, either way, and leaves every connection open, as when the
   * target's machine or link dies: no reset, no answer. New connections are accepted and left
   * hanging. Only `close()` ends them.
   */
  freeze(): void;
  /** Stops listening and closes every forwarded connection. */
  close(): Promise<void>;
}

const READ_CHUNK = 64 * 1024;

/** Starts a proxy from `listen` to `target` (throws if it cannot listen). */
export function startDelayProxy(options: DelayProxyOptions): DelayProxy {
  if (!(options.delayMs >= 0) || !Number.isFinite(options.delayMs)) {
    throw new RangeError(`delayMs must be a finite number of at least 0, not ${options.delayMs}`);
  }
  const listener = Deno.listen({ ...options.listen, transport: "tcp" });
  const open = new Set<Deno.Conn>();
  const pairs = new Set<Promise<void>>();
  let accepted = 0;
  const frozen = new Freeze();
  const serve = async (client: Deno.Conn) => {
    open.add(client);
    let upstream: Deno.Conn | undefined;
    try {
      if (frozen.on) return await frozen.closed;
      upstream = await Deno.connect({ ...options.target, transport: "tcp" });
      open.add(upstream);
      await Promise.all([
        delayedPipe(client, upstream, options, frozen),
        delayedPipe(upstream, client, options, frozen),
      ]);
    } catch {
      // A reset or a refused target ends this pair only; the peer sees its connection close.
    } finally {
      for (const conn of [client, upstream]) {
        if (conn === undefined) continue;
        open.delete(conn);
        try {
          conn.close();
        } catch { /* closed already */ }
      }
    }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      accepted++;
      const pair = serve(conn);
      pairs.add(pair);
      void pair.finally(() => pairs.delete(pair));
    }
  })().catch(() => {});
  const address = listener.addr as Deno.NetAddr;
  const close = async () => {
    frozen.close();
    try {
      listener.close();
    } catch { /* closed already */ }
    for (const conn of open) {
      try {
        conn.close();
      } catch { /* closed already */ }
    }
    await accepting;
    await Promise.all([...pairs]);
  };
  return {
    hostname: address.hostname,
    port: address.port,
    get accepted() {
      return accepted;
    },
    freeze: () => frozen.on = true,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * Copies `from` to `to`, each chunk `delayMs` after it was read; at `from`'s end, closes `to`'s
 * writing side once every chunk was written.
 */
async function delayedPipe(
  from: Deno.Conn,
  to: Deno.Conn,
  options: Pick<DelayProxyOptions, "delayMs" | "maxBufferedBytes">,
  frozen: Freeze,
): Promise<void> {
  const cap = options.maxBufferedBytes ?? 4 * 1024 * 1024;
  const queue: { due: number; bytes: Uint8Array }[] = [];
  let buffered = 0;
  let ended = false;
  const writerWake = new Wakeup();
  const readerWake = new Wakeup();
  const reader = (async () => {
    try {
      while (true) {
        while (buffered >= cap) await readerWake.wait();
        const chunk = new Uint8Array(READ_CHUNK);
        const n = await from.read(chunk);
        if (n === null) break;
        queue.push({ due: performance.now() + options.delayMs, bytes: chunk.subarray(0, n) });
        buffered += n;
        writerWake.notify();
      }
    } finally {
      ended = true;
      writerWake.notify();
    }
  })();
  const writer = (async () => {
    while (true) {
      const head = queue.shift();
      if (head === undefined) {
        if (ended) break;
        await writerWake.wait();
        continue;
      }
      const wait = head.due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (frozen.on) await frozen.closed; // then the write below fails: the connection is closed
      for (let off = 0; off < head.bytes.length;) off += await to.write(head.bytes.subarray(off));
      buffered -= head.bytes.length;
      readerWake.notify();
    }
    await to.closeWrite().catch(() => {});
  })();
  // A failed read (a reset) still lets the writer flush what came before it.
  await Promise.all([reader.catch(() => {}), writer]);
}

/** Whether a proxy is frozen, and a promise that settles when it closes. */
class Freeze {
  on = false;
  readonly #closed = Promise.withResolvers<void>();
  readonly closed = this.#closed.promise;

  close(): void {
    this.#closed.resolve();
  }
}

/** One waiter woken by the next `notify` (a notify with nobody waiting is dropped). */
class Wakeup {
  #resolve: (() => void) | null = null;

  wait(): Promise<void> {
    return new Promise((resolve) => this.#resolve = resolve);
  }

  notify(): void {
    const resolve = this.#resolve;
    this.#resolve = null;
    resolve?.();
  }
}
