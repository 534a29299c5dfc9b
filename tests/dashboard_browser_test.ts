/**
 * The coordinator's dashboard in a real browser: a testnet (a coordinator and two clients as
 * processes, training the demo's byte-level Llama on the Brown corpus) serves its dashboard;
 * once the coordinator has taken a few witness reports and both clients' telemetry notices,
 * headless Chromium loads the page and the DOM it renders must show the run's state, both
 * clients with the bytes they sent and received, a loss chart with points and the step-time
 * breakdown chart. `/metrics` is scraped in the same run. Set PSYCHE_DASHBOARD_SCREENSHOT=docs/dashboard.png
 * to keep the screenshot. A second, quick test serves a Solana run's snapshot (no testnet) and
 * checks the page's treasury and pool table.
 *
 * Needs Debian's `chromium` (`./psyche test` installs it); skipped, saying so, without it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { EventWatcher } from "../client/testing/testnet.ts";
import { REPO_ROOT, Testnet } from "../client/testnet/mod.ts";
import { CORPUS_TOKENIZERS, ensureCorpus } from "../data/mod.ts";
import {
  parsePrometheusText,
  sampleValue,
} from "../coordinator/dashboard/testing/prometheus_text.ts";
import { type RunSnapshot, startDashboard } from "../coordinator/dashboard/mod.ts";

const CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome"];

/** The first Chromium on PATH, or null. */
function findChromium(): string | null {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    for (const name of CHROMIUM_NAMES) {
      try {
        if (Deno.statSync(join(dir, name)).isFile) return join(dir, name);
      } catch { /* not here */ }
    }
  }
  return null;
}

const chromium = findChromium();
if (chromium === null) {
  console.warn(
    "dashboard_browser_test: SKIPPED: no chromium on PATH (apt-get install chromium; " +
      "./psyche test installs it)",
  );
}

/**
 * The demo's run for two clients that both train from the first epoch and both witness every
 * round (`init_min_clients = 2`, `witness_nodes = 0`), so each plots a loss curve: a temporary
 * folder, its data.toml pointing at the bundled corpus.
 */
async function demoConfigForTwo(): Promise<string> {
  const demo = join(REPO_ROOT, "config", "demo");
  const dir = await Deno.makeTempDir({ prefix: "psyche-dashboard-config-" });
  const state = (await Deno.readTextFile(join(demo, "state.toml")))
    .replace(/^init_min_clients = \d+/m, "init_min_clients = 2")
    .replace(/^witness_nodes = \d+/m, "witness_nodes = 0");
  const data = (await Deno.readTextFile(join(demo, "data.toml")))
    .replace(
      /^dir = "[^"]*"/m,
      `dir = ${JSON.stringify(join(CORPUS_TOKENIZERS.bytes.dir, "train"))}`,
    );
  assert.match(state, /init_min_clients = 2/);
  assert.match(data, /brown-bytes\/train"/);
  await Deno.writeTextFile(join(dir, "state.toml"), state);
  await Deno.writeTextFile(join(dir, "data.toml"), data);
  return dir;
}

/** Runs headless Chromium with `args` then `url`; its stdout. */
async function headless(args: string[], url: string, profile: string): Promise<string> {
  const out = await new Deno.Command(chromium!, {
    args: [
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      `--user-data-dir=${profile}`,
      "--window-size=1280,1100",
      ...args,
      url,
    ],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(90_000),
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  assert.ok(out.success, `chromium failed: ${new TextDecoder().decode(out.stderr).slice(-2000)}`);
  return stdout;
}

Deno.test({
  name: "the dashboard of a live run renders its state, clients and loss chart in Chromium",
  ignore: chromium === null,
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await ensureCorpus("bytes");
  const config = await demoConfigForTwo();
  const watcher = new EventWatcher();
  const testnet = await Testnet.start({
    configPath: config,
    numClients: 2,
    logs: "json",
    write: null,
    onEvent: watcher.onEvent,
    dashboardPort: 0,
  });
  const profile = await Deno.makeTempDir({ prefix: "psyche-chromium-" });
  try {
    const url = testnet.dashboardUrl!;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(
      watcher.named("testnet").some((e) => e.event.message === `dashboard: ${url}`),
      "the testnet prints the dashboard's URL",
    );
    await watcher.waitFor(
      "4 witness reports from 2 clients at the coordinator",
      () => {
        const witnesses = watcher.named("witness", "coordinator");
        return witnesses.length >= 4 && new Set(witnesses.map((w) => w.event.client)).size >= 2;
      },
      300_000,
    );
    await watcher.waitFor(
      "telemetry notices from 2 clients at the coordinator",
      () => new Set(watcher.named("telemetry", "coordinator").map((e) => e.event.client)).size >= 2,
      300_000,
    );

    // The live page (its event stream open) as a one-shot reader gets it at load.
    const livePage = await headless(["--dump-dom"], url, profile);
    assert.match(livePage, /data-run-state="[A-Za-z]+"/);
    // `?live=0`: no stream, so virtual time runs out and uPlot has drawn.
    const snapshotUrl = `${url}/?live=0`;
    const dom = await headless(["--virtual-time-budget=3000", "--dump-dom"], snapshotUrl, profile);
    const state = /<body[^>]*data-run-state="([A-Za-z]+)"/.exec(dom)?.[1];
    assert.ok(
      ["Warmup", "RoundTrain", "RoundWitness", "Cooldown"].includes(state ?? ""),
      `run state shown: ${state}`,
    );
    assert.match(dom, /<span id="run-state"[^>]*>(Warmup|RoundTrain|RoundWitness|Cooldown)</);
    const rows = [...dom.matchAll(/<tr class="client" data-key="([0-9a-f]{64})">/g)];
    assert.equal(rows.length, 2, "both clients listed");
    for (const label of ["client-1", "client-2"]) {
      assert.ok(rows.some((r) => r[1] === testnet.clientKey(label)), `${label} listed`);
    }
    assert.match(dom, /class="status Healthy"/);
    const points = Number(/id="loss-chart"[^>]*data-points="(\d+)"/.exec(dom)?.[1]);
    assert.ok(points >= 4, `the loss chart plots ${points} points`);
    assert.match(dom, /<div class="uplot/, "uPlot drew the chart");
    assert.match(dom, /<canvas/);
    for (const column of ["bytes-sent", "bytes-received"]) {
      const shown = [...dom.matchAll(new RegExp(`<td class="${column}" data-bytes="(\\d*)">`, "g"))]
        .map((m) => Number(m[1]));
      assert.equal(shown.length, 2, `a ${column} cell per client`);
      assert.ok(shown.every((n) => n > 0), `${column}: ${shown}`);
    }
    const breakdownSteps = Number(/id="breakdown-chart"[^>]*data-steps="(\d+)"/.exec(dom)?.[1]);
    assert.ok(breakdownSteps >= 1, `the breakdown chart has ${breakdownSteps} steps`);
    assert.match(
      dom,
      /id="breakdown-chart"[^>]*><div class="uplot/,
      "uPlot drew the breakdown chart",
    );

    const scraped = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
    assert.ok(sampleValue(scraped, "psyche_witnesses_total")! >= 4);
    assert.ok(sampleValue(scraped, "psyche_coordinator_step")! >= 2);
    const losses = scraped.samples.filter((s) => s.name === "psyche_loss");
    assert.equal(losses.length, 2, "a loss per reporting client");
    assert.ok(losses.every((s) => s.value > 0 && s.value < 10), JSON.stringify(losses));
    for (
      const name of ["psyche_reported_bytes_sent_total", "psyche_reported_bytes_received_total"]
    ) {
      const bytes = scraped.samples.filter((s) => s.name === name);
      assert.equal(bytes.length, 2, `${name} per reporting client`);
      assert.ok(bytes.every((s) => s.value > 0), JSON.stringify(bytes));
    }
    const trains = scraped.samples.filter((s) =>
      s.name === "psyche_reported_step_phase_milliseconds" && s.labels.phase === "train"
    );
    assert.equal(trains.length, 2, "a train time per reporting client");
    assert.ok(trains.every((s) => s.value > 0), JSON.stringify(trains));

    const shot = join(profile, "dashboard.png");
    await headless(["--virtual-time-budget=3000", `--screenshot=${shot}`], snapshotUrl, profile);
    const png = await Deno.readFile(shot);
    assert.deepEqual([...png.slice(1, 4)], [0x50, 0x4e, 0x47], "a PNG");
    const keep = Deno.env.get("PSYCHE_DASHBOARD_SCREENSHOT");
    if (keep) await Deno.copyFile(shot, keep);
  } finally {
    await testnet.stop();
    await Deno.remove(profile, { recursive: true }).catch(() => {});
    await Deno.remove(config, { recursive: true }).catch(() => {});
  }
});

const SLASHED_CLIENT = "cc".repeat(32);

/** A Solana run's snapshot: one dropped client with earned and slashed points, a treasury and one pool. */
function solanaSnapshot(funds: RunSnapshot["funds"]): RunSnapshot {
  return {
    runId: "llama-tiny-brown",
    runState: "WaitingForMembers",
    epoch: 0,
    step: 1,
    roundHeight: null,
    clients: [{ key: SLASHED_CLIENT, state: "Dropped" }],
    pending: [],
    earned: { [SLASHED_CLIENT]: "40" },
    slashed: { [SLASHED_CLIENT]: "5" },
    ...(funds === undefined ? {} : { funds }),
    config: {
      warmupTime: 15,
      cooldownTime: 5,
      maxRoundTrainTime: 20,
      roundWitnessTime: 2,
      epochTime: 100,
      totalSteps: 300,
      initMinClients: 1,
      minClients: 1,
      maxClients: 16,
      witnessNodes: 1,
      globalBatchSizeStart: 8,
      globalBatchSizeEnd: 8,
      verificationPercent: 0,
      architecture: "HfLlama",
      maxSeqLen: 128,
    },
  };
}

Deno.test({
  name: "the dashboard of a Solana run shows its treasury, pools and slashed points in Chromium",
  ignore: chromium === null,
}, async () => {
  const treasury = "TreasuryAddress1111111111111111111111111111";
  const pool = "PoolAddress11111111111111111111111111111111";
  const funds = {
    treasury: { address: treasury, mint: "Mint1111", vaultAmount: "5000", totalClaimed: "120" },
    pools: [{
      address: pool,
      collateralMint: "Coll1111",
      rewardsMint: "Mint1111",
      totalDeposited: "900",
      totalClaimable: "300",
      totalClaimed: "100",
    }],
  };
  let snapshot = solanaSnapshot(funds);
  const dashboard = startDashboard({ port: 0, snapshot: () => snapshot });
  const profile = await Deno.makeTempDir({ prefix: "psyche-chromium-" });
  try {
    const page = `${dashboard.url}/?live=0`;
    const dom = await headless(["--virtual-time-budget=2000", "--dump-dom"], page, profile);
    assert.match(dom, /<div id="funds">/, "shown");
    const row = (cls: string, address: string) =>
      new RegExp(`<tr class="${cls}" data-address="${address}">(.*?)</tr>`).exec(dom)?.[1] ?? "";
    const cells = (html: string) => [...html.matchAll(/<td[^>]*>([^<]*)<\/td>/g)].map((m) => m[1]);
    assert.deepEqual(cells(row("treasury", treasury)), [
      treasury,
      "treasury vault",
      "Mint1111",
      "5000",
      "–",
      "120",
    ]);
    assert.deepEqual(cells(row("pool", pool)), [pool, "pool", "Mint1111", "900", "300", "100"]);
    // The client's earned and slashed points, the slashed ones marked.
    const client =
      new RegExp(`<tr class="client" data-key="${SLASHED_CLIENT}">(.*?)</tr>`).exec(dom)?.[1] ?? "";
    assert.match(client, /<td class="earned">40<\/td><td class="slashed bad">5<\/td>/);
    // A snapshot without funds (the TCP server's) hides the table.
    snapshot = solanaSnapshot(undefined);
    const tcp = startDashboard({ port: 0, snapshot: () => snapshot });
    try {
      const hidden = await headless(["--dump-dom"], `${tcp.url}/?live=0`, profile);
      assert.match(hidden, /<div id="funds" hidden="">/);
    } finally {
      await tcp.close();
    }
  } finally {
    await dashboard.close();
    await Deno.remove(profile, { recursive: true }).catch(() => {});
  }
});
