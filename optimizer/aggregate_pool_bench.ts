/**
 * The exact aggregate of a round on this thread against worker threads (aggregate_pool.ts), for
 * the 1B-shaped Llama of distro_bench.ts (h 2048, inter 8192, L 16, vocab 32000; chunk 64, top-k
 * 8) and the 20M model, with 4 and 8 peers' random results: the median time of each over rounds
 * that alternate the two (the pool warmed up first), and the longest the main thread went without
 * running a 1 ms timer meanwhile (how long a client would serve no peer and no coordinator
 * message). Both give the same bits (aggregate_pool_test.ts); this checks it again per round.
 *
 * Run: `deno run -A optimizer/aggregate_pool_bench.ts [--rounds 5] [--workers N]` for the table
 * (printed by `deno bench -A optimizer/aggregate_pool_bench.ts` too, before its two entries).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { AggregatePool, defaultAggregateWorkers } from "./aggregate_pool.ts";
import { llamaShapes } from "./baseline.ts";
import type { SparseParam } from "./compress.ts";
import { type AggregatedParam, aggregateFixed } from "./exact.ts";
import { type ChunkLayout, chunkLayouts } from "./layout.ts";
import { median } from "../common/mod.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "5" }, workers: { type: "string" } },
});
const ROUNDS = Number(args.rounds);
const WORKERS = args.workers === undefined ? defaultAggregateWorkers() : Number(args.workers);

const MODELS = {
  "llama-20m": { hidden: 256, intermediate: 1024, layers: 4, vocab: 32000 },
  "llama-1b": { hidden: 2048, intermediate: 8192, layers: 16, vocab: 32000 },
};

/** `peers` results of distinct random coefficients per chunk and ±1 values (1-bit payloads). */
function randomResults(layouts: readonly ChunkLayout[], peers: number, seed: number) {
  let r = seed;
  const next = () => (r = (Math.imul(r, 1664525) + 1013904223) >>> 0);
  return Array.from({ length: peers }, () =>
    layouts.map((l): SparseParam => {
      const indices = new Uint32Array(l.chunks * l.k), values = new Float32Array(l.chunks * l.k);
      for (let c = 0; c < l.chunks; c++) {
        for (let e = c * l.k; e < (c + 1) * l.k; e++) {
          let i: number;
          do i = next() % l.totalk; while (indices.subarray(c * l.k, e).includes(i));
          indices[e] = i;
          values[e] = next() & 1 ? 1 : -1;
        }
      }
      return { indices, values };
    }));
}

const serial = (layouts: readonly ChunkLayout[], results: readonly SparseParam[][]) =>
  layouts.map((l, n) => aggregateFixed(l, results.map((r) => r[n])));

/** `work`'s time and the longest gap between ticks of a 1 ms timer while it ran. */
async function timed<T>(work: () => T | Promise<T>): Promise<{ ms: number; stallMs: number }> {
  let last = performance.now(), stall = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 1);
  // One tick first, so the timer runs before the work starts.
  await new Promise((resolve) => setTimeout(resolve, 2));
  last = performance.now();
  const t0 = performance.now();
  await work();
  const ms = performance.now() - t0;
  stall = Math.max(stall, performance.now() - last);
  clearInterval(timer);
  return { ms, stallMs: stall };
}

const same = (a: AggregatedParam[], b: AggregatedParam[]) =>
  a.length === b.length &&
  a.every((p, n) =>
    (["offsets", "indices", "coeffs", "scaleExp"] as const).every((f) =>
      p[f].length === b[n][f].length && p[f].every((v, i) => v === b[n][f][i])
    )
  );

async function table() {
  console.log(
    `CPU ${navigator.hardwareConcurrency} threads, ${WORKERS} workers, load ${
      Deno.loadavg().map((x) => x.toFixed(2)).join(" ")
    }`,
  );
  console.log(
    "| model | peers | entries | this thread ms | workers ms | speed-up | longest stall: this thread / workers (ms) |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  using pool = new AggregatePool(WORKERS);
  for (const [name, dims] of Object.entries(MODELS)) {
    const layouts = chunkLayouts(llamaShapes(dims), { chunk: 64, topk: 8 });
    for (const peers of [4, 8]) {
      const results = randomResults(layouts, peers, 7 + peers);
      const expected = serial(layouts, results);
      if (!same(await pool.aggregate(layouts, results), expected)) throw new Error("bits differ");
      const runs = { serial: [] as number[], pool: [] as number[] };
      const stalls = { serial: [] as number[], pool: [] as number[] };
      for (let round = 0; round < ROUNDS; round++) {
        const s = await timed(() => serial(layouts, results));
        let out: AggregatedParam[] = [];
        const p = await timed(async () => out = await pool.aggregate(layouts, results));
        if (!same(out, expected)) throw new Error(`${name}: the pool's bits differ`);
        runs.serial.push(s.ms), runs.pool.push(p.ms);
        stalls.serial.push(s.stallMs), stalls.pool.push(p.stallMs);
      }
      const entries = peers * layouts.reduce((sum, l) => sum + l.chunks * l.k, 0);
      const [ms, pms] = [median(runs.serial), median(runs.pool)];
      console.log(
        `| ${name} | ${peers} | ${(entries / 1e6).toFixed(2)} M | ${ms.toFixed(1)} | ${
          pms.toFixed(1)
        } | ${(ms / pms).toFixed(2)}x | ${median(stalls.serial).toFixed(1)} / ${
          median(stalls.pool).toFixed(1)
        } |`,
      );
    }
  }
}

await table();

const layouts1b = chunkLayouts(llamaShapes(MODELS["llama-1b"]), { chunk: 64, topk: 8 });
let results1b: SparseParam[][] | undefined;
let benchPool: AggregatePool | undefined;
Deno.bench({
  name: "aggregate 4 peers, llama-1b: this thread",
  group: "aggregate",
  baseline: true,
  n: 5,
  fn() {
    results1b ??= randomResults(layouts1b, 4, 11);
    serial(layouts1b, results1b);
  },
});
Deno.bench({
  name: `aggregate 4 peers, llama-1b: ${WORKERS} workers`,
  group: "aggregate",
  n: 5,
  async fn() {
    results1b ??= randomResults(layouts1b, 4, 11);
    benchPool ??= new AggregatePool(WORKERS);
    await benchPool.aggregate(layouts1b, results1b);
  },
});
// The workers would keep the process alive past the last bench.
globalThis.addEventListener("unload", () => benchPool?.[Symbol.dispose]());
