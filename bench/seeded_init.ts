/**
 * The seeded init made on this thread (the baseline) and on worker threads, in one run, rounds
 * alternating so every candidate sees the same machine load:
 * `deno run -A bench/seeded_init.ts [--config DIR] [--rounds N] [--workers 1,2,...]`.
 * Each candidate makes every chunk of the layout and drops it (no device): the generation alone,
 * which bounded a large model's seeded start (model/seeded_init.ts). Prints each candidate's
 * median wall time and its speed against the baseline; workers only pay where cores are idle.
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  defaultSeededWorkers,
  llamaParamLayout,
  readLlamaConfig,
  seededChunks,
} from "../model/mod.ts";
import { median } from "../common/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    config: { type: "string", default: "config/models/llama-20m" },
    rounds: { type: "string", default: "5" },
    workers: { type: "string" },
  },
});
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1) {
  throw new Error(`--rounds: not a count: ${values.rounds}`);
}
const candidates = values.workers === undefined
  ? [...new Set([1, 2, defaultSeededWorkers()])]
  : values.workers.split(",").map(Number);
if (candidates.some((w) => !Number.isInteger(w) || w < 1)) {
  throw new Error(`--workers: positive counts separated by commas, got ${values.workers}`);
}
const config = await readLlamaConfig(`${values.config}/config.json`);
const layout = llamaParamLayout(config);
const floats = layout.entries.reduce((n, e) => n + e.size, 0);

async function makeAll(workers: number): Promise<number> {
  const start = performance.now();
  let made = 0;
  for await (const chunk of seededChunks(layout, { config, seed: 1, workers })) {
    made += chunk.length;
  }
  if (made !== floats) throw new Error(`made ${made} floats of ${floats}`);
  return performance.now() - start;
}

console.log(
  `seeded init of ${values.config} (${floats} floats), ${navigator.hardwareConcurrency} cores, ` +
    `load average ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}, ${rounds} rounds`,
);
const all = [0, ...candidates];
const times = new Map<number, number[]>(all.map((w) => [w, []]));
for (let r = 0; r < rounds; r++) {
  for (const w of all) times.get(w)!.push(await makeAll(w));
  console.log(`round ${r + 1}/${rounds} done`);
}
const base = median(times.get(0)!);
console.log("\n| made on | median ms | ns per float | speed against this thread |");
console.log("| --- | ---: | ---: | ---: |");
for (const w of all) {
  const ms = median(times.get(w)!);
  const name = w === 0 ? "this thread (baseline)" : `${w} workers`;
  console.log(
    `| ${name} | ${ms.toFixed(0)} | ${(ms * 1e6 / floats).toFixed(1)} | ${
      (base / ms).toFixed(2)
    }x |`,
  );
}
console.log(`load average after: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
