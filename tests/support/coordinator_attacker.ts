/**
 * A hostile peer of the coordinator server, run as its own process (at the lowest
 * priority, `nice -n 19`, optionally pinned to a CPU) so that during a benchmark its own work (key generation,
 * signing, writing megabytes) competes as little as possible with the server's: on a real
 * network the attacker's CPU is not the server's. Commands are JSON lines on stdin, each
 * answered by one JSON line on stdout once done:
 *
 * - `{ cmd: "idle", address, count }`: opens `count` authenticated connections with fresh
 *   keys that never send anything, and holds them. Answers `{ opened }`.
 * - `{ cmd: "floodHuge", address, connections }`: on each connection, a health check of
 *   65,535 entries (5.3 MB) streamed as fast as the socket takes it; when the server
 *   closes the connection, a new one. Answers `{ started: true }`.
 * - `{ cmd: "floodGarbage", address, connections, frameBytes, entries }`: health checks of
 *   `frameBytes` bytes announcing `entries` entries of garbage, back to back on each
 *   connection (replies read and dropped). Answers `{ started: true }`.
 * - `{ cmd: "stop" }`: stops every flood and closes every connection. Answers
 *   `{ framesSent, connectionsOpened }` since the last stop.
 *
 * @module
 */
import {
  clientHandshake,
  encodeFrame,
  FrameReader,
  generateIdentity,
  writeAll,
} from "../../net/mod.ts";
import { COORDINATOR_CONTEXT } from "../../coordinator/server/mod.ts";

/** A command to the attacker worker. */
export type AttackerCommand =
  | { cmd: "idle"; address: string; count: number }
  | { cmd: "floodHuge"; address: string; connections: number }
  | {
    cmd: "floodGarbage";
    address: string;
    connections: number;
    frameBytes: number;
    entries: number;
  }
  | { cmd: "stop" };

const open = new Set<Deno.Conn>();
let running = false;
let loops: Promise<void>[] = [];
let framesSent = 0;
let connectionsOpened = 0;

async function connect(address: string): Promise<{ conn: Deno.Conn; frames: FrameReader }> {
  const [hostname, port] = address.split(":");
  const conn = await Deno.connect({ hostname, port: Number(port) });
  open.add(conn);
  connectionsOpened++;
  const frames = new FrameReader(conn, { maxFrameBytes: 64 * 1024 * 1024 });
  await clientHandshake(conn, frames, {
    context: COORDINATOR_CONTEXT,
    secretKey: generateIdentity().secretKey,
  });
  return { conn, frames };
}

function close(conn: Deno.Conn): void {
  open.delete(conn);
  try {
    conn.close();
  } catch {
    // closed by the server
  }
}

/** Reads and drops everything the server sends until it closes. */
async function drain(frames: FrameReader): Promise<void> {
  try {
    while ((await frames.next()) !== null) {
      // dropped
    }
  } catch {
    // closed
  }
}

/** A health check frame of `bytes` bytes announcing `entries` entries of 0xff. */
function healthCheckFrame(bytes: number, entries: number): Uint8Array {
  const payload = new Uint8Array(bytes).fill(0xff);
  payload[0] = 3; // HealthCheck
  new DataView(payload.buffer).setUint32(1, 1); // requestId
  new DataView(payload.buffer).setUint32(5, entries);
  return encodeFrame(payload);
}

/** The largest health check: 65,535 entries of 81 bytes behind its 9-byte header (5.3 MB). */
const HUGE_FRAME_BYTES = 9 + 65_535 * 81;
const HUGE_FRAME_ENTRIES = 65_535;

/** Health checks of `bytes` bytes back to back on one connection, reconnecting when it closes. */
async function flood(address: string, bytes: number, entries: number): Promise<void> {
  const frame = healthCheckFrame(bytes, entries);
  while (running) {
    let conn: Deno.Conn | null = null;
    try {
      const link = await connect(address);
      conn = link.conn;
      drain(link.frames);
      while (running) {
        await writeAll(conn, frame);
        framesSent++;
      }
    } catch {
      // refused or closed by the server: try again
    } finally {
      if (conn !== null) close(conn);
    }
  }
}

/** Carries out one command; resolves to its answer. */
async function run(command: AttackerCommand): Promise<Record<string, unknown>> {
  switch (command.cmd) {
    case "idle": {
      let opened = 0;
      const batch = 64;
      for (let i = 0; i < command.count; i += batch) {
        const n = Math.min(batch, command.count - i);
        const links = await Promise.all(Array.from({ length: n }, () => connect(command.address)));
        opened += links.length;
      }
      return { opened };
    }
    case "floodHuge":
      running = true;
      for (let i = 0; i < command.connections; i++) {
        loops.push(flood(command.address, HUGE_FRAME_BYTES, HUGE_FRAME_ENTRIES));
      }
      return { started: true };
    case "floodGarbage":
      running = true;
      for (let i = 0; i < command.connections; i++) {
        loops.push(flood(command.address, command.frameBytes, command.entries));
      }
      return { started: true };
    case "stop": {
      running = false;
      for (const conn of [...open]) close(conn);
      await Promise.all(loops);
      loops = [];
      const answer = { framesSent, connectionsOpened };
      framesSent = 0;
      connectionsOpened = 0;
      return answer;
    }
  }
}

/** The lines of a UTF-8 byte stream. */
async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffered = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
    }
  }
}

/** An attacker process for `deno bench` code: commands in, answers out, one line each. */
export class AttackerProcess {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncIterator<string>;

  /**
   * Starts the attacker at the lowest priority; with `cpu`, pinned to that CPU (`taskset`),
   * so a benchmark pinned to another one shares no core with it.
   */
  constructor(options: { cpu?: number } = {}) {
    const command = [
      "nice",
      "-n",
      "19",
      Deno.execPath(),
      "run",
      "-A",
      new URL(import.meta.url).pathname,
    ];
    if (options.cpu !== undefined) command.unshift("taskset", "-c", String(options.cpu));
    this.#child = new Deno.Command(command[0], {
      args: command.slice(1),
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.#lines = lines(this.#child.stdout)[Symbol.asyncIterator]();
  }

  /** Sends `command`; resolves to its answer. */
  async send(command: AttackerCommand): Promise<Record<string, number>> {
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(command) + "\n"));
    const { value, done } = await this.#lines.next();
    if (done) throw new Error("the attacker process exited");
    return JSON.parse(value);
  }

  /** Ends the process. */
  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#child.status;
  }
}

if (import.meta.main) {
  for await (const line of lines(Deno.stdin.readable)) {
    const answer = await run(JSON.parse(line));
    await Deno.stdout.write(new TextEncoder().encode(JSON.stringify(answer) + "\n"));
  }
  running = false;
  for (const conn of [...open]) close(conn);
}
