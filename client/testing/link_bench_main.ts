/**
 * P2P model sharing over a real, rate-limited link: a joiner fetches the 20 M-parameter Llama
 * (config/models/llama-20m) from two providers, each on a host of its own (a network namespace,
 * client/testing/netns.ts) behind a link limited each way, as f32 blobs (80 MB, the baseline)
 * and as bf16 blobs (40 MB, after a bf16 checkpoint load or a `snapshot_dtype = "bf16"`
 * Cooldown), every blob verified and the digest checked.
 *
 * On loopback the fetch is CPU-bound (docs/benchmarks.md, "bf16 model sharing"); this is what
 * the halved bytes buy when the link is the limit. Needs root and iproute2.
 *
 *   deno task bench-link [--rate 100mbit] [--runs 3]
 *
 * @module
 */
import "../../net/p2p/mod.ts";
import { createP2PNode } from "../../net/p2p/mod.ts";
import { PayloadService } from "../../net/p2p/mod.ts";
import { testPublic, testSecret } from "./p2p.ts";
import { createTestNetwork, IP, tbfBurstBytes, testNetworkUnavailable } from "./netns.ts";
import { type ModelProvider, spawnModelProvider } from "./model_provider.ts";
import { fetchModel } from "../model_sharing/fetch.ts";
import { multiaddr } from "@multiformats/multiaddr";
import { parseOrExit } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";

/** The flags of `deno task bench-link`. */
const BENCH_LINK_SPEC = {
  usage: "deno task bench-link [--rate 100mbit] [--runs N]",
  summary: "P2P model sharing over real links: a joiner fetches the 20M model as f32 and as " +
    "bf16 blobs from two providers, each on a host of its own (a network namespace) behind a " +
    "link of the given rate each way. Needs root and iproute2.",
  flags: {
    rate: {
      type: "string",
      value: "RATE",
      description: "each link's rate, each way (tc's units: 20mbit, 1gbit)",
      default: "100mbit",
    },
    runs: { type: "string", value: "N", description: "fetches timed per dtype", default: "3" },
  },
} as const;

const { rate, runs } = parseOrExit(BENCH_LINK_SPEC, ({ values }) => {
  const rate = values.rate ?? "100mbit";
  try {
    tbfBurstBytes(rate);
  } catch (e) {
    throw new UsageError(`--rate: ${(e as Error).message}`);
  }
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) {
    throw new UsageError(`--runs must be a positive integer, found "${values.runs}"`);
  }
  return { rate, runs };
});
const unavailable = testNetworkUnavailable();
if (unavailable !== null) {
  console.error(`bench-link: ${unavailable}`);
  Deno.exit(2);
}

const JOINER = 1;
const PROVIDERS = { f32: [11, 12], bf16: [13, 14] } as const;
const everyone = [JOINER, ...PROVIDERS.f32, ...PROVIDERS.bf16];

await using network = await createTestNetwork({ hosts: 2, rate });
const providers: ModelProvider[] = [];
try {
  const served: Record<"f32" | "bf16", ModelProvider[]> = { f32: [], bf16: [] };
  for (const dtype of ["f32", "bf16"] as const) {
    for (const [i, self] of PROVIDERS[dtype].entries()) {
      const host = network.hosts[i];
      const provider = await spawnModelProvider({
        self,
        dtype,
        host: host.address,
        allowed: everyone,
        prefix: [IP, "netns", "exec", host.netns],
      });
      providers.push(provider);
      served[dtype].push(provider);
    }
  }
  await using node = await createP2PNode({
    secretKey: testSecret(JOINER),
    host: network.gateway,
    allowedPeers: everyone.map(testPublic),
  });
  const service = await PayloadService.start(node);
  for (const [i, p] of providers.entries()) {
    const self = [...PROVIDERS.f32, ...PROVIDERS.bf16][i];
    await node.addPeerAddresses(testPublic(self), [multiaddr(p.address)]);
  }
  const cpu = Deno.readTextFileSync("/proc/cpuinfo").match(/model name\s*:\s*(.*)/)?.[1];
  console.log(
    `${new Date().toISOString()}, ${cpu ?? "unknown CPU"}, ${navigator.hardwareConcurrency} ` +
      `cores, load average ${Deno.loadavg().map((l) => l.toFixed(2)).join(" ")}, Deno ` +
      `${Deno.version.deno}; two providers on hosts of their own, each link ${rate} each way`,
  );
  const times: Record<"f32" | "bf16", number[]> = { f32: [], bf16: [] };
  for (let run = -1; run < runs; run++) { // run -1 warms up
    for (const dtype of ["f32", "bf16"] as const) {
      const start = performance.now();
      await fetchModel(service, {
        providers: PROVIDERS[dtype].map(testPublic),
        step: 1,
        expectedDigest: served[dtype][0].digest,
        reshare: false,
      });
      if (run >= 0) times[dtype].push(performance.now() - start);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const f32 = median(times.f32);
  const bf16 = median(times.bf16);
  const mbps = (bytes: number, ms: number) => ((bytes * 8) / (ms / 1000) / 1e6).toFixed(0);
  for (const dtype of ["f32", "bf16"] as const) {
    const ms = median(times[dtype]);
    console.log(
      `${dtype.padEnd(4)}: ${served[dtype][0].bytes} bytes, median ${ms.toFixed(0)} ms of ` +
        `${times[dtype].map((t) => t.toFixed(0)).join(", ")} (${
          mbps(served[dtype][0].bytes, ms)
        } Mbit/s)`,
    );
  }
  console.log(`bf16 against f32: ${(f32 / bf16).toFixed(2)}x faster`);
  await service.close();
} finally {
  await Promise.all(providers.map((p) => p.stop()));
}
