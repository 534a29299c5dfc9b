import assert from "node:assert/strict";
import { parseCompareArgs } from "./cli.ts";
import { MemoryRefusalError, runComparison } from "./compare.ts";
import { runEngineSteps } from "./engine_step.ts";
import { corpusBatch, encodeTokenFile, writeSeededModel } from "./inputs.ts";
import { compareReports } from "./report.ts";
import {
  findTorchPython,
  pythonCandidates,
  runTorchSteps,
  SCRIPT_PATH,
  TorchRunError,
  TorchUnavailableError,
} from "./torch_runner.ts";
import { initParams, llamaParamLayout, readLlamaConfig, writeModelDir } from "../../model/mod.ts";
import { smallLlamaConfig } from "../../model/testing/fixtures.ts";
import { GpuRuntime } from "../../shaders/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const TINY = `${ROOT}config/models/llama-tiny`;
const CORPUS = `${ROOT}data/corpus/brown/train`;

/** A Python with torch, or why there is none (CI has none: the torch tests are then skipped). */
const torchPython = await findTorchPython(pythonCandidates(undefined, Deno.env.get("PYTHON")))
  .then((p) => p.python, (e: TorchUnavailableError) => e);
const noTorch = typeof torchPython !== "string";

function options(extra: string[]) {
  const o = parseCompareArgs([`--config=${TINY}`, `--data=${CORPUS}`, ...extra]);
  assert.ok(o !== "help");
  return o;
}

Deno.test("runComparison without torch still runs the engine, keeps the inputs and says what is missing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const lines: string[] = [];
    const run = await runComparison(
      options([
        "--batch=2",
        "--seq-len=16",
        "--warmup=1",
        "--steps=1",
        "--python=/nonexistent/py",
        `--work-dir=${dir}`,
      ]),
      { write: (l) => lines.push(l) },
    );
    assert.equal(run.torch, null);
    assert.equal(run.comparison, null);
    assert.ok(run.unavailable instanceof TorchUnavailableError);
    assert.deepEqual(run.unavailable.tried, [{ python: "/nonexistent/py", reason: "not found" }]);
    assert.equal(run.ours.losses.length, 2);
    // Seeded init on a 512-token vocabulary: the first loss is near ln 512.
    assert.ok(Math.abs(run.ours.losses[0] - Math.log(512)) < 0.1, `${run.ours.losses[0]}`);
    assert.match(lines[0], /llama-tiny: 0\.14M params, batch 2 x 16 tokens/);
    assert.match(lines.at(-1)!, /^engine only: loss at step 0 /);
    // Our side ran in its own process, which reported its peak and exited before any PyTorch.
    assert.match(lines.find((l) => l.startsWith("engine:"))!, /, peak RSS [\d.]+ MiB$/);
    assert.match(lines[1], /^memory, ours: expected peak [\d.]+ MiB \(/);
    assert.equal((await Deno.stat(`${dir}/tokens.u32`)).size, 2 * 16 * 4);
    assert.ok((await Deno.stat(`${dir}/model/model.safetensors`)).isFile);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runComparison refuses our side before it starts when MemAvailable is below its peak", async () => {
  const lines: string[] = [];
  const run = runComparison(
    options(["--batch=2", "--seq-len=16", "--warmup=1", "--steps=1", "--python=/nonexistent/py"]),
    { write: (l) => lines.push(l), available: () => 100 * 2 ** 20 },
  );
  await assert.rejects(
    run,
    (e) =>
      e instanceof MemoryRefusalError && e.plan.side === "ours" &&
      /^ours would need about [\d.]+ MiB at its peak, but MemAvailable is 100 MiB/.test(e.message),
  );
  assert.match(
    lines.at(-1)!,
    /^memory, ours: expected peak [\d.]+ MiB \(.*\); MemAvailable 100 MiB$/,
  );
  assert.ok(!lines.some((l) => l.startsWith("engine:")), "our engine did not run");
});

Deno.test({
  name: "runComparison refuses PyTorch after our side when MemAvailable has fallen below its peak",
  ignore: noTorch,
  async fn() {
    const lines: string[] = [];
    const readings = [2 ** 40, 2 ** 20]; // plenty for ours, then 1 MiB
    await assert.rejects(
      runComparison(
        options([
          "--batch=2",
          "--seq-len=16",
          "--warmup=1",
          "--steps=1",
          `--python=${torchPython}`,
        ]),
        { write: (l) => lines.push(l), available: () => readings.shift()! },
      ),
      (e) => e instanceof MemoryRefusalError && e.plan.side === "PyTorch",
    );
    assert.ok(lines.some((l) => l.startsWith("engine:")), "our engine ran first");
    assert.match(lines.at(-1)!, /^memory, PyTorch: expected peak .*; MemAvailable 1\.00 MiB$/);
  },
});

Deno.test({
  name: "llama_step.py reads HF shards and a tied head to the same figures as one file",
  ignore: noTorch,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const config = smallLlamaConfig({ tie_word_embeddings: true });
      const layout = llamaParamLayout(config);
      const weights = initParams(layout, config, 3);
      await writeModelDir(`${dir}/one`, { config, layout, weights });
      await writeModelDir(`${dir}/shards`, { config, layout, weights, maxShardBytes: 8192 });
      const shards = [...Deno.readDirSync(`${dir}/shards`)].filter((e) => /^model-/.test(e.name));
      assert.ok(shards.length > 2, `${shards.length} shards`);
      const tokens = Uint32Array.from({ length: 16 }, (_, i) => (i * 7 + 1) % config.vocabSize);
      await Deno.writeFile(`${dir}/tokens.u32`, encodeTokenFile(tokens));
      const shape = { batch: 2, seqLen: 8, warmup: 1, steps: 1, lr: 1e-3, device: "cpu" } as const;
      const run = (model: string) =>
        runTorchSteps(torchPython as string, {
          ...shape,
          modelDir: `${dir}/${model}`,
          tokensFile: `${dir}/tokens.u32`,
        });
      const one = await run("one"), sharded = await run("shards");
      assert.deepEqual(sharded.losses, one.losses);
      assert.deepEqual(sharded.gradNorms0, one.gradNorms0);
      assert.ok(!("lm_head.weight" in one.gradNorms0), "the head is the embedding");
      assert.ok(one.peakRssBytes !== undefined && one.peakRssBytes > 2 ** 20);
      using rt = await GpuRuntime.create();
      const ours = await runEngineSteps(rt, { ...shape, modelDir: `${dir}/shards`, tokens });
      assert.ok(compareReports(ours, sharded).ok, "the engine agrees on the tied model");
      // A shard the index names but that is gone is named.
      const first = shards.map((e) => e.name).sort()[0];
      await Deno.remove(`${dir}/shards/${first}`);
      await assert.rejects(
        run("shards"),
        (e) => e instanceof TorchRunError && new RegExp(`cannot read ".*${first}"`).test(e.message),
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "PyTorch agrees with the engine on the tiny model (loss, gradient norms, last loss)",
  ignore: noTorch,
  async fn() {
    const run = await runComparison(
      options(["--batch=2", "--seq-len=32", "--warmup=1", "--steps=2", `--python=${torchPython}`]),
      { write: () => {} },
    );
    assert.ok(run.comparison !== null && run.torch !== null);
    for (const row of run.comparison.rows) {
      assert.ok(row.ok, `${row.quantity}: ${row.ours} vs ${row.torch} (${row.relDiff})`);
    }
    assert.equal(run.torch.engine, "pytorch-eager");
  },
});

Deno.test({
  name: "the comparison catches a wrong model: PyTorch with interleaved RoPE pairs fails it",
  ignore: noTorch,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const config = await readLlamaConfig(`${TINY}/config.json`);
      const layout = llamaParamLayout(config);
      const weights = initParams(layout, config, 1);
      const B = 2, T = 32;
      const tokens = await corpusBatch(CORPUS, {
        batch: B,
        seqLen: T,
        vocabSize: config.vocabSize,
      });
      await Deno.writeFile(`${dir}/tokens.u32`, encodeTokenFile(tokens));
      const source = await Deno.readTextFile(SCRIPT_PATH);
      const honest = "emb = torch.cat((angles, angles), dim=-1)";
      assert.ok(source.includes(honest));
      await Deno.writeTextFile(
        `${dir}/wrong.py`,
        source.replace(honest, "emb = angles.repeat_interleave(2, dim=-1)"),
      );
      const shape = { batch: B, seqLen: T, warmup: 1, steps: 1, lr: 1e-3 };
      using rt = await GpuRuntime.create();
      // BF16 and F16 weights too: both sides decode the same stored values.
      for (const dtype of ["F32", "BF16", "F16"] as const) {
        await writeModelDir(`${dir}/${dtype}`, { config, layout, weights, dtype });
        const ours = await runEngineSteps(rt, { ...shape, modelDir: `${dir}/${dtype}`, tokens });
        const io = {
          modelDir: `${dir}/${dtype}`,
          tokensFile: `${dir}/tokens.u32`,
          device: "cpu",
        } as const;
        const torch = await runTorchSteps(torchPython as string, { ...shape, ...io });
        assert.ok(compareReports(ours, torch).ok, `${dtype} weights disagree`);
        if (dtype !== "F32") continue;
        const wrong = await runTorchSteps(torchPython as string, { ...shape, ...io }, {
          script: `${dir}/wrong.py`,
        });
        const c = compareReports(ours, wrong);
        assert.equal(c.ok, false);
        assert.ok(!c.rows[2].ok, "the worst tensor's gradient norm is beyond tolerance");
      }
      // A token file of the wrong size is rejected with the sizes.
      await assert.rejects(
        runTorchSteps(torchPython as string, {
          ...shape,
          batch: 3,
          modelDir: `${dir}/F32`,
          tokensFile: `${dir}/tokens.u32`,
          device: "cpu",
        }),
        (e) =>
          e instanceof TorchRunError && /256 bytes, expected 384 \(3 x 32 uint32/.test(e.message),
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "llama_step.py names the file and key of a bad model folder",
  ignore: noTorch,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await writeSeededModel(dir, await readLlamaConfig(`${TINY}/config.json`), 1);
      await Deno.writeFile(`${dir}/tokens.u32`, encodeTokenFile(new Uint32Array(2 * 8)));
      const io = { modelDir: dir, tokensFile: `${dir}/tokens.u32`, device: "cpu" } as const;
      const shape = { batch: 2, seqLen: 8, warmup: 1, steps: 1, lr: 1e-3 };
      const fails = (pattern: RegExp) =>
        assert.rejects(
          runTorchSteps(torchPython as string, { ...shape, ...io }),
          (e) => e instanceof TorchRunError && e.code === 1 && pattern.test(e.message),
        );
      // Cut the weights short: the last tensor's byte range runs past the end of the body.
      const full = await Deno.readFile(`${dir}/model.safetensors`);
      await Deno.writeFile(`${dir}/model.safetensors`, full.subarray(0, full.length - 4));
      await fails(
        /model\.safetensors": tensor "[\w.]+" covers bytes \[\d+, \d+\) of a \d+-byte body/,
      );
      await Deno.writeFile(`${dir}/model.safetensors`, full);
      const raw = JSON.parse(await Deno.readTextFile(`${dir}/config.json`));
      await Deno.writeTextFile(
        `${dir}/config.json`,
        JSON.stringify({ ...raw, rope_scaling: { type: "linear", factor: 2 } }),
      );
      await fails(
        /config\.json": key "rope_scaling\.type" names rope type "linear", which is not supported/,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
