/**
 * `deno bench -A client/trainer_bench.ts`: one client round on the tiny Llama
 * (config/models/llama-tiny, T = 32): training a 2-sequence batch into a DisTrO result, and
 * applying the exact aggregate of 3 and of 32 peers' results (what a 3- and a 32-client run
 * costs each client per step), plus encoding and decoding one payload.
 *
 * @module
 */
import { loadModel } from "./model_source.ts";
import { NetworkTrainer } from "./trainer.ts";
import { LocalDataProvider } from "../data/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { decodePayload, type DistroResult, encodePayload } from "../optimizer/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const T = 32;
const dir = await Deno.makeTempDir();
const tokens = Uint16Array.from({ length: 64 * T }, (_, i) => (i * 37 + 11) % 512);
await Deno.writeFile(`${dir}/train.bin`, new Uint8Array(tokens.buffer));
const data = await LocalDataProvider.open(dir, {
  seqLen: T,
  tokenSize: "TwoBytes",
  vocabSize: 512,
});
const rt = await GpuRuntime.create();
const model = await loadModel(`${ROOT}config/models/llama-tiny`, "bench");
const trainer = new NetworkTrainer({
  rt,
  config: model.config,
  layout: model.layout,
  weights: model.weights,
  seqLen: T,
  microBatch: 1,
  maxBatch: 2,
  distro: {
    chunk: 64,
    topk: 8,
    decay: 0.999,
    weightDecay: null,
    clipGradNorm: 1,
    quantize1bit: true,
  },
});
let step = 0;
const train = async () => {
  step++;
  const start = (2 * step) % 62;
  return (await trainer.train({
    step,
    batch: { start, end: start + 1 },
    lr: 1e-3,
    prevLr: 1e-3,
    data,
  })).result;
};
// Peers' results: real results with their batch moved so each batch is distinct.
const base = await train();
const peers = (n: number): DistroResult[] =>
  Array.from({ length: n }, (_, i) => ({ ...base, batch: { start: 2 * i, end: 2 * i + 1 } }));
const three = peers(3);
const thirtyTwo = peers(32);
const bytes = encodePayload(base, trainer.expectation);

Deno.bench("client round: train 2 × 32 tokens into a DisTrO result", async () => {
  await train();
});
/** The client queues an apply without waiting for it; the bench waits (one Deno tick, ~11 ms). */
const applied = async (results: DistroResult[]) => {
  await trainer.apply(results, 1e-4);
  await rt.beginStep("wait for the apply").submit();
};
Deno.bench("client round: apply 3 peers' results", () => applied(three));
Deno.bench("client round: apply 32 peers' results", () => applied(thirtyTwo));
Deno.bench(`client round: encode + decode one payload (${bytes.length} bytes)`, () => {
  decodePayload(encodePayload(base, trainer.expectation), trainer.expectation);
});

globalThis.addEventListener("unload", () => {
  trainer[Symbol.dispose]();
  rt[Symbol.dispose]();
  Deno.removeSync(dir, { recursive: true });
});
