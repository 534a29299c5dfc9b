/**
 * A stand-alone payload provider for tests and benchmarks that need a second process.
 *
 * `deno run -A client/testing/bench_provider.ts <secret index> <payload bytes> <allowed index>...`
 * starts a node whose secret is `testSecret(index)`, provides a deterministic payload (in-band and,
 * to fetchers that accept offers, over its bulk listener), also
 * serves the same payload as one length-prefixed frame over plain TCP and unframed over
 * `BARE_PROTOCOL`, joins the gossip of run
 * `CHILD_RUN_ID` (answering every `TrainingResult` it receives with a `Finished` whose Merkle
 * root is that result's content hash), prints one JSON line `{ "address", "hash", "rawPort" }`
 * on stdout, and stops when stdin closes. That it then exits
 * on its own is part of what the two-process test checks (see exit_fix.ts).
 *
 * @module
 */
import { createP2PNode } from "../../net/p2p/mod.ts";
import { DEFAULT_CHUNK_BYTES, PayloadService } from "../../net/p2p/mod.ts";
import { sendChunked } from "../../net/p2p/mod.ts";
import { RunGossip } from "../p2p/gossip.ts";
import { readHello, testPublic, testSecret } from "./p2p.ts";

/** A bench-only protocol: the provider sends the payload, unframed and unverified. */
export const BARE_PROTOCOL = "/psyche-bench/bare/1";

/** The run whose gossip the child provider joins. */
export const CHILD_RUN_ID = "two-process-run";

/** The deterministic payload the provider serves: byte i is a hash of i. */
export function benchPayload(size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (Math.imul(i, 2654435761) >>> 24) & 0xff;
  return out;
}

/** A provider running in a child process. */
export interface ChildProvider {
  /** Its libp2p listen address. */
  address: string;
  /** Hash of the payload it provides. */
  hash: string;
  /** Port of its plain TCP server. */
  rawPort: number;
  /** Its process id (the benchmark reads its CPU time). */
  pid: number;
  /**
   * Closes its stdin and waits for it to exit; resolves with its exit status, or rejects if it
   * has not exited `timeoutMs` after (default 10 s), killing it.
   */
  stop(timeoutMs?: number): Promise<Deno.CommandStatus>;
}

/** Starts `bench_provider.ts` in a child `deno run` and waits for its address line. */
export async function spawnProvider(
  self: number,
  size: number,
  allowed: number[],
): Promise<ChildProvider> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL(import.meta.url).pathname,
      String(self),
      String(size),
      ...allowed.map(String),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const { hello, reader } = await readHello(child.stdout, "provider process");
  return {
    ...(hello as { address: string; hash: string; rawPort: number }),
    pid: child.pid,
    async stop(timeoutMs = 10_000) {
      await child.stdin.close();
      await reader.cancel();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          child.kill();
          reject(new Error(`provider process still running ${timeoutMs} ms after stop`));
        }, timeoutMs);
      });
      try {
        return await Promise.race([child.status, late]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

if (import.meta.main) {
  const [self, size, ...allowed] = Deno.args.map(Number);
  const payload = benchPayload(size);
  const node = await createP2PNode({
    secretKey: testSecret(self),
    allowedPeers: allowed.map(testPublic),
  });
  const service = await PayloadService.start(node);
  const hash = service.provide(payload);
  await node.libp2p.handle(BARE_PROTOCOL, async (stream) => {
    await sendChunked(stream, [payload], DEFAULT_CHUNK_BYTES);
    await stream.close();
  });
  const gossip: RunGossip = new RunGossip(node, {
    runId: CHILD_RUN_ID,
    secretKey: testSecret(self),
    onAnnouncement: ({ message }) => {
      if (message.kind !== "TrainingResult") return;
      gossip.publish({
        kind: "Finished",
        step: message.step,
        proof: message.proof,
        merkleRoot: message.contentHash,
        warmup: false,
      }).catch(() => {});
    },
  });
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of listener) {
      (async () => {
        const header = new Uint8Array(8);
        new DataView(header.buffer).setBigUint64(0, BigInt(size));
        for (const part of [header, payload]) {
          for (let off = 0; off < part.length;) off += await conn.write(part.subarray(off));
        }
        conn.close();
      })().catch(() => {});
    }
  })();
  console.log(JSON.stringify({
    address: node.addresses()[0].toString(),
    hash,
    rawPort: listener.addr.port,
  }));
  // Run until the parent closes our stdin.
  for await (const _ of Deno.stdin.readable) { /* ignore input */ }
  listener.close();
  await serving;
  gossip.close();
  await node.stop();
}
