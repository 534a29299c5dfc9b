/**
 * What a relay costs model sharing: a joiner fetches the 20 M-parameter Llama
 * (config/models/llama-20m, 80 MB of f32 blobs) from a provider in another process, directly
 * (over the plain-TCP bulk path, as between reachable peers) and through the run's relay in a
 * third process (in-band over the relayed libp2p connection, as from a provider behind NAT).
 * Every blob is verified and the digest checked. All on loopback, so the figures are what the
 * CPU pays: the relayed bytes are encrypted twice (the joiner-provider noise session inside each
 * side's session with the relay) and copied through the relay.
 *
 *   deno task bench-relay [--runs 3]
 *
 * @module
 */
import "../../net/p2p/mod.ts";
import { multiaddr } from "@multiformats/multiaddr";
import { createP2PNode } from "../../net/p2p/mod.ts";
import { PayloadService } from "../../net/p2p/mod.ts";
import { fetchModel } from "../model_sharing/fetch.ts";
import { testPublic, testSecret } from "./p2p.ts";
import { spawnModelProvider } from "./model_provider.ts";
import { spawnRelay } from "./relay_child.ts";
import { logLine, parseOrExit } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";

const BENCH_RELAY_SPEC = {
  usage: "deno task bench-relay [--runs N] [--logs console|json]",
  summary: "P2P model sharing of the 20M model, direct against through a relay (each in a " +
    "process of its own, on loopback).",
  flags: {
    runs: { type: "string", value: "N", description: "fetches timed per path", default: "3" },
    logs: {
      type: "string",
      value: "console|json",
      description: "lines for people, or one JSON object per line (docs/logs.md)",
      default: "console",
    },
  },
} as const;

const { runs, json } = parseOrExit(BENCH_RELAY_SPEC, ({ values }) => {
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) {
    throw new UsageError(`--runs must be a positive integer, found "${values.runs}"`);
  }
  if (values.logs !== "console" && values.logs !== "json") {
    throw new UsageError(`--logs must be console or json, found "${values.logs}"`);
  }
  return { runs, json: values.logs === "json" };
});

/** One event: a JSON line with `--logs json`, else `human` for people. */
function say(event: string, fields: Record<string, unknown>, human: string): void {
  console.log(json ? logLine(Date.now(), "info", event, fields) : human);
}

const JOINER = 1;
const DIRECT = 2;
const RELAYED = 3;
const everyone = [JOINER, DIRECT, RELAYED];

const relay = await spawnRelay(everyone);
const direct = await spawnModelProvider({
  self: DIRECT,
  dtype: "f32",
  host: "127.0.0.1",
  allowed: everyone,
});
const relayed = await spawnModelProvider({
  self: RELAYED,
  dtype: "f32",
  host: "127.0.0.1",
  allowed: everyone,
  relay: relay.address,
});
try {
  await using node = await createP2PNode({
    secretKey: testSecret(JOINER),
    allowedPeers: everyone.map(testPublic),
  });
  const service = await PayloadService.start(node);
  await node.setRelays([relay.address]);
  await node.addPeerAddresses(testPublic(DIRECT), [multiaddr(direct.address)]);
  // Known only by its relayed address, as a provider behind NAT is.
  await node.addPeerAddresses(testPublic(RELAYED), [multiaddr(relayed.relayed!)]);
  const cpu = Deno.readTextFileSync("/proc/cpuinfo").match(/model name\s*:\s*(.*)/)?.[1];
  say(
    "bench_start",
    {
      cpu: cpu ?? null,
      cores: navigator.hardwareConcurrency,
      load_average: Deno.loadavg(),
      deno: Deno.version.deno,
      model: "llama-20m",
      bytes: direct.bytes,
    },
    `${new Date().toISOString()}, ${cpu ?? "unknown CPU"}, ${navigator.hardwareConcurrency} ` +
      `cores, load average ${Deno.loadavg().map((l) => l.toFixed(2)).join(" ")}, Deno ` +
      `${Deno.version.deno}; llama-20m, ${(direct.bytes / 1e6).toFixed(0)} MB of f32 blobs`,
  );
  const paths = { direct: DIRECT, relayed: RELAYED } as const;
  const times: Record<keyof typeof paths, number[]> = { direct: [], relayed: [] };
  for (let run = -1; run < runs; run++) { // run -1 warms up
    for (const path of ["direct", "relayed"] as const) {
      const start = performance.now();
      await fetchModel(service, {
        providers: [testPublic(paths[path])],
        step: 1,
        expectedDigest: direct.digest,
        reshare: false,
      });
      const ms = performance.now() - start;
      if (run >= 0) times[path].push(ms);
      if (json) say("fetched", { path, run, warmup: run < 0, ms }, "");
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const path of ["direct", "relayed"] as const) {
    const ms = median(times[path]);
    say(
      "measured",
      { path, median_ms: ms, runs, mbit_per_s: (direct.bytes * 8) / (ms / 1000) / 1e6 },
      `${path.padEnd(8)} ${(ms / 1000).toFixed(2)} s median of ${runs} ` +
        `(${((direct.bytes * 8) / (ms / 1000) / 1e6).toFixed(0)} Mbit/s; ` +
        `${times[path].map((t) => (t / 1000).toFixed(2)).join(", ")} s)`,
    );
  }
  say(
    "bench_summary",
    {
      relayed_over_direct: median(times.relayed) / median(times.direct),
      bulk_fetched: service.stats.bulkFetched,
      fetched: service.stats.fetched,
    },
    `relayed / direct: ${(median(times.relayed) / median(times.direct)).toFixed(2)}x; bulk ` +
      `fetches ${service.stats.bulkFetched}, of ${service.stats.fetched} blobs`,
  );
} finally {
  await Promise.all([direct.stop(), relayed.stop()]);
  await relay.stop();
}
