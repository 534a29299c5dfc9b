import assert from "node:assert/strict";
import {
  engineDenoFlags,
  EngineRunError,
  parseEngineJob,
  parsePeakRss,
  runEngineProcess,
} from "./engine_process.ts";
import { runEngineSteps } from "./engine_step.ts";
import { encodeTokenFile, writeSeededModel } from "./inputs.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import { smallLlamaConfig } from "../../model/testing/fixtures.ts";

const JOB = {
  modelDir: "/m",
  tokensFile: "/t",
  batch: 2,
  seqLen: 8,
  warmup: 1,
  steps: 1,
  lr: 1e-3,
  recompute: false,
};

Deno.test("parseEngineJob reads a job and names the field that is wrong", () => {
  assert.deepEqual(parseEngineJob(JSON.stringify(JOB)), JOB);
  const tiled = { ...JOB, tiling: "8,8,16,16,8,vec4" };
  assert.deepEqual(parseEngineJob(JSON.stringify(tiled)), tiled);
  const bad: [unknown, RegExp][] = [
    [{ ...JOB, modelDir: "" }, /job field "modelDir" must be a path, found ""/],
    [{ ...JOB, seqLen: 1 }, /job field "seqLen" must be an integer >= 2, found 1/],
    [{ ...JOB, warmup: 0 }, /job field "warmup" must be an integer >= 1/],
    [{ ...JOB, batch: 1.5 }, /job field "batch" must be an integer/],
    [{ ...JOB, lr: -1 }, /job field "lr" must be a positive number, found -1/],
    [{ ...JOB, recompute: "yes" }, /job field "recompute" must be true or false/],
    [{ ...JOB, tiling: 4 }, /job field "tiling" must be a string/],
    [{ ...JOB, tiling: "4,4,x" }, /tiling "4,4,x": expected rows,cols/],
    [[1], /must be a JSON object/],
  ];
  for (const [job, message] of bad) {
    assert.throws(() => parseEngineJob(JSON.stringify(job)), message);
  }
  assert.throws(() => parseEngineJob("{"), /the job argument is not JSON/);
});

Deno.test("parsePeakRss reads VmHWM in bytes", () => {
  const status = "Name:\tdeno\nVmPeak:\t  900 kB\nVmHWM:\t  1536 kB\nVmRSS:\t  1024 kB\n";
  assert.equal(parsePeakRss(status), 1536 * 1024);
  assert.equal(parsePeakRss("Name:\tx\n"), null);
});

Deno.test("runEngineProcess: the child's figures are the in-process run's, with its peak RSS", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const config = smallLlamaConfig({ tie_word_embeddings: true });
    await writeSeededModel(`${dir}/model`, config, 2);
    const tokens = Uint32Array.from({ length: 2 * 8 }, (_, i) => (i * 11 + 3) % config.vocabSize);
    await Deno.writeFile(`${dir}/tokens.u32`, encodeTokenFile(tokens));
    const job = { ...JOB, modelDir: `${dir}/model`, tokensFile: `${dir}/tokens.u32` };
    const child = await runEngineProcess(job);
    let here;
    {
      using rt = await GpuRuntime.create();
      here = await runEngineSteps(rt, { ...job, tokens });
    }
    assert.deepEqual(child.losses, here.losses);
    assert.deepEqual(child.gradNorms0, here.gradNorms0);
    assert.equal(child.gradNorm0, here.gradNorm0);
    assert.ok(child.peakRssBytes !== undefined && child.peakRssBytes > 2 ** 20);
    // A token file of the wrong size: the child's error comes back with its status.
    await assert.rejects(
      runEngineProcess({ ...job, batch: 3 }),
      (e) =>
        e instanceof EngineRunError && e.code === 1 &&
        /token file has 64 bytes, expected 96/.test(e.message),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runEngineProcess --tiling: the tiled-vec4 kernel, one buffer or two, trains the scalar tiled kernel's bits", async () => {
  // Both tilings run every matmul of the step on the workgroup-tiled path, which adds each
  // output's products in K order: losses and gradient norms must agree bit for bit.
  const dir = await Deno.makeTempDir();
  try {
    const config = smallLlamaConfig({ tie_word_embeddings: false });
    await writeSeededModel(`${dir}/model`, config, 3);
    const tokens = Uint32Array.from({ length: 2 * 8 }, (_, i) => (i * 7 + 5) % config.vocabSize);
    await Deno.writeFile(`${dir}/tokens.u32`, encodeTokenFile(tokens));
    const job = { ...JOB, modelDir: `${dir}/model`, tokensFile: `${dir}/tokens.u32`, steps: 2 };
    const scalar = await runEngineProcess({ ...job, tiling: "4,4,16,16,16" });
    const vec4 = await runEngineProcess({ ...job, tiling: "8,8,8,8,8,vec4" });
    assert.match(vec4.deviceName, /matmul tiling 8,8,8,8,8,vec4$/);
    assert.deepEqual(vec4.losses, scalar.losses);
    assert.deepEqual(vec4.gradNorms0, scalar.gradNorms0);
    assert.equal(vec4.losses.length, 3);
    // Double-buffered in workgroup memory: the same FMAs in the same order.
    const double = await runEngineProcess({ ...job, tiling: "8,8,8,8,8,vec4,db" });
    assert.match(double.deviceName, /matmul tiling 8,8,8,8,8,vec4,db$/);
    assert.deepEqual(double.losses, scalar.losses);
    assert.deepEqual(double.gradNorms0, scalar.gradNorms0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the engine's child resolves modules as PSYCHE_DENO_RUN_FLAGS says, else by deno.json", async () => {
  const env = (flags?: string) => (name: string) =>
    name === "PSYCHE_DENO_RUN_FLAGS" ? flags : undefined;
  assert.deepEqual(engineDenoFlags(env(" --cached-only  --no-config ")), [
    "--cached-only",
    "--no-config",
  ]);
  for (const unset of [undefined, "", "  "]) {
    const [only, ...rest] = engineDenoFlags(env(unset));
    assert.match(only, /^--config=.*deno\.json$/);
    assert.equal(rest.length, 0);
  }
  // The flags reach the child: one Deno does not know stops it, with Deno's message.
  await assert.rejects(
    runEngineProcess({ ...JOB }, { denoFlags: ["--no-such-flag"] }),
    (e) => e instanceof EngineRunError && /no-such-flag/.test(e.message),
  );
});
