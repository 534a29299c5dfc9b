/**
 * Payload throughput on loopback, 64 MiB from the same provider four ways:
 *
 * - raw TCP: one length-prefixed frame over plain `Deno.listen`/`Deno.connect` (the baseline);
 * - bare libp2p stream: the bytes over noise + yamux, no header, no hashing, no copy into one
 *   buffer (the cost of the encrypted transport alone);
 * - in-band fetch: `/psyche/payload/1` with the bulk path off (noise + yamux, framing, sha256);
 * - bulk fetch: `/psyche/payload/1` with the bulk path on (offer and ticket over the encrypted
 *   stream, the bytes over the provider's plain TCP bulk listener, sha256-checked).
 *
 * Target: a payload fetch reaches at least half of raw TCP.
 *
 * Two groups: the provider in a child process (as between real peers: sender and receiver work
 * on different cores), and everything in this process (sender and receiver share one thread).
 * MB/s = 67.1 MB / the average time `deno bench` prints.
 *
 * On a shared machine wall times swing with the load; CPU time does not. For the child-process
 * group the benchmark also prints, when it ends, the receiver's and the provider's CPU time per
 * 64 MiB fetch (this process from `process.cpuUsage`, the child from `/proc/<pid>/stat`), whose
 * sum bounds what each path can reach once the cores are busy.
 *
 * Run: `deno bench -A net/p2p/payload_bench.ts`
 *
 * @module
 */
import { BARE_PROTOCOL, benchPayload, spawnProvider } from "../../client/testing/bench_provider.ts";
import { peerIdOf } from "./identity.ts";
import { StreamReader } from "./stream_reader.ts";
import { createP2PNode } from "./node.ts";
import { PayloadService } from "./payload_service.ts";
import { testPublic, testSecret } from "../../client/testing/p2p.ts";
import process from "node:process";

const SIZE = 64 * 1024 * 1024;
const ROUNDS = { n: 8, warmup: 2 };

/** Reads one length-prefixed frame from a plain TCP server on `port`. */
async function rawFetch(port: number): Promise<Uint8Array> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const header = new Uint8Array(8);
    for (let got = 0; got < 8;) got += (await conn.read(header.subarray(got))) ?? 0;
    const length = Number(new DataView(header.buffer).getBigUint64(0));
    const out = new Uint8Array(length);
    for (let got = 0; got < length;) {
      const n = await conn.read(out.subarray(got));
      if (n === null) throw new Error(`raw TCP ended after ${got} of ${length} bytes`);
      got += n;
    }
    return out;
  } finally {
    conn.close();
  }
}

function check(bytes: Uint8Array): void {
  if (bytes.length !== SIZE) throw new Error(`got ${bytes.length} bytes, expected ${SIZE}`);
}

/** CPU milliseconds the process `pid` has used (Linux `/proc`), or NaN where unavailable. */
function processCpuMs(pid: number): number {
  try {
    const fields = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, at 100 ticks/s
  } catch {
    return NaN;
  }
}

/** Per bench name: fetches timed, this process's and the child's CPU ms over them. */
const cpu = new Map<string, { runs: number; receiver: number; sender: number }>();

/** Wraps `fetch` so each run adds its CPU time (receiver here, sender in the child) to `cpu`. */
function withCpu(name: string, fetch: () => Promise<void>): () => Promise<void> {
  return async () => {
    const before = process.cpuUsage();
    const childBefore = processCpuMs(child.pid);
    await fetch();
    const used = process.cpuUsage(before);
    const entry = cpu.get(name) ?? { runs: 0, receiver: 0, sender: 0 };
    entry.runs++;
    entry.receiver += (used.user + used.system) / 1000;
    entry.sender += processCpuMs(child.pid) - childBefore;
    cpu.set(name, entry);
  };
}

// Provider in a child process (secret 1), fetcher here (secret 2).
// Provider in a child process (secret 1); fetchers here: secret 2 with the bulk path off (the
// in-band fetch and the bare stream), secret 4 with it on.
const child = await spawnProvider(1, SIZE, [2, 4]);
const fetcher = await createP2PNode({
  secretKey: testSecret(2),
  allowedPeers: [testPublic(1), testPublic(3)],
});
const client = await PayloadService.start(fetcher, { bulk: false });
await fetcher.connect(child.address);
const bulkFetcher = await createP2PNode({
  secretKey: testSecret(4),
  allowedPeers: [testPublic(1), testPublic(3)],
});
const bulkClient = await PayloadService.start(bulkFetcher);
await bulkFetcher.connect(child.address);

// Provider in this process (secret 3), with its own plain TCP server.
const payload = benchPayload(SIZE);
const local = await createP2PNode({
  secretKey: testSecret(3),
  allowedPeers: [testPublic(2), testPublic(4)],
});
const localHash = (await PayloadService.start(local)).provide(payload);
await fetcher.connect(local.addresses()[0]);
await bulkFetcher.connect(local.addresses()[0]);
const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
(async () => {
  for await (const conn of listener) {
    const header = new Uint8Array(8);
    new DataView(header.buffer).setBigUint64(0, BigInt(SIZE));
    for (const part of [header, payload]) {
      for (let off = 0; off < part.length;) off += await conn.write(part.subarray(off));
    }
    conn.close();
  }
})().catch(() => {});

Deno.bench({
  name: "raw TCP frame, other process",
  group: "64 MiB, provider in another process",
  baseline: true,
  ...ROUNDS,
  fn: withCpu("raw TCP", async () => check(await rawFetch(child.rawPort))),
});

Deno.bench({
  name: "in-band fetch (noise, yamux, sha256), other process",
  group: "64 MiB, provider in another process",
  ...ROUNDS,
  fn: withCpu("in-band fetch", async () => {
    check(await client.fetch(child.hash, { providers: [testPublic(1)] }));
  }),
});

Deno.bench({
  name: "bulk fetch (ticket over noise, plain TCP, sha256), other process",
  group: "64 MiB, provider in another process",
  ...ROUNDS,
  fn: withCpu("bulk fetch", async () => {
    const before = bulkClient.stats.bulkFetched;
    check(await bulkClient.fetch(child.hash, { providers: [testPublic(1)] }));
    if (bulkClient.stats.bulkFetched !== before + 1) throw new Error("the bulk path was not used");
  }),
});

Deno.bench({
  name: "bare libp2p stream (noise, yamux; no framing, no hash), other process",
  group: "64 MiB, provider in another process",
  ...ROUNDS,
  fn: withCpu("bare libp2p stream", async () => {
    const stream = await fetcher.libp2p.dialProtocol(peerIdOf(testPublic(1)), BARE_PROTOCOL);
    const reader = new StreamReader(stream);
    await stream.close();
    let got = 0;
    for (let chunk = await reader.next(); chunk !== undefined; chunk = await reader.next()) {
      got += chunk.length;
    }
    reader.release();
    if (got !== SIZE) throw new Error(`got ${got} bytes, expected ${SIZE}`);
  }),
});

Deno.bench({
  name: "raw TCP frame, same process",
  group: "64 MiB, provider in this process",
  baseline: true,
  ...ROUNDS,
  async fn() {
    check(await rawFetch(listener.addr.port));
  },
});

Deno.bench({
  name: "in-band fetch (noise, yamux, sha256), same process",
  group: "64 MiB, provider in this process",
  ...ROUNDS,
  async fn() {
    check(await client.fetch(localHash, { providers: [testPublic(3)] }));
  },
});

Deno.bench({
  name: "bulk fetch (ticket over noise, plain TCP, sha256), same process",
  group: "64 MiB, provider in this process",
  ...ROUNDS,
  async fn() {
    const before = bulkClient.stats.bulkFetched;
    check(await bulkClient.fetch(localHash, { providers: [testPublic(3)] }));
    if (bulkClient.stats.bulkFetched !== before + 1) throw new Error("the bulk path was not used");
  },
});

addEventListener("unload", () => {
  console.log(
    "\nCPU ms per 64 MiB fetch, provider in another process (receiver + sender = total):",
  );
  for (const [name, { runs, receiver, sender }] of cpu) {
    const [r, s] = [receiver / runs, sender / runs];
    console.log(
      `  ${name.padEnd(20)} ${r.toFixed(0).padStart(4)} + ${s.toFixed(0).padStart(4)} = ` +
        `${(r + s).toFixed(0).padStart(4)}  (${runs} fetches)`,
    );
  }
  listener.close();
  void child.stop();
  void local.stop();
  void fetcher.stop();
  void bulkFetcher.stop();
});
