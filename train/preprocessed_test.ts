/**
 * Training on Psyche's Preprocessed parquet rows: their labels, position ids and packed
 * documents change what is trained, and the run stays bit-for-bit deterministic.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { jsonLogger } from "./log.ts";
import { runTraining } from "./trainer.ts";
import { initParams, LlamaModel, llamaParamLayout, readLlamaConfig } from "../model/mod.ts";
import { PreprocessedDataProvider } from "../data/mod.ts";
import { preprocessedParquet, type PreprocessedRows } from "../data/testing/parquet.ts";
import { AdamW } from "../optimizer/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const TINY = new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname;
const T = 8;

/** Two packed rows: documents of 5 and 3 tokens (prompts of 2 and 1 masked), then 2 and 6. */
function packedRows(vocab: number): Required<PreprocessedRows> {
  const inputs = [0, 1].map((r) =>
    Array.from({ length: T }, (_, p) => (r * 97 + p * 31 + 5) % vocab)
  );
  return {
    inputs,
    labels: [
      inputs[0].map((t, p) => p < 2 || p === 5 ? -100 : t),
      inputs[1].map((t, p) => p === 0 || p === 2 ? -100 : t),
    ],
    position_ids: [[0, 1, 2, 3, 4, 0, 1, 2], [0, 1, 0, 1, 2, 3, 4, 5]],
    sequence_lengths: [[5, 3], [2, 6]],
  };
}

/** Trains `steps` steps on the dataset `rows` from a fixed start; the losses and the weights. */
async function train(rt: GpuRuntime, rows: PreprocessedRows, steps = 3) {
  const config = await readLlamaConfig(TINY);
  const layout = llamaParamLayout(config);
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(join(dir, "train.parquet"), preprocessedParquet(rows));
    const data = await PreprocessedDataProvider.open(dir, {
      seqLen: T,
      vocabSize: config.vocabSize,
    });
    try {
      using model = new LlamaModel(rt, {
        config,
        layout,
        weights: initParams(layout, config, 3),
        microBatch: 1,
        seqLen: T,
        slots: 2,
      });
      using optimizer = new AdamW(rt, {
        size: layout.totalSize,
        config: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 },
      });
      const { losses } = await runTraining(
        { rt, model, optimizer, data, logger: jsonLogger(() => {}) },
        {
          steps,
          totalBatch: 2,
          microBatch: 1,
          schedule: { kind: "Constant", baseLr: 1e-2, warmupSteps: 0, warmupInitLr: 0 },
          clipGradients: true,
        },
      );
      return { losses, params: await model.readParams(), initial: initParams(layout, config, 3) };
    } finally {
      await data.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("Preprocessed rows train with their labels, positions and documents, deterministically", async () => {
  using rt = await GpuRuntime.create();
  const vocab = (await readLlamaConfig(TINY)).vocabSize;
  const rows = packedRows(vocab);
  const first = await train(rt, rows);
  const second = await train(rt, rows);
  assert.deepEqual(first.losses, second.losses);
  assert.deepEqual(first.params, second.params);
  // Each column alone changes the run: inputs only, then inputs with one column.
  const plain = await train(rt, { inputs: rows.inputs });
  assert.notEqual(plain.losses[0], first.losses[0]);
  for (const column of ["labels", "position_ids", "sequence_lengths"] as const) {
    const one = await train(rt, { inputs: rows.inputs, [column]: rows[column] }, 1);
    assert.notEqual(one.losses[0], plain.losses[0], `${column} change nothing`);
  }
});

Deno.test("Preprocessed rows with every label masked: zero loss, weights untouched", async () => {
  using rt = await GpuRuntime.create();
  const vocab = (await readLlamaConfig(TINY)).vocabSize;
  const { inputs } = packedRows(vocab);
  const masked = await train(rt, { inputs, labels: inputs.map((r) => r.map(() => -100)) }, 2);
  assert.deepEqual(masked.losses, [0, 0]);
  assert.deepEqual(masked.params, masked.initial);
});
