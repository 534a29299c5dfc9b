/**
 * A TCP connection from a chosen local address, for flood tests "from many addresses": on Linux
 * every 127.x.y.z is a loopback address, and a server sees each as a different peer. Deno's own
 * `Deno.connect` cannot bind a local address; `node:net` can. The result reads and writes as the
 * net/ frame code expects (`ByteReader`, `ByteWriter`), so a handshake runs over it as over a
 * `Deno.Conn`.
 *
 * @module
 */
import net from "node:net";
import type { ByteReader, ByteWriter } from "../frame.ts";

/** A connection opened by {@linkcode connectFrom}. */
export interface BoundSocket extends ByteReader, ByteWriter {
  /** Closes the connection at once. */
  close(): void;
  /** Whether the server closed it (or it failed). */
  readonly ended: boolean;
}

/** Connects from `localAddress` to `hostname:port`; rejects if the connection fails. */
export function connectFrom(
  localAddress: string,
  hostname: string,
  port: number,
): Promise<BoundSocket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port, localAddress });
    const chunks: Uint8Array[] = [];
    let ended = false;
    let wake: (() => void) | null = null;
    const notify = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    socket.on("data", (data: Uint8Array) => {
      chunks.push(new Uint8Array(data));
      notify();
    });
    const end = () => {
      ended = true;
      notify();
    };
    socket.on("end", end);
    socket.on("close", end);
    socket.on("error", (e: Error) => {
      end();
      reject(e);
    });
    socket.once("connect", () =>
      resolve({
        get ended() {
          return ended;
        },
        async read(p: Uint8Array): Promise<number | null> {
          while (chunks.length === 0 && !ended) await new Promise<void>((r) => (wake = r));
          if (chunks.length === 0) return null;
          const head = chunks[0];
          const n = Math.min(p.length, head.length);
          p.set(head.subarray(0, n));
          if (n === head.length) chunks.shift();
          else chunks[0] = head.subarray(n);
          return n;
        },
        write(p: Uint8Array): Promise<number> {
          return new Promise((done, fail) =>
            socket.write(p, (e?: Error | null) => (e ? fail(e) : done(p.length)))
          );
        },
        close() {
          socket.destroy();
        },
      }));
  });
}
