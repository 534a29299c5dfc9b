import assert from "node:assert/strict";
import { smallLlamaConfig } from "../../model/testing/fixtures.ts";
import { runEngineSteps, tensorNorms, tensorNormsStreamed } from "./engine_step.ts";
import { writeSeededModel } from "./inputs.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import {
  initParams,
  llamaParamLayout,
  paramView,
  readLlamaConfig,
  referenceLossAndGrad,
} from "../../model/mod.ts";

const CONFIG = smallLlamaConfig({ vocab_size: 61, rope_theta: 10000 });
const LAYOUT = llamaParamLayout(CONFIG);

Deno.test("tensorNorms gives each tensor's L2 norm by name and checks the length", () => {
  const flat = new Float32Array(LAYOUT.totalSize);
  paramView(LAYOUT, flat, "model.norm.weight").set([3, 4]);
  const norms = tensorNorms(LAYOUT, flat);
  assert.equal(Object.keys(norms).length, LAYOUT.entries.length);
  assert.equal(norms["model.norm.weight"], 5);
  assert.equal(norms["lm_head.weight"], 0);
  assert.throws(() => tensorNorms(LAYOUT, new Float32Array(3)), /expected \d+ floats, found 3/);
});

Deno.test("runEngineSteps: step 0's loss and gradient norms are the f64 reference's", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeSeededModel(dir, CONFIG, 3);
    const B = 2, T = 9;
    const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 37 + 5) % CONFIG.vocabSize);
    let now = 0;
    using rt = await GpuRuntime.create();
    const r = await runEngineSteps(rt, {
      modelDir: dir,
      tokens,
      batch: B,
      seqLen: T,
      warmup: 1,
      steps: 2,
      lr: 1e-3,
      clock: () => (now += 5), // every step takes 5 "ms"
    });
    const ref = referenceLossAndGrad(CONFIG, LAYOUT, initParams(LAYOUT, CONFIG, 3), {
      tokens,
      count: B,
      seqLen: T,
    });
    assert.equal(r.losses.length, 3);
    // f32 against f64 over a few hundred terms: relative error ~1e-6.
    assert.ok(Math.abs(r.losses[0] - ref.loss) < 1e-5 * ref.loss, `${r.losses[0]} vs ${ref.loss}`);
    assert.ok(r.losses[2] < r.losses[0], "AdamW steps on one batch lower its loss");
    const refNorms = tensorNorms(LAYOUT, Float32Array.from(ref.grads));
    for (const [name, want] of Object.entries(refNorms)) {
      const got = r.gradNorms0[name];
      assert.ok(Math.abs(got - want) <= 1e-4 * want + 1e-9, `${name}: ${got} vs ${want}`);
    }
    const total = Math.hypot(...Object.values(refNorms));
    assert.ok(Math.abs(r.gradNorm0 - total) < 1e-4 * total, `${r.gradNorm0} vs ${total}`);
    assert.deepEqual(r.stepMs, [5, 5]);
    assert.equal(r.medianStepMs, 5);
    assert.deepEqual([r.params, r.batch, r.seqLen], [LAYOUT.paramCount, B, T]);
    await assert.rejects(
      runEngineSteps(rt, {
        modelDir: dir,
        tokens,
        batch: B,
        seqLen: T,
        warmup: 0,
        steps: 1,
        lr: 1,
      }),
      /warmup must be >= 1/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tensorNormsStreamed sums each tensor in chunks to tensorNorms' bits", async () => {
  const flat = Float32Array.from({ length: LAYOUT.totalSize }, (_, i) => Math.sin(i) * (i % 7));
  const want = tensorNorms(LAYOUT, flat);
  for (const chunk of [1, 3, 64, 1 << 22]) {
    const reads: number[] = [];
    const got = await tensorNormsStreamed(LAYOUT, (start, count, visit) => {
      reads.push(count);
      visit(flat.slice(start, start + count));
      return Promise.resolve();
    }, chunk);
    assert.deepEqual(got, want, `chunks of ${chunk}`);
    assert.ok(Math.max(...reads) <= chunk);
  }
  await assert.rejects(
    tensorNormsStreamed(LAYOUT, (_s, _c, visit) => Promise.resolve(visit(new Float32Array(2))), 3),
    /asked for 3 floats of "model\.embed_tokens\.weight", got 2/,
  );
  await assert.rejects(tensorNormsStreamed(LAYOUT, () => Promise.resolve(), 0), /chunkFloats/);
});

Deno.test("runEngineSteps: streamed and whole loads of llama-20m give the same step-0 figures", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const config = await readLlamaConfig(
      new URL("../../config/models/llama-20m/config.json", import.meta.url).pathname,
    );
    await writeSeededModel(dir, config, 1);
    const B = 1, T = 16;
    const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 131 + 7) % config.vocabSize);
    using rt = await GpuRuntime.create();
    const run = (load: "streamed" | "whole") =>
      runEngineSteps(rt, {
        modelDir: dir,
        tokens,
        batch: B,
        seqLen: T,
        warmup: 1,
        steps: 1,
        lr: 1e-3,
        load,
      });
    const streamed = await run("streamed");
    const whole = await run("whole");
    assert.deepEqual(streamed.losses, whole.losses);
    assert.equal(streamed.gradNorm0, whole.gradNorm0);
    assert.deepEqual(streamed.gradNorms0, whole.gradNorms0);
    // Seeded init on a 32000-token vocabulary: the first loss is near ln 32000.
    assert.ok(Math.abs(streamed.losses[0] - Math.log(config.vocabSize)) < 0.1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
