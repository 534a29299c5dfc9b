import assert from "node:assert/strict";
import { llamaConfigToHf, parseLlamaConfig } from "./hf_config.ts";
import { initParams, llamaParamLayout } from "./params.ts";
import { formatShardIndex, parseShardIndex } from "./shards.ts";
import {
  readModelDir,
  weightsFromSafetensors,
  weightsToSafetensors,
  writeDirAtomically,
  writeModelDir,
} from "./checkpoint.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
  type FloatDtype,
  readSafetensors,
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
    const reports: [number, number][] = [];
    const back = await readModelDir(dir, { onProgress: (d, t) => reports.push([d, t]) });
    assert.deepEqual(back.config, CONFIG);
    assert.deepEqual(back.weights, weights);
    // A tensor at a time, each report further on, the last at the file's data bytes.
    assert.equal(reports.length, LAYOUT.entries.length);
    assert.ok(reports.every(([d], i) => i === 0 || d > reports[i - 1][0]));
    assert.deepEqual(reports.at(-1), [LAYOUT.paramCount * 4, LAYOUT.paramCount * 4]);
    await Deno.remove(`${dir}/model.safetensors`);
    assert.equal((await readModelDir(dir)).weights, null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tied embeddings: HF-style files without lm_head.weight load and save, sharded too", async () => {
  const tied = { ...CONFIG, tieWordEmbeddings: true };
  const layout = llamaParamLayout(tied);
  const dir = await Deno.makeTempDir();
  try {
    // A file as HF writes a tied model: the untied tensors minus lm_head.weight.
    const untied = weightsToSafetensors(LAYOUT, initParams(LAYOUT, CONFIG, 4), "BF16");
    untied.tensors.delete("lm_head.weight");
    await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify(llamaConfigToHf(tied)));
    await writeSafetensors(`${dir}/model.safetensors`, untied);
    const loaded = await readModelDir(dir);
    assert.equal(loaded.config.tieWordEmbeddings, true);
    assert.equal(loaded.layout.byName.has("lm_head.weight"), false);
    for (const s of [undefined, 16384]) {
      await writeModelDir(dir, { ...loaded, weights: loaded.weights!, maxShardBytes: s });
      const back = await readModelDir(dir);
      assert.deepEqual(back.weights, loaded.weights);
      assert.equal(
        JSON.parse(await Deno.readTextFile(`${dir}/config.json`)).tie_word_embeddings,
        true,
      );
    }
    const single = await readSafetensors(`${dir}/model.safetensors`).catch(() => null);
    assert.equal(single?.tensors.has("lm_head.weight") ?? false, false);
    // A tied config with a separate head in the file is refused, saying why.
    const withHead = weightsToSafetensors(LAYOUT, initParams(LAYOUT, CONFIG, 4), "F32");
    assert.throws(
      () => weightsFromSafetensors(layout, withHead),
      (e) => e instanceof SafetensorsError && /ties the LM head/.test(e.message),
    );
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

/** Runs `body` in a fresh temporary folder, removed afterwards. */
async function inTempDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function filesIn(dir: string): Promise<string[]> {
  const out = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

const SHARDS_OF_4 = [1, 2, 3, 4].map((k) => `model-0000${k}-of-00004.safetensors`);

Deno.test("a tiny max shard size splits the save; shards round-trip bit for bit", async () => {
  await inTempDir(async (dir) => {
    const weights = initParams(LAYOUT, CONFIG, 11);
    // Tensors: embed 5120 B, then the layer's 128..6144 B, norm 128 B, head 5120 B.
    await writeModelDir(dir, { config: CONFIG, layout: LAYOUT, weights, maxShardBytes: 16384 });
    assert.deepEqual(await filesIn(dir), [
      "config.json",
      ...SHARDS_OF_4,
      "model.safetensors.index.json",
    ]);
    const indexText = await Deno.readTextFile(`${dir}/model.safetensors.index.json`);
    const index = parseShardIndex(JSON.parse(indexText));
    assert.equal(index.totalSize, LAYOUT.paramCount * 4);
    assert.equal(index.weightMap.size, LAYOUT.entries.length);
    assert.equal(indexText, formatShardIndex(index)); // sorted keys, 2-space indent, newline
    for (const shard of SHARDS_OF_4) {
      const file = await readSafetensors(`${dir}/${shard}`);
      assert.ok(file.tensors.size > 0);
      assert.deepEqual(file.metadata, { format: "pt" });
    }
    // Read a tensor at a time across the shards, saying how far after each.
    const reports: [number, number][] = [];
    const read = await readModelDir(dir, { onProgress: (d, t) => reports.push([d, t]) });
    assert.deepEqual(read.weights, weights);
    assert.equal(reports.length, LAYOUT.entries.length);
    assert.deepEqual(reports.at(-1), [LAYOUT.paramCount * 4, LAYOUT.paramCount * 4]);

    // bf16 shards: load → save again gives the same bytes, file for file.
    await writeModelDir(dir, {
      config: CONFIG,
      layout: LAYOUT,
      weights,
      dtype: "BF16",
      maxShardBytes: 8192,
    });
    const first = await filesIn(dir);
    const bytes = await Promise.all(first.map((f) => Deno.readFile(`${dir}/${f}`)));
    const loaded = await readModelDir(dir);
    assert.notDeepEqual(loaded.weights, weights);
    await writeModelDir(dir, {
      ...loaded,
      weights: loaded.weights!,
      dtype: "BF16",
      maxShardBytes: 8192,
    });
    assert.deepEqual(await filesIn(dir), first);
    for (const [i, f] of first.entries()) {
      assert.deepEqual(await Deno.readFile(`${dir}/${f}`), bytes[i], f);
    }

    // Saving unsharded over a sharded folder removes the shards and the index, and back.
    await writeModelDir(dir, { config: CONFIG, layout: LAYOUT, weights });
    assert.deepEqual(await filesIn(dir), ["config.json", "model.safetensors"]);
    await writeModelDir(dir, { config: CONFIG, layout: LAYOUT, weights, maxShardBytes: 16384 });
    assert.deepEqual(await filesIn(dir), [
      "config.json",
      ...SHARDS_OF_4,
      "model.safetensors.index.json",
    ]);
    assert.deepEqual((await readModelDir(dir)).weights, weights);
  });
});

Deno.test("config.json's torch_dtype names the dtype the weights are saved in", async () => {
  await inTempDir(async (dir) => {
    const weights = initParams(LAYOUT, CONFIG, 2);
    for (const [dtype, torch] of [["F32", "float32"], ["BF16", "bfloat16"], ["F16", "float16"]]) {
      await writeModelDir(dir, {
        config: CONFIG,
        layout: LAYOUT,
        weights,
        dtype: dtype as FloatDtype,
      });
      const config = JSON.parse(await Deno.readTextFile(`${dir}/config.json`));
      assert.equal(config.torch_dtype, torch);
      const file = await readSafetensors(`${dir}/model.safetensors`);
      assert.ok([...file.tensors.values()].every((t) => t.dtype === dtype));
      // 16-bit weights load into the f32 masters exactly (every 16-bit value is an f32).
      const back = (await readModelDir(dir)).weights!;
      const stored = weightsToSafetensors(LAYOUT, back, dtype as FloatDtype);
      assert.deepEqual(
        encodeSafetensors(stored),
        await Deno.readFile(`${dir}/model.safetensors`),
      );
    }
  });
});

/** The tiny config's tensors in two shards as HF would write them: layers, then the rest. */
const HF_INDEX = `{
  "metadata": {
    "total_size": 45440
  },
  "weight_map": {
    "lm_head.weight": "model-00002-of-00002.safetensors",
    "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.input_layernorm.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.mlp.down_proj.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.mlp.gate_proj.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.post_attention_layernorm.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.self_attn.k_proj.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.self_attn.o_proj.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.self_attn.q_proj.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.self_attn.v_proj.weight": "model-00001-of-00002.safetensors",
    "model.norm.weight": "model-00002-of-00002.safetensors"
  }
}
`;

/** Writes the tiny model as config.json + the two shards of {@link HF_INDEX} (bf16 or f32). */
async function writeHandMadeShards(
  dir: string,
  weights: Float32Array,
  dtype: FloatDtype,
): Promise<void> {
  await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify(llamaConfigToHf(CONFIG)));
  const all = weightsToSafetensors(LAYOUT, weights, dtype);
  const map = JSON.parse(HF_INDEX).weight_map as Record<string, string>;
  for (const shard of new Set(Object.values(map))) {
    const tensors = new Map([...all.tensors].filter(([n]) => map[n] === shard));
    await writeSafetensors(`${dir}/${shard}`, { tensors, metadata: { format: "pt" } });
  }
  const index = dtype === "F32" ? HF_INDEX : HF_INDEX.replace("45440", "22720");
  await Deno.writeTextFile(`${dir}/model.safetensors.index.json`, index);
}

Deno.test("a hand-made index in HF's exact JSON shape loads (f32 and bf16 shards)", async () => {
  await inTempDir(async (dir) => {
    const weights = initParams(LAYOUT, CONFIG, 9);
    await writeHandMadeShards(dir, weights, "F32");
    assert.deepEqual((await readModelDir(dir)).weights, weights);
    await writeHandMadeShards(dir, weights, "BF16");
    const bf16 = weightsFromSafetensors(
      LAYOUT,
      decodeSafetensors(encodeSafetensors(weightsToSafetensors(LAYOUT, weights, "BF16"))),
    );
    assert.deepEqual((await readModelDir(dir)).weights, bf16);
  });
});

Deno.test("broken shard sets are refused, naming the file and the tensor", async () => {
  const S1 = "model-00001-of-00002.safetensors", S2 = "model-00002-of-00002.safetensors";
  const weights = initParams(LAYOUT, CONFIG, 4);
  const refused = async (
    breakIt: (dir: string) => Promise<void>,
    tensor: string | null,
    message: (dir: string) => string,
  ) => {
    await inTempDir(async (dir) => {
      await writeHandMadeShards(dir, weights, "F32");
      await breakIt(dir);
      await assert.rejects(() => readModelDir(dir), (e: unknown) => {
        assert.ok(e instanceof SafetensorsError, String(e));
        assert.equal(e.tensor, tensor);
        assert.equal(e.message, message(dir));
        return true;
      });
    });
  };
  // A shard the index names is missing.
  await refused(
    (dir) => Deno.remove(`${dir}/${S2}`),
    "lm_head.weight",
    (dir) =>
      `Cannot load "${dir}/${S2}": the file is missing (model.safetensors.index.json puts ` +
      `"lm_head.weight" in it)`,
  );
  // A truncated shard: its header promises more bytes than the file has (caught from the
  // header alone, before any data is read).
  await refused(
    async (dir) => {
      const bytes = await Deno.readFile(`${dir}/${S1}`);
      await Deno.writeFile(`${dir}/${S1}`, bytes.subarray(0, bytes.length - 100));
    },
    "model.layers.0.mlp.down_proj.weight",
    (dir) =>
      `Cannot load "${dir}/${S1}": tensor "model.layers.0.mlp.down_proj.weight" data_offsets ` +
      `[34048, 40192] lie outside the 40092 data bytes`,
  );
  // A needed tensor the index does not map.
  await refused(
    async (dir) => {
      const raw = JSON.parse(HF_INDEX);
      delete raw.weight_map["model.norm.weight"];
      raw.metadata.total_size -= 128;
      await Deno.writeTextFile(`${dir}/model.safetensors.index.json`, JSON.stringify(raw));
      const file = await readSafetensors(`${dir}/${S2}`);
      file.tensors.delete("model.norm.weight");
      await writeSafetensors(`${dir}/${S2}`, file);
    },
    "model.norm.weight",
    (dir) =>
      `Cannot load "${dir}/model.safetensors.index.json": tensor "model.norm.weight" is ` +
      `missing from "weight_map"`,
  );
  // The same tensor in two files.
  await refused(
    async (dir) => {
      const file = await readSafetensors(`${dir}/${S2}`);
      const embed = (await readSafetensors(`${dir}/${S1}`)).tensors.get(
        "model.embed_tokens.weight",
      )!;
      file.tensors.set("model.embed_tokens.weight", embed);
      await writeSafetensors(`${dir}/${S2}`, file);
    },
    "model.embed_tokens.weight",
    (dir) =>
      `Cannot load "${dir}/${S2}": tensor "model.embed_tokens.weight" is also stored here, ` +
      `but model.safetensors.index.json assigns it to "${S1}"`,
  );
  // A shard whose tensor has the wrong shape.
  await refused(
    async (dir) => {
      const file = await readSafetensors(`${dir}/${S2}`);
      const head = file.tensors.get("lm_head.weight")!;
      file.tensors.set("lm_head.weight", { ...head, shape: [32, 40] });
      await writeSafetensors(`${dir}/${S2}`, file);
    },
    "lm_head.weight",
    (dir) =>
      `Cannot load "${dir}/${S2}": tensor "lm_head.weight" has shape [32, 40], expected [40, 32]`,
  );
  // A wrong total_size.
  await refused(
    (dir) =>
      Deno.writeTextFile(
        `${dir}/model.safetensors.index.json`,
        HF_INDEX.replace("45440", "45444"),
      ),
    null,
    (dir) =>
      `Cannot load "${dir}/model.safetensors.index.json": "metadata.total_size" is 45444, but ` +
      `the shards' tensors hold 45440 bytes`,
  );
  // Shards without their index (an interrupted save or download).
  await refused(
    (dir) => Deno.remove(`${dir}/model.safetensors.index.json`),
    null,
    (dir) =>
      `Cannot load "${dir}": it holds ${S1} but no model.safetensors.index.json (an ` +
      `interrupted save or download?); restore the index or remove the shards`,
  );
});

Deno.test("writeDirAtomically replaces a folder whole, and a failed fill leaves the old one", async () => {
  const root = await Deno.makeTempDir();
  const dir = `${root}/ck`;
  const names = () => [...Deno.readDirSync(root)].map((e) => e.name).sort();
  try {
    await writeDirAtomically(dir, (tmp) => Deno.writeTextFile(`${tmp}/a`, "1"));
    await writeDirAtomically(dir, (tmp) => Deno.writeTextFile(`${tmp}/b`, "2"));
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["b"]);
    await assert.rejects(
      () =>
        writeDirAtomically(dir, async (tmp) => {
          await Deno.writeTextFile(`${tmp}/half`, "");
          throw new Error("disk full");
        }),
      /disk full/,
    );
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["b"]);
    assert.deepEqual(names(), ["ck"]); // no temporary folder left behind
    // A save cut off between its renames: the error points at the complete previous folder.
    await Deno.rename(dir, `${dir}.previous`);
    await assert.rejects(() => readModelDir(dir), /ck\.previous" holds the checkpoint it replaced/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
