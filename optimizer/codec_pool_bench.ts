/**
 * The host's DisTrO codec on this thread against worker threads (codec_pool.ts), for the
 * 1B-shaped Llama of distro_bench.ts (h 2048, inter 8192, L 16, vocab 32000; chunk 64, top-k 8)
 * and the 20M model, with 4 and 8 peers' random 1-bit results: the exact aggregate of a round,
 * and the decode of the round's payloads (all at once, as they arrive at a round's end). Per row
 * the median time of each way over rounds that alternate them (the pool warmed up first), and
 * the longest the main thread went without running a 1 ms timer meanwhile (how long a client
 * would serve no peer and no coordinator message). Both give the same bits (codec_pool_test.ts);
 * this checks it again every round.
 *
 * Run: `deno run -A optimizer/codec_pool_bench.ts [--rounds 5] [--workers N]` for the table
 * (printed by `deno bench -A optimizer/codec_pool_bench.ts` too, before its two entries).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { CodecPool, defaultCodecWorkers, roundEntries } from "./codec_pool.ts";
import { llamaShapes } from "./baseline.ts";
import type { SparseParam } from "./compress.ts";
import { aggregateFixed } from "./exact.ts";
import { type ChunkLayout, chunkLayouts } from "./layout.ts";
import { decodePayload, encodePayload } from "./wire.ts";
import { median } from "../common/mod.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string", default: "5" }, workers: { type: "string" } },
});
const ROUNDS = Number(args.rounds);
const WORKERS = args.workers === undefined ? defaultCodecWorkers() : Number(args.workers);

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
        // Ascending within a chunk, as a payload carries them.
        indices.subarray(c * l.k, (c + 1) * l.k).sort();
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

/** The same arrays, element for element, under the same keys (any nesting of plain objects). */
const same = (a: unknown, b: unknown): boolean => {
  if (ArrayBuffer.isView(a) && ArrayBuffer.isView(b)) {
    const [x, y] = [a as unknown as ArrayLike<number>, b as unknown as ArrayLike<number>];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
    return true;
  }
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return a === b;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length &&
    keys.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
};

/** One row: `work` on this thread against `onPool`, rounds alternating, outputs compared. */
async function row(
  label: string,
  size: string,
  here: () => unknown,
  onPool: () => Promise<unknown>,
) {
  const expected = here();
  if (!same(await onPool(), expected)) throw new Error(`${label}: the pool's bits differ`);
  const runs = { here: [] as number[], pool: [] as number[] };
  const stalls = { here: [] as number[], pool: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const h = await timed(here);
    let out: unknown;
    const p = await timed(async () => out = await onPool());
    if (!same(out, expected)) throw new Error(`${label}: the pool's bits differ`);
    runs.here.push(h.ms), runs.pool.push(p.ms);
    stalls.here.push(h.stallMs), stalls.pool.push(p.stallMs);
  }
  const [ms, pms] = [median(runs.here), median(runs.pool)];
  console.log(
    `| ${label} | ${size} | ${ms.toFixed(1)} | ${pms.toFixed(1)} | ${(ms / pms).toFixed(2)}x | ${
      median(stalls.here).toFixed(1)
    } / ${median(stalls.pool).toFixed(1)} |`,
  );
}

async function table() {
  console.log(
    `CPU ${navigator.hardwareConcurrency} threads, ${WORKERS} workers, load ${
      Deno.loadavg().map((x) => x.toFixed(2)).join(" ")
    }`,
  );
  console.log(
    "| work | size | this thread ms | workers ms | speed-up | longest stall: this thread / workers (ms) |",
  );
  console.log("|---|---:|---:|---:|---:|---:|");
  using pool = new CodecPool(WORKERS);
  for (const [name, dims] of Object.entries(MODELS)) {
    const layouts = chunkLayouts(llamaShapes(dims), { chunk: 64, topk: 8 });
    const expect = { layouts, quantize1bit: true };
    for (const peers of [4, 8]) {
      const results = randomResults(layouts, peers, 7 + peers);
      const entries = roundEntries(layouts, peers);
      await row(
        `${name}: aggregate of ${peers} peers`,
        `${(entries / 1e6).toFixed(2)} M entries`,
        () => serial(layouts, results),
        () => pool.aggregate(layouts, results),
      );
      const payloads = results.map((params, p) =>
        encodePayload({ step: 1, batch: { start: p, end: p }, trainerNonce: 0, params }, expect)
      );
      await row(
        `${name}: decode of ${peers} payloads`,
        `${(payloads[0].length / 1e6).toFixed(2)} MB each`,
        () => payloads.map((bytes) => decodePayload(bytes, expect)),
        () => Promise.all(payloads.map((bytes) => pool.decode(bytes, expect))),
      );
    }
  }
}

await table();

const layouts1b = chunkLayouts(llamaShapes(MODELS["llama-1b"]), { chunk: 64, topk: 8 });
let results1b: SparseParam[][] | undefined;
let benchPool: CodecPool | undefined;
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
    benchPool ??= new CodecPool(WORKERS);
    await benchPool.aggregate(layouts1b, results1b);
  },
});
// The workers would keep the process alive past the last bench.
globalThis.addEventListener("unload", () => benchPool?.[Symbol.dispose]());
