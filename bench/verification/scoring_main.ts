/**
 * Could a verifier judge a DisTrO result without the trainer's private state? The measurement
 * behind docs/protocol.md's choice of replay over scoring ("Why replay, measured").
 *
 * Three honest trainers train the demo's model (config/models/llama-bytes, Brown bytes, 2
 * sequences of 256 each, the demo's cosine schedule and DisTrO settings) on one shared θ, as a
 * run would. At every step a verifier holding the same θ computes, for each trainer, its own
 * gradient of the trainer's batch and of a control batch, and the share of the trainer's published
 * coefficients whose sign agrees with that gradient's DCT: what a scoring verifier (Templar's
 * Gauntlet, in gradient form) would test. It also prints the coefficient overlap of two trainers'
 * results (what honest overlap is, for copy detection), of a trainer's result with its previous
 * one, and the agreement of an old result (5 steps back) with the current gradient.
 *
 * Slow (four gradients and CPU DCTs a step): `deno run -A bench/verification/scoring_main.ts
 * [steps]` prints a line per step and a summary per range of steps.
 *
 * @module
 */
import { loadModel, NetworkTrainer } from "../../client/mod.ts";
import { type BatchId, learningRate } from "../../common/mod.ts";
import { LocalDataProvider } from "../../data/mod.ts";
import {
  coefficientOverlap,
  decodePayload,
  type DistroResult,
  encode,
  encodePayload,
  signBit,
} from "../../optimizer/mod.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import { encodeGradients } from "../../train/mod.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const STEPS = Number(Deno.args[0] ?? 100);
const TRAINERS = 3, PER = 2, T = 256;

const rt = await GpuRuntime.create();
const model = await loadModel(`${ROOT}config/models/llama-bytes`, "llama-bytes-brown");
const data = await LocalDataProvider.open(`${ROOT}data/corpus/brown-bytes/train`, {
  seqLen: T,
  tokenSize: "TwoBytes",
  vocabSize: 256,
});
const distro = {
  chunk: 64,
  topk: 8,
  decay: 0.999,
  weightDecay: null,
  clipGradNorm: 1,
  quantize1bit: true,
};
const make = () =>
  new NetworkTrainer({
    rt,
    config: model.config,
    layout: model.layout,
    weights: model.weights,
    seqLen: T,
    microBatch: 1,
    maxBatch: 4,
    distro,
  });
const trainers = Array.from({ length: TRAINERS }, make);
const verifier = make();
const schedule = {
  kind: "Cosine",
  baseLr: 3e-3,
  warmupSteps: 10,
  warmupInitLr: 0,
  totalSteps: 300,
  finalLr: 3e-4,
} as const;
const layouts = verifier.distro.layouts;
const entries = model.layout.entries;

/** The DCT coefficients of the verifier's gradient of `batch` at θ, per parameter. */
async function gradientDct(batch: BatchId): Promise<Float32Array[]> {
  const micro = await verifier.readMicroBatches(batch, data);
  const step = rt.beginStep("scoring gradient");
  encodeGradients(verifier.model, step, micro);
  await step.submit();
  const g = await verifier.model.readGrads();
  return layouts.map((l, n) =>
    encode(l, g.subarray(entries[n].offset, entries[n].offset + l.size))
  );
}

/** The share of `r`'s coefficients whose sign agrees with `coeffs` at the same index. */
function agreement(r: DistroResult, coeffs: Float32Array[]): number {
  let same = 0, total = 0;
  r.params.forEach((p, n) => {
    const l = layouts[n];
    for (let e = 0; e < p.indices.length; e++) {
      const c = coeffs[n][Math.floor(e / l.k) * l.totalk + p.indices[e]];
      if (signBit(c) === signBit(p.values[e])) same++;
      total++;
    }
  });
  return same / total;
}

const wire = (r: DistroResult) =>
  decodePayload(encodePayload(r, verifier.expectation), verifier.expectation);
const rows: { step: number; own: number[]; control: number[]; overlap: number; old: number }[] = [];
const history: DistroResult[][] = [];
let dataIndex = 0;
console.log("step  agreement own / control per trainer            overlap  self  old(5)");
for (let step = 1; step <= STEPS; step++) {
  const lr = learningRate(schedule, step), prevLr = learningRate(schedule, step - 1);
  const batches = trainers.map((_, i) => ({
    start: dataIndex + i * PER,
    end: dataIndex + i * PER + PER - 1,
  }));
  dataIndex += TRAINERS * PER;
  const results: DistroResult[] = [];
  for (const [i, t] of trainers.entries()) {
    results.push(wire((await t.train({ step, batch: batches[i], lr, prevLr, data })).result));
  }
  const control = await gradientDct({ start: 15_000 + step * PER, end: 15_000 + step * PER + 1 });
  const own: number[] = [], ctl: number[] = [];
  for (const [i, r] of results.entries()) {
    own.push(agreement(r, await gradientDct(batches[i])));
    ctl.push(agreement(r, control));
  }
  const overlap = coefficientOverlap(results[0].params, results[1].params, layouts);
  const previous = history.at(-1)?.[0];
  const self = previous === undefined
    ? NaN
    : coefficientOverlap(results[0].params, previous.params, layouts);
  const oldResult = history.at(-5)?.[0];
  const old = oldResult === undefined ? NaN : agreement(oldResult, await gradientDct(batches[0]));
  rows.push({ step, own, control: ctl, overlap, old });
  console.log(
    `${String(step).padStart(4)}  ` +
      own.map((a, i) => `${a.toFixed(3)}/${ctl[i].toFixed(3)}`).join("  ") +
      `   ${overlap.toFixed(3)}  ${self.toFixed(3)}  ${old.toFixed(3)}`,
  );
  history.push(results);
  if (history.length > 6) history.shift();
  for (const t of [...trainers, verifier]) await t.apply(results, lr);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
for (const [lo, hi] of [[1, 10], [11, 50], [51, 100], [101, STEPS]]) {
  const r = rows.filter((x) => x.step >= lo && x.step <= hi);
  if (r.length === 0) continue;
  const own = r.flatMap((x) => x.own), ctl = r.flatMap((x) => x.control);
  const gaps = r.flatMap((x) => x.own.map((a, i) => a - x.control[i]));
  const olds = r.map((x) => x.old).filter((x) => !Number.isNaN(x));
  console.log(
    `steps ${lo}-${hi}: own mean ${mean(own).toFixed(3)} min ${Math.min(...own).toFixed(3)}; ` +
      `control mean ${mean(ctl).toFixed(3)} max ${Math.max(...ctl).toFixed(3)}; gap mean ` +
      `${mean(gaps).toFixed(3)} min ${Math.min(...gaps).toFixed(3)}; overlap max ` +
      `${Math.max(...r.map((x) => x.overlap)).toFixed(3)}; old mean ` +
      `${olds.length ? mean(olds).toFixed(3) : "-"}`,
  );
}
