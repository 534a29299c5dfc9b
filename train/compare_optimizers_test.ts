import assert from "node:assert/strict";
import { UsageError } from "../common/mod.ts";
import { parseFlags } from "../cli/entry.ts";
import { llamaParamLayout, parseLlamaConfig } from "../model/mod.ts";
import { chunkLayouts, payloadBytes } from "../optimizer/mod.ts";
import {
  COMPARE_OPTIMIZERS_SPEC,
  COMPARED_DISTRO,
  compareSettings,
  comparisonPlot,
  comparisonSummary,
  formatLearningRate,
  type RunCurve,
  wireBytesPerStep,
} from "./compare_optimizers.ts";
import { lossPlotSvg } from "./loss_plot.ts";

const settingsOf = (argv: string[]) =>
  compareSettings(parseFlags(COMPARE_OPTIMIZERS_SPEC, argv).values);

Deno.test("compare-optimizers: the plot is written by default, --plot/--svg choose, --no-plot skips", () => {
  assert.equal(settingsOf([]).plotPath, "runs/compare-optimizers/llama-mini.svg");
  assert.equal(
    settingsOf(["--model", "config/models/llama-tiny/"]).plotPath,
    "runs/compare-optimizers/llama-tiny.svg",
  );
  assert.equal(settingsOf(["--plot", "a.svg"]).plotPath, "a.svg");
  assert.equal(settingsOf(["--svg", "b.svg"]).plotPath, "b.svg");
  assert.equal(settingsOf(["--plot", "a.svg", "--svg", "a.svg"]).plotPath, "a.svg");
  assert.equal(settingsOf(["--no-plot"]).plotPath, null);
  assert.throws(() => settingsOf(["--no-plot", "--plot", "a.svg"]), /--no-plot contradicts --plot/);
  assert.throws(() => settingsOf(["--plot", "a.svg", "--svg", "b.svg"]), /two files/);
  assert.equal(settingsOf([]).jsonPath, null);
  assert.equal(settingsOf(["--json", "s.json"]).jsonPath, "s.json");
});

Deno.test("compare-optimizers: both runs' options are checked before training", () => {
  const s = settingsOf(["--steps", "20", "--batch", "4", "--sequence-length", "64"]);
  assert.deepEqual([s.adamw.optimizer, s.adamw.learningRate], ["adamw", 1e-3]);
  assert.deepEqual([s.distro.optimizer, s.distro.learningRate], ["distro", 3e-3]);
  for (const o of [s.adamw, s.distro]) {
    assert.deepEqual([o.steps, o.totalBatch, o.microBatch, o.sequenceLength], [20, 4, 4, 64]);
    assert.equal(o.savePath, null);
  }
  assert.equal(s.distro.compressionTopk, COMPARED_DISTRO.topk);
  assert.throws(
    () => settingsOf(["--distro-learning-rate", "fast"]),
    (e: Error) =>
      e instanceof UsageError && /--distro-learning-rate must be a positive number/.test(e.message),
  );
  assert.throws(() => settingsOf(["--learning-rate", "-1"]), /--learning-rate must be/);
  assert.throws(() => settingsOf(["--steps", "0"]), /--steps must be/);
});

Deno.test("wireBytesPerStep: DisTrO's exact payload size, AdamW's f32 gradient", () => {
  const config = parseLlamaConfig({
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    vocab_size: 512,
    max_position_embeddings: 256,
  });
  const { entries, paramCount } = llamaParamLayout(config);
  const bytes = wireBytesPerStep(entries, COMPARED_DISTRO);
  assert.equal(bytes.parameters, paramCount);
  assert.equal(bytes.adamw, 4 * paramCount);
  assert.equal(bytes.distro, payloadBytes(chunkLayouts(entries, COMPARED_DISTRO), true));
  assert.ok(bytes.distro * 20 < bytes.adamw, `${bytes.distro} vs ${bytes.adamw}`);
});

Deno.test("formatLearningRate: as people write it", () => {
  assert.equal(formatLearningRate(0.003), "3e-3");
  assert.equal(formatLearningRate(1e-3), "1e-3");
  assert.equal(formatLearningRate(1.5e-4), "1.5e-4");
});

Deno.test("comparisonPlot: titled from the data, each run labelled with its learning rate", () => {
  const s = settingsOf([
    "--model=config/models/llama-tiny",
    "--data-path=data/corpus/brown-bytes/train",
    "--steps=3",
    "--batch=4",
    "--sequence-length=64",
  ]);
  const runs: RunCurve[] = [
    { optimizer: "adamw", losses: [6, 5, 4], evalLoss: 4.5, seconds: 1 },
    { optimizer: "distro", losses: [6, 5.5, 5], evalLoss: 5.25, seconds: 2 },
  ];
  const bytes = { distro: 5_000, adamw: 560_000, parameters: 140_000 };
  const plot = comparisonPlot(s, runs, bytes);
  assert.equal(
    plot.title,
    "DisTrO (chunk 64, top-8, 1-bit) vs AdamW: llama-tiny, 140K parameters",
  );
  assert.equal(
    plot.subtitle,
    "data/corpus/brown-bytes/train: 3 steps × 4 × 64 tokens = 768 tokens per optimizer",
  );
  assert.deepEqual(plot.runs.map((r) => [r.label, r.bytesPerStep]), [
    ["AdamW (lr 1e-3)", 560_000],
    ["DisTrO (lr 3e-3)", 5_000],
  ]);
  assert.deepEqual(plot.headings, [
    "Training loss by step",
    "Training loss by bytes sent: DisTrO sends 112× fewer bytes per step than AdamW",
  ]);
  const svg = lossPlotSvg(plot);
  assert.match(svg, /AdamW \(lr 1e-3\): held-out loss 4\.500/);
  assert.match(svg, /DisTrO \(lr 3e-3\): compressed result, 5 kB per step/);
  const summary = comparisonSummary(s, runs, bytes);
  assert.equal(summary.tokens, 768);
  assert.equal(summary.distro.bytes_sent, 15_000);
  assert.deepEqual(summary.adamw.losses, [6, 5, 4]);
  assert.equal(summary.adamw_bytes_per_distro_byte, 112);
});
