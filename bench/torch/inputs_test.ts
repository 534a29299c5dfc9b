import assert from "node:assert/strict";
import {
  corpusBatch,
  decodeTokenFile,
  encodeTokenFile,
  foldTokens,
  seededRangeReader,
  writeSeededModel,
} from "./inputs.ts";
import {
  initParams,
  llamaParamLayout,
  parseLlamaConfig,
  readLlamaConfig,
  readModelDir,
  writeModelDir,
} from "../../model/mod.ts";

const CONFIG = parseLlamaConfig({
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  vocab_size: 50,
  max_position_embeddings: 32,
  rms_norm_eps: 1e-5,
});

Deno.test("writeSeededModel writes an HF folder holding exactly the seeded init", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeSeededModel(`${dir}/m`, CONFIG, 7);
    const back = await readModelDir(`${dir}/m`);
    assert.deepEqual(back.config, CONFIG);
    const layout = llamaParamLayout(CONFIG);
    assert.deepEqual(back.weights, initParams(layout, CONFIG, 7));
    assert.notDeepEqual(back.weights, initParams(layout, CONFIG, 8));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("foldTokens keeps ids inside the vocabulary and wraps the others", () => {
  assert.deepEqual(
    foldTokens(new Uint32Array([0, 49, 50, 31999]), 50),
    new Uint32Array([0, 49, 0, 49]),
  );
  assert.throws(() => foldTokens(new Uint32Array(1), 0), /vocabSize must be a positive integer/);
});

Deno.test("corpusBatch reads the first sequences in file order, folded into the vocabulary", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // 3 sequences of 4 two-byte tokens: ids 100..111.
    const ids = Uint16Array.from({ length: 12 }, (_, i) => 100 + i);
    await Deno.writeFile(`${dir}/000.ds`, new Uint8Array(ids.buffer));
    const batch = await corpusBatch(dir, { batch: 2, seqLen: 4, vocabSize: 50 });
    assert.deepEqual(batch, Uint32Array.from({ length: 8 }, (_, i) => (100 + i) % 50));
    await assert.rejects(
      corpusBatch(dir, { batch: 4, seqLen: 4, vocabSize: 50 }),
      /holds 3 sequences of 4 tokens, the batch needs 4/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("corpusBatch reads the bundled corpus", async () => {
  const url = new URL("../../data/corpus/brown/train", import.meta.url);
  const batch = await corpusBatch(url.pathname, { batch: 2, seqLen: 16, vocabSize: 32000 });
  assert.equal(batch.length, 32);
  assert.ok(batch.every((t) => t < 32000));
  assert.ok(new Set(batch).size > 8, "real text has varied tokens");
});

Deno.test("token files are little-endian uint32 and round-trip", () => {
  const tokens = new Uint32Array([1, 256, 70000, 2 ** 32 - 1, 0, 5]);
  const bytes = encodeTokenFile(tokens);
  assert.deepEqual([...bytes.subarray(4, 8)], [0, 1, 0, 0]);
  assert.deepEqual(decodeTokenFile(bytes, { batch: 2, seqLen: 3 }), tokens);
  assert.throws(
    () => decodeTokenFile(bytes, { batch: 2, seqLen: 4 }),
    /token file has 24 bytes, expected 32 \(2 x 4 uint32 ids\)/,
  );
});

Deno.test("writeSeededModel streams the same bytes as writing initParams whole (llama-20m)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const config = await readLlamaConfig(
      new URL("../../config/models/llama-20m/config.json", import.meta.url).pathname,
    );
    const layout = llamaParamLayout(config);
    await writeModelDir(`${dir}/whole`, { config, layout, weights: initParams(layout, config, 1) });
    await writeSeededModel(`${dir}/streamed`, config, 1);
    for (const file of ["config.json", "model.safetensors"]) {
      const [a, b] = await Promise.all(
        ["whole", "streamed"].map((d) => Deno.readFile(`${dir}/${d}/${file}`)),
      );
      assert.equal(a.length, b.length, file);
      assert.ok(a.every((x, i) => x === b[i]), `${file} differs`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("seededRangeReader gives each range of the seeded init, chunk boundaries anywhere", async () => {
  const layout = llamaParamLayout(CONFIG);
  const whole = initParams(layout, CONFIG, 4);
  // Chunks of 5 floats: ranges start inside tensors and end before their ends.
  const read = seededRangeReader(layout, CONFIG, 4, 5);
  for (const e of layout.entries) {
    for (let start = 0; start < e.size; start += 5) {
      const count = Math.min(5, e.size - start);
      const got = await read(e.offset + start, count);
      assert.deepEqual(got, whole.subarray(e.offset + start, e.offset + start + count), e.name);
    }
  }
  await assert.rejects(read(0, 6), /a range of 6 floats is over the chunk of 5/);
  // Written with those chunks, the file holds the same init.
  const dir = await Deno.makeTempDir();
  try {
    await writeSeededModel(dir, CONFIG, 4, { chunkFloats: 5 });
    assert.deepEqual((await readModelDir(dir)).weights, whole);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
