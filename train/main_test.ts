import assert from "node:assert/strict";
import { scheduleFor, shuffleSeed } from "./main.ts";
import { readTrainingCheckpoint } from "./testing/whole_checkpoint.ts";
import { initParams, readModelDir, readSafetensors, writeModelDir } from "../model/mod.ts";
import { learningRate } from "../common/mod.ts";
import { logSchemaProblem } from "../client/testing/log_schema.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test("scheduleFor: warmup from 0, cosine and linear end at lr/10", () => {
  const o = { learningRate: 1e-3, warmupSteps: 10, steps: 110 };
  const cos = scheduleFor("cosine", o);
  assert.equal(learningRate(cos, 0), 0);
  assert.equal(learningRate(cos, 10), 1e-3);
  assert.ok(Math.abs(learningRate(cos, 110) - 1e-4) < 1e-12);
  assert.ok(Math.abs(learningRate(scheduleFor("linear", o), 60) - 5.5e-4) < 1e-12);
  assert.equal(learningRate(scheduleFor("constant", o), 100), 1e-3);
  // A run shorter than its warmup stays valid (and in warmup).
  assert.equal(learningRate(scheduleFor("cosine", { ...o, steps: 3 }), 3), 3e-4);
  assert.deepEqual([...shuffleSeed(0x01020304).subarray(26)], [0, 0, 1, 2, 3, 4]);
});

/** Runs train/main.ts with `args` in a subprocess. */
async function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `--config=${ROOT}deno.json`, `${ROOT}train/main.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** A folder with 8 sequences of 32 generated tokens (vocab 512) for llama-tiny. */
async function tinyData(dir: string): Promise<string> {
  const tokens = Uint16Array.from({ length: 8 * 32 + 1 }, (_, i) => (i * 31 + 7) % 512);
  await Deno.mkdir(`${dir}/data`);
  await Deno.writeFile(`${dir}/data/train.bin`, new Uint8Array(tokens.buffer));
  return `${dir}/data`;
}

Deno.test("deno task train: JSON logs on generated tokens, saves a loadable model", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = await runCli([
      `--model=${ROOT}config/models/llama-tiny`,
      `--data-path=${await tinyData(dir)}`,
      "--sequence-length=32",
      "--micro-batch=2",
      "--total-batch=4",
      "--steps=3",
      "--learning-rate=1e-3",
      "--warmup-steps=2",
      "--seed=3",
      `--save-path=${dir}/out`,
      "--save-dtype=bf16",
      `--eval-data-path=${dir}/data`,
      "--eval-every=2",
      "--eval-sequences=5",
      "--precision=f16", // lavapipe has shader-f16; auto would pick f32 on a CPU adapter
      "--logs=json",
    ]);
    assert.equal(out.code, 0, out.stderr);
    // Every stdout line keeps the one log schema (docs/logs.md), as the client's do.
    const raw = out.stdout.trim().split("\n");
    assert.deepEqual(raw.map(logSchemaProblem), raw.map(() => null));
    const lines = raw.map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((l) => l.event),
      [
        "upload",
        "start",
        "step",
        "step",
        "eval",
        "step",
        "eval",
        "checkpoint_progress",
        "checkpoint",
        "end",
      ],
    );
    const evals = lines.filter((l) => l.event === "eval");
    assert.deepEqual(evals.map((l) => [l.step, l.sequences]), [[2, 4], [3, 4]]);
    assert.ok(evals.every((l) => Number.isFinite(l.held_out_loss) && l.held_out_loss > 0));
    assert.deepEqual(
      [lines.at(-1).step, lines.at(-1).interrupted, lines.at(-1).saved_to],
      [3, false, `${dir}/out`],
    );
    // The seeded weights went to the GPU before the run started, and said how far.
    assert.equal(lines[0].what, "seeded");
    assert.equal(lines[0].done_bytes, lines[0].total_bytes);
    assert.ok(lines[0].total_bytes > 0);
    assert.equal(lines[1].weights, "seeded");
    assert.equal(lines[1].precision, "f16");
    const steps = lines.filter((l) => l.event === "step");
    for (const [i, l] of steps.entries()) {
      assert.equal(l.step, i + 1);
      for (const key of ["loss", "lr", "tokens_per_sec", "ms"]) {
        assert.ok(
          typeof l[key] === "number" && Number.isFinite(l[key]),
          `${key} in ${JSON.stringify(l)}`,
        );
      }
    }
    assert.deepEqual(steps.map((l) => l.lr), [5e-4, 1e-3, 1e-4]);
    const saved = await readModelDir(`${dir}/out`);
    const file = await readSafetensors(`${dir}/out/model.safetensors`);
    assert.equal(file.tensors.get("lm_head.weight")?.dtype, "BF16");
    const init = initParams(saved.layout, saved.config, 3);
    assert.ok(saved.weights !== null);
    assert.notDeepEqual(saved.weights, init); // trained, not the seeded init
    // Training resumes from the saved folder: its weights are loaded, and its first loss is the
    // loss of the saved weights (lower than the seeded model's first loss).
    const again = await runCli([
      `--model=${dir}/out`,
      `--data-path=${dir}/data`,
      "--sequence-length=32",
      "--micro-batch=2",
      "--total-batch=4",
      "--steps=1",
      "--no-save",
      "--logs=json",
    ]);
    assert.equal(again.code, 0, again.stderr);
    const resumed = again.stdout.trim().split("\n").map((l) => JSON.parse(l));
    // The folder's weights were read, saying how far, then uploaded.
    assert.deepEqual(resumed.map((e) => e.event).slice(0, 4), [
      "read_weights",
      "upload",
      "start",
      "step",
    ]);
    assert.equal(resumed[0].dir, `${dir}/out`);
    assert.ok(resumed[0].total_bytes > 0 && resumed[0].done_bytes === resumed[0].total_bytes);
    assert.equal(resumed[2].weights, "loaded");
    assert.ok(resumed[3].loss < steps[0].loss - 0.01, `${resumed[3].loss} vs ${steps[0].loss}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task train: a seeded start (streamed to the GPU) trains from initParams' bits", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const run = (model: string) =>
      runCli([
        `--model=${model}`,
        `--data-path=${dir}/data`,
        "--sequence-length=32",
        "--micro-batch=2",
        "--total-batch=4",
        "--steps=2",
        "--seed=5",
        "--no-save",
        "--logs=json",
      ]);
    await tinyData(dir);
    // The same initial weights, built on the host and loaded from a file.
    const { config, layout } = await readModelDir(`${ROOT}config/models/llama-tiny`);
    await writeModelDir(`${dir}/init`, { config, layout, weights: initParams(layout, config, 5) });
    const runs = [await run(`${ROOT}config/models/llama-tiny`), await run(`${dir}/init`)];
    const logs = runs.map((out) => {
      assert.equal(out.code, 0, out.stderr);
      return out.stdout.trim().split("\n").map((l) => JSON.parse(l));
    });
    const starts = logs.map((l) => l.find((e) => e.event === "start"));
    assert.deepEqual(starts.map((e) => e.weights), ["seeded", "loaded"]);
    const uploads = logs.map((l) => l.find((e) => e.event === "upload"));
    assert.deepEqual(uploads.map((e) => e.what), ["seeded", "weights"], "each upload said");
    // Only the folder with weights had any to read.
    const reads = logs.map((l) => l.filter((e) => e.event === "read_weights").length);
    assert.ok(reads[0] === 0 && reads[1] > 0, `${reads}`);
    const losses = logs.map((l) => l.filter((e) => e.event === "step").map((e) => e.loss));
    assert.equal(losses[0].length, 2);
    assert.deepEqual(losses[0], losses[1]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task train: --optimizer distro trains with single-node DisTrO", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = await runCli([
      `--model=${ROOT}config/models/llama-tiny`,
      `--data-path=${await tinyData(dir)}`,
      "--sequence-length=32",
      "--micro-batch=4",
      "--total-batch=8",
      "--steps=6",
      "--optimizer=distro",
      "--learning-rate=3e-3",
      "--warmup-steps=0",
      "--lr-schedule=constant",
      "--compression-chunk=16",
      "--compression-topk=4",
      "--no-save",
      "--logs=json",
    ]);
    assert.equal(out.code, 0, out.stderr);
    const lines = out.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(lines.find((l) => l.event === "start").optimizer, "distro");
    const losses = lines.filter((l) => l.event === "step").map((l) => l.loss);
    assert.equal(losses.length, 6);
    assert.ok(losses[5] < losses[0] - 0.1, `DisTrO did not reduce the loss: ${losses}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task train: bad flags fail with a clear message", async () => {
  const bad = await runCli(["--model=x", "--data-path=y", "--token-size=3"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--token-size must be 2 or 4/);
  const misspelt = await runCli(["--model=x", "--data-path=y", "--sequence-lenght=8"]);
  assert.equal(misspelt.code, 2);
  assert.match(
    misspelt.stderr,
    /unknown flag --sequence-lenght \(did you mean --sequence-length\?\)/,
  );
  const missing = await runCli(["--model=/nonexistent", "--data-path=y"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /nonexistent/);
  // With --logs json the failure is also an `error` event, so a log reader sees why it ended.
  const json = await runCli(["--model=/nonexistent", "--data-path=y", "--logs=json"]);
  assert.equal(json.code, 1);
  const lines = json.stdout.trim().split("\n");
  assert.deepEqual(lines.map(logSchemaProblem), [null]);
  const event = JSON.parse(lines[0]);
  assert.deepEqual([event.level, event.event, event.what], ["error", "error", "train"]);
  assert.match(event.error, /nonexistent/);
});

Deno.test("deno task train: SIGINT mid-run saves a complete, resumable checkpoint and exits 0", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `--config=${ROOT}deno.json`,
        `${ROOT}train/main.ts`,
        `--model=${ROOT}config/models/llama-tiny`,
        `--data-path=${await tinyData(dir)}`,
        "--sequence-length=32",
        "--micro-batch=2",
        "--total-batch=4",
        "--steps=100000",
        "--optimizer=distro",
        "--compression-chunk=16",
        `--save-path=${dir}/ck`,
        "--logs=json",
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(child.stderr).text();
    const events: Record<string, unknown>[] = [];
    let buffered = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) {
        const e = JSON.parse(line);
        events.push(e);
        if (e.event === "step" && e.step === 2) child.kill("SIGINT");
      }
    }
    const status = await child.status;
    assert.equal(status.code, 0, await stderr);
    const saved = events.find((e) => e.event === "checkpoint");
    const lastStep = events.filter((e) => e.event === "step").at(-1)!.step as number;
    assert.ok(lastStep >= 2 && lastStep < 100000);
    assert.ok(saved !== undefined, "no checkpoint event");
    const { time: _, ...checkpoint } = saved;
    assert.deepEqual(checkpoint, {
      level: "info",
      event: "checkpoint",
      step: lastStep,
      dir: `${dir}/ck`,
      reason: "interrupt",
    });
    assert.equal(events.at(-1)!.event, "end");
    assert.equal(events.at(-1)!.interrupted, true);
    // Complete and loadable: the HF folder and the training state, nothing half-written beside.
    const files = [...Deno.readDirSync(`${dir}/ck`)].map((e) => e.name).sort();
    assert.deepEqual(files, [
      "config.json",
      "model.safetensors",
      "optimizer.safetensors",
      "trainer_state.json",
    ]);
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["ck", "data"]);
    const ck = await readTrainingCheckpoint(`${dir}/ck`, {
      optimizer: "distro",
      chunking: { chunk: 16, topk: 4 },
    });
    assert.equal(ck.trainer.step, lastStep);
    assert.ok(ck.optimizer.kind === "distro" && ck.optimizer.own !== null);
    assert.ok((await readModelDir(`${dir}/ck`)).weights !== null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
