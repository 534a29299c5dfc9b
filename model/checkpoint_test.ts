import assert from "node:assert/strict";
import { parseLlamaConfig } from "./hf_config.ts";
import { initParams, llamaParamLayout } from "./params.ts";
import {
  parseShardIndex,
  readModelDir,
  weightsFromSafetensors,
  weightsToSafetensors,
  writeModelDir,
} from "./checkpoint.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
  SafetensorsError,
  writeSafetensors,
} from "./safetensors.ts";

const CONFIG = parseLlamaConfig({
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  vocab_size: 40,
  max_position_embeddings: 16,
  rms_norm_eps: 1e-6,
});
const LAYOUT = llamaParamLayout(CONFIG);

Deno.test("model folder round trip keeps config and f32 weights bit for bit", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const weights = initParams(LAYOUT, CONFIG, 3);
    await writeModelDir(dir, { config: CONFIG, layout: LAYOUT, weights });
    const back = await readModelDir(dir);
    assert.deepEqual(back.config, CONFIG);
    assert.deepEqual(back.weights, weights);
    await Deno.remove(`${dir}/model.safetensors`);
    assert.equal((await readModelDir(dir)).weights, null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bf16 checkpoint: save → load → save is bit-exact", () => {
  const weights = initParams(LAYOUT, CONFIG, 5);
  const bytes = encodeSafetensors(weightsToSafetensors(LAYOUT, weights, "BF16"));
  const loaded = weightsFromSafetensors(LAYOUT, decodeSafetensors(bytes));
  assert.deepEqual(encodeSafetensors(weightsToSafetensors(LAYOUT, loaded, "BF16")), bytes);
  assert.notDeepEqual(loaded, weights); // bf16 really rounded
});

Deno.test("loading rejects wrong shapes, missing and unexpected tensors by name", () => {
  const file = weightsToSafetensors(LAYOUT, initParams(LAYOUT, CONFIG, 1), "F32");
  const wrong = structuredClone(file);
  const head = wrong.tensors.get("lm_head.weight")!;
  wrong.tensors.set("lm_head.weight", { ...head, shape: [40 * 2, 16] });
  assert.throws(
    () => weightsFromSafetensors(LAYOUT, wrong, { file: "m.safetensors" }),
    (e: unknown) =>
      e instanceof SafetensorsError && e.tensor === "lm_head.weight" &&
      e.message ===
        'Cannot load "m.safetensors": tensor "lm_head.weight" has shape [80, 16], expected [40, 32]',
  );
  const missing = structuredClone(file);
  missing.tensors.delete("model.norm.weight");
  assert.throws(() => weightsFromSafetensors(LAYOUT, missing), /"model.norm.weight" is missing/);
  const extra = structuredClone(file);
  extra.tensors.set("model.layers.1.mlp.up_proj.weight", head);
  assert.throws(() => weightsFromSafetensors(LAYOUT, extra), /unexpected tensor "model.layers.1/);
});

Deno.test("sharded checkpoints load through model.safetensors.index.json", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const weights = initParams(LAYOUT, CONFIG, 9);
    await writeModelDir(dir, { config: CONFIG, layout: LAYOUT, weights });
    const all = weightsToSafetensors(LAYOUT, weights, "F32");
    await Deno.remove(`${dir}/model.safetensors`);
    // Two shards: the embedding alone, everything else in the second.
    const names = [...all.tensors.keys()];
    const shardOf = (n: string) => n === names[0] ? "model-1.safetensors" : "model-2.safetensors";
    for (const shard of ["model-1.safetensors", "model-2.safetensors"]) {
      const tensors = new Map([...all.tensors].filter(([n]) => shardOf(n) === shard));
      await writeSafetensors(`${dir}/${shard}`, { tensors, metadata: null });
    }
    const index = {
      metadata: {},
      weight_map: Object.fromEntries(names.map((n) => [n, shardOf(n)])),
    };
    await Deno.writeTextFile(`${dir}/model.safetensors.index.json`, JSON.stringify(index));
    assert.deepEqual((await readModelDir(dir)).weights, weights);
    // A tensor the index assigns elsewhere is rejected, naming it.
    index.weight_map[names[0]] = "model-2.safetensors";
    await Deno.writeTextFile(`${dir}/model.safetensors.index.json`, JSON.stringify(index));
    await assert.rejects(
      () => readModelDir(dir),
      (e: unknown) => e instanceof SafetensorsError && e.tensor === names[0],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  assert.throws(
    () => parseShardIndex({ weight_map: { a: "../x.safetensors" } }),
    /tensor "a" maps/,
  );
  assert.throws(() => parseShardIndex({}), /"weight_map" is not an object/);
});
