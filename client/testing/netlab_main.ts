/**
 * The network lab for people: `deno task netlab`. It runs the same tiny run twice, once with every
 * client on 127.0.0.1 (the baseline) and once with every client behind a home router of its own
 * (client/testing/netns.ts with `nat`), none given another's address, meeting through the
 * coordinator's relay (`--relay`); optionally with every client link rate-limited (`--rate`).
 * For each it reports, over the steps where every client applied every result: the round time
 * (median time between a client's applies), the bytes each client received per round, which
 * peer connections went direct and which through the relay, and whether every client held the
 * same parameters at every step. It exits non-zero if a run applied no complete step or its
 * clients disagreed.
 *
 *   deno task netlab [--clients 3] [--steps 6] [--rate 20mbit] [--slow 2mbit] [--delay 25]
 *                    [--model llama-tiny] [--logs json]
 *
 * With `--logs json` it prints one JSON object per line instead (docs/logs.md): `netlab_start`
 * (the machine), `waiting` (each run's start), `measured` (each run's figures), `slow_client`
 * (with `--slow`), `netlab_summary` (the ratios), and `diverged` (error) when clients disagreed.
 *
 * `--slow` limits the last client's link alone (lab topology 3): whether the run keeps the
 * others' pace, and whether that client keeps up or is told it was dropped (`dropped`) or is too
 * slow (`too_slow`).
 *
 * `--delay` adds latency (lab topology 2 with `--rate`). The kernel here has no `netem`, so the
 * coordinator and its relay sit behind delaying proxies (net/testing/delay_proxy.ts) that hold
 * every byte `MS` each way, and the relay announces its proxy (`--relay-announce`). Behind NAT
 * every byte between peers crosses the relay: a client's round trip to the relay grows by
 * `2 x MS`, to a peer by `4 x MS`, as between two homes each `2 x MS` from the relay. `--model`
 * trains a larger model of config/models/ so that results weigh on a slow link.
 *
 * Needs root (network namespaces), iproute2 and nftables.
 *
 * @module
 */
import "../../net/p2p/mod.ts";
import { logLine, parseOrExit } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";
import { createTestNetwork, tbfBurstBytes, testNetworkUnavailable } from "./netns.ts";
import {
  type SeenEvent,
  startTinyTestnet,
  startTinyTestnetOn,
  type TinyRunOptions,
  type TinyTestnet,
} from "./testnet.ts";
import { clientDigests, disagreements } from "../../tests/support/one_model.ts";
import { delayedRelay } from "./delayed_relay.ts";
import { REPO_ROOT } from "../testnet/mod.ts";
import { join } from "node:path";

/** The models the lab can train: small enough for several clients on one CPU. */
const MODELS = ["llama-tiny", "llama-bytes", "llama-mini"] as const;

const NETLAB_SPEC = {
  usage: "deno task netlab [--clients N] [--steps N] [--rate RATE] [--slow RATE] " +
    "[--delay MS] [--model NAME] [--logs console|json]",
  summary: "The NAT lab: a tiny run on loopback, then the same run with every client behind a " +
    "NAT of its own, meeting through the coordinator's relay; round time, bytes per round and " +
    "direct against relayed connections for both. Needs root, iproute2 and nftables.",
  flags: {
    clients: { type: "string", value: "N", description: "clients (2..8)", default: "3" },
    steps: {
      type: "string",
      value: "N",
      description: "steps, each with every result applied by every client, to measure",
      default: "6",
    },
    rate: {
      type: "string",
      value: "RATE",
      description: "rate-limit every client link of the NAT run, each way (tc's units: 20mbit)",
    },
    slow: {
      type: "string",
      value: "RATE",
      description: "rate-limit the last client's link alone, each way (topology 3)",
    },
    delay: {
      type: "string",
      value: "MS",
      description: "hold every byte to and from the coordinator and its relay this long, each " +
        "way, in a proxy (topology 2: a client's round trip grows by 2 x MS)",
    },
    model: {
      type: "string",
      value: "NAME",
      description: `the model of config/models/ to train (${MODELS.join(", ")})`,
      default: "llama-tiny",
    },
    logs: {
      type: "string",
      value: "console|json",
      description: "a table for people, or one JSON object per line (docs/logs.md)",
      default: "console",
    },
  },
} as const;

const options = parseOrExit(NETLAB_SPEC, ({ values }) => {
  const count = (flag: "clients" | "steps", low: number, high: number) => {
    const n = Number(values[flag]);
    if (!Number.isInteger(n) || n < low || n > high) {
      throw new UsageError(
        `--${flag} must be an integer in ${low}..${high}, found "${values[flag]}"`,
      );
    }
    return n;
  };
  for (const flag of ["rate", "slow"] as const) {
    const rate = values[flag];
    if (rate === undefined) continue;
    try {
      tbfBurstBytes(rate);
    } catch (e) {
      throw new UsageError(`--${flag}: ${(e as Error).message}`);
    }
  }
  if (values.rate !== undefined && values.slow !== undefined) {
    throw new UsageError("give --rate or --slow, not both");
  }
  const delay = values.delay === undefined ? undefined : Number(values.delay);
  if (delay !== undefined && !(Number.isInteger(delay) && delay >= 0 && delay <= 10_000)) {
    throw new UsageError(`--delay must be whole milliseconds in 0..10000, found "${values.delay}"`);
  }
  const model = values.model ?? "llama-tiny";
  if (!(MODELS as readonly string[]).includes(model)) {
    throw new UsageError(`--model must be one of ${MODELS.join(", ")}, found "${values.model}"`);
  }
  if (values.logs !== "console" && values.logs !== "json") {
    throw new UsageError(`--logs must be console or json, found "${values.logs}"`);
  }
  return {
    json: values.logs === "json",
    clients: count("clients", 2, 8),
    steps: count("steps", 1, 100),
    rate: values.rate,
    slow: values.slow,
    delayMs: delay,
    model,
  };
});
/** One event: a JSON line with `--logs json`, else `human` (when there is one) for people. */
function say(
  level: "info" | "error",
  event: string,
  fields: Record<string, unknown>,
  human?: string,
): void {
  if (options.json) console.log(logLine(Date.now(), level, event, fields));
  else if (human !== undefined) (level === "error" ? console.error : console.log)(human);
}

const unavailable = testNetworkUnavailable({ nat: true });
if (unavailable !== null) {
  say("error", "unavailable", { reason: unavailable }, `netlab: ${unavailable}`);
  Deno.exit(2);
}

/** What one run measured. */
interface Measured {
  readonly roundMs: number;
  readonly bytesPerRound: number;
  readonly direct: number;
  readonly relayed: number;
  readonly behindNat: number;
  readonly stepsCompared: number;
  readonly disagreements: number;
  /** With `--slow`: the slow client's own results applied, of the steps it trained. */
  readonly slowApplied?: { applied: number; trained: number; told: string | null };
}

const run: TinyRunOptions = {
  modelDir: join(REPO_ROOT, "config", "models", options.model),
  initMinClients: options.clients,
  // With a slow client the others must be able to go on without it (topology 3).
  minClients: options.slow === undefined ? options.clients : options.clients - 1,
  witnessNodes: 0,
  globalBatchSize: 2 * options.clients,
  epochTime: 60,
  maxRoundTrainTime: 10,
};
const labels = Array.from({ length: options.clients }, (_, i) => `client-${i + 1}`);
/** When a process logged the event (its JSON line's `time`). */
const at = (e: SeenEvent) => Date.parse(String(e.event.time));
const step = (e: SeenEvent) => Number(e.event.step);
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? NaN;

/**
 * Waits for `steps` complete steps (every result applied) at every client, then reads the
 * figures off the events. With a slow client, the others are measured: a step counts when
 * they applied it, whether or not the slow client's result made it.
 */
async function measure(testnet: TinyTestnet, what: string, slow?: string): Promise<Measured> {
  const { watcher } = testnet;
  const measured = labels.filter((l) => l !== slow);
  const whole = (label: string) =>
    watcher.named("apply", label).filter((e) =>
      slow !== undefined ||
      Number(e.event.applied) === options.clients && Number(e.event.untrained_batches) === 0
    );
  say(
    "info",
    "waiting",
    { run: what, steps: options.steps },
    `${what}: waiting for ${options.steps} complete steps at every client`,
  );
  await watcher.waitFor(
    `${options.steps} complete steps at every client (${what})`,
    () => measured.every((l) => whole(l).length >= options.steps + 1),
    300_000,
  );
  const rounds: number[] = [];
  const bytes: number[] = [];
  for (const label of measured) {
    const applies = whole(label);
    for (let i = 1; i < applies.length; i++) rounds.push(at(applies[i]) - at(applies[i - 1]));
    const traffic = watcher.named("traffic", label).map((e) => ({
      at: at(e),
      received: Number(e.event.bytes_received),
    }));
    const [first, last] = [at(applies[0]), at(applies.at(-1)!)];
    const inWindow = traffic.filter((t) => t.at >= first && t.at <= last);
    if (inWindow.length >= 2) {
      const spanRounds = inWindow.length - 1;
      bytes.push((inWindow.at(-1)!.received - inWindow[0].received) / spanRounds);
    }
  }
  if (slow !== undefined) await awaitSlowVerdict(testnet, slow);
  const connected = watcher.events.filter((e) => e.event.event === "peer_connected");
  const found = disagreements(clientDigests(watcher.events));
  return {
    roundMs: median(rounds),
    bytesPerRound: median(bytes),
    direct: connected.filter((e) => e.event.via === "direct").length,
    relayed: connected.filter((e) => e.event.via === "relay").length,
    behindNat:
      labels.filter((l) => watcher.named("reachability", l).at(-1)?.event.behind_nat === true)
        .length,
    stepsCompared: found.steps,
    disagreements: found.disagreements.length,
    slowApplied: slow === undefined ? undefined : slowClientFigures(testnet, slow),
  };
}

/** How many of the slow client's own results the run applied, and whether it was told. */
function slowClientFigures(testnet: TinyTestnet, slow: string) {
  const { watcher } = testnet;
  const trained = watcher.named("train", slow).map((e) => Number(e.event.step));
  const batchOf = new Map(
    watcher.named("train", slow).map((e) => [Number(e.event.step), String(e.event.batch)]),
  );
  // Judged by a fast client's applies: the slow client's batch was applied unless untrained.
  const applies = watcher.named("apply", labels[0]).filter((e) => batchOf.has(step(e)));
  const missed =
    applies.filter((e) =>
      (e.event.untrained as number[][]).some((b) => String(b) === batchOf.get(step(e)))
    ).length;
  return {
    applied: applies.length - missed,
    trained: Math.min(trained.length, applies.length),
    told: ["dropped", "too_slow"].find((name) => watcher.named(name, slow).length > 0) ?? null,
  };
}

/**
 * Gives a slow client that missed results up to a minute to hear of it: it sees the
 * coordinator's states late, so it learns it was dropped after the others measured.
 */
async function awaitSlowVerdict(testnet: TinyTestnet, slow: string): Promise<void> {
  const { applied, trained } = slowClientFigures(testnet, slow);
  if (applied === trained) return;
  await testnet.watcher.waitFor(
    `${slow} to be told it missed its rounds`,
    () => slowClientFigures(testnet, slow).told !== null,
    60_000,
  ).catch(() => {}); // reported below as "never told"
}

const cpu = Deno.readTextFileSync("/proc/cpuinfo").match(/model name\s*:\s*(.*)/)?.[1];
say(
  "info",
  "netlab_start",
  {
    cpu: cpu ?? null,
    cores: navigator.hardwareConcurrency,
    load_average: Deno.loadavg(),
    deno: Deno.version.deno,
    clients: options.clients,
    model: options.model,
    delay_ms: options.delayMs ?? 0,
  },
  `${new Date().toISOString()}, ${cpu ?? "unknown CPU"}, ${navigator.hardwareConcurrency} ` +
    `cores, load average ${Deno.loadavg().map((l) => l.toFixed(2)).join(" ")}, Deno ` +
    `${Deno.version.deno}; ${options.clients} clients, ${options.model}`,
);

const links =
  (options.rate !== undefined
    ? `, ${options.rate} links`
    : options.slow !== undefined
    ? `, ${labels.at(-1)} on ${options.slow}`
    : "") + (options.delayMs === undefined ? "" : `, +${2 * options.delayMs} ms round trip`);
let baseline: Measured;
{
  await using testnet = await startTinyTestnet({ ...run, runId: "netlab-loopback" }, {
    numClients: options.clients,
  });
  baseline = await measure(testnet, "loopback");
}
let lab: Measured;
{
  await using network = await createTestNetwork({
    hosts: options.clients,
    nat: true,
    rate: options.slow === undefined
      ? options.rate
      : (i) => (i === options.clients - 1 ? options.slow : undefined),
  });
  // Topology 2: the coordinator and its relay behind delaying proxies (delayed_relay.ts).
  await using delayed = options.delayMs === undefined
    ? undefined
    : delayedRelay(network, options.delayMs);
  await using testnet = await startTinyTestnetOn(network, { ...run, runId: "netlab-nat" }, {
    numClients: options.clients,
    coordinatorArgs: delayed?.coordinatorArgs ?? ["--relay"],
    clientRoute: delayed?.clientRoute,
    bootstrapPeers: false,
  });
  lab = await measure(
    testnet,
    `behind NAT${links}`,
    options.slow === undefined ? undefined : labels.at(-1),
  );
}

const row = (name: string, m: Measured) =>
  `| ${name} | ${m.roundMs.toFixed(0)} ms | ${(m.bytesPerRound / 1024).toFixed(1)} KiB | ` +
  `${m.behindNat} of ${options.clients} | ${m.direct} direct, ${m.relayed} relayed | ` +
  `${m.disagreements === 0 ? `identical at ${m.stepsCompared} steps` : "DIFFERENT"} |`;
if (!options.json) {
  console.log(
    "\n| run | round time | bytes received per client per round | behind NAT | peer connections " +
      "| parameters |\n|---|---|---|---|---|---|",
  );
}
for (const [name, m] of [["loopback", baseline], [`NAT + relay${links}`, lab]] as const) {
  say("info", "measured", {
    run: name,
    round_ms: m.roundMs,
    bytes_per_round: m.bytesPerRound,
    behind_nat: m.behindNat,
    direct: m.direct,
    relayed: m.relayed,
    steps_compared: m.stepsCompared,
    disagreements: m.disagreements,
  }, row(name, m));
}
if (lab.slowApplied !== undefined) {
  const { applied, trained, told } = lab.slowApplied;
  say(
    "info",
    "slow_client",
    { client: labels.at(-1), rate: options.slow, applied, trained, told },
    `\n${labels.at(-1)} on ${options.slow}: ${applied} of its ${trained} results applied; ` +
      (told !== null
        ? `it was told (${told})`
        : applied === trained
        ? "it kept up"
        : "it missed results and was NEVER TOLD"),
  );
}
say(
  "info",
  "netlab_summary",
  {
    round_ratio: lab.roundMs / baseline.roundMs,
    bytes_ratio: lab.bytesPerRound / baseline.bytesPerRound,
  },
  `\nround time behind NAT: ${(lab.roundMs / baseline.roundMs).toFixed(2)}x loopback; bytes per ` +
    `round: ${(lab.bytesPerRound / baseline.bytesPerRound).toFixed(2)}x`,
);
const failed = [baseline, lab].some((m) => m.disagreements > 0 || m.stepsCompared === 0);
if (failed) {
  say(
    "error",
    "diverged",
    { note: "clients held different parameters, or no step was compared" },
    "netlab: clients held different parameters, or no step was compared",
  );
  Deno.exit(1);
}
Deno.exit(0);
