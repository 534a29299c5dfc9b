import assert from "node:assert/strict";
import { consoleLogger, formatDuration, jsonLogger } from "./log.ts";
import { logSchemaProblem } from "../client/testing/log_schema.ts";

const START = {
  model: "m",
  params: 1234567,
  optimizer: "adamw",
  steps: 2,
  sequenceLength: 8,
  totalBatch: 4,
  microBatch: 2,
  sequences: 10,
  adapter: "cpu",
  precision: "f32" as const,
  weights: "seeded" as const,
  firstStep: 1,
};
const STEP = {
  step: 1,
  steps: 2,
  loss: 6.25,
  lr: 1e-3,
  gradNorm: 0.5,
  tokensPerSec: 100,
  ms: 320,
  etaSeconds: 0.32,
};
const END = {
  steps: 2,
  interrupted: false,
  finalLoss: 6,
  seconds: 1.5,
  tokensPerSec: 90,
  savedTo: null,
};

Deno.test("jsonLogger writes the log schema: time, level, snake_case events and fields", () => {
  const lines: string[] = [];
  const log = jsonLogger((l) => lines.push(l), () => 1000);
  log.corpus({ dir: "c", reason: "missing" });
  log.start(START);
  log.step(STEP);
  log.eval({ step: 1, loss: 5.5, sequences: 8 });
  log.save({ step: 1, path: "ck", reason: "interrupt" });
  log.end(END);
  assert.equal(lines.length, 6);
  assert.deepEqual(lines.map(logSchemaProblem), lines.map(() => null));
  const objs = lines.map((l) => JSON.parse(l));
  assert.deepEqual(
    objs.map((o) => o.event),
    ["build_corpus", "start", "step", "eval", "checkpoint", "end"],
  );
  const head = { time: "1970-01-01T00:00:01.000Z", level: "info" };
  assert.deepEqual(objs[0], { ...head, event: "build_corpus", dir: "c", reason: "missing" });
  assert.deepEqual(objs[2], {
    ...head,
    event: "step",
    step: 1,
    steps: 2,
    loss: 6.25,
    lr: 1e-3,
    grad_norm: 0.5,
    tokens_per_sec: 100,
    ms: 320,
    eta_ms: 320,
  });
  assert.deepEqual(objs[3], { ...head, event: "eval", step: 1, held_out_loss: 5.5, sequences: 8 });
  assert.deepEqual(objs[4], {
    ...head,
    event: "checkpoint",
    step: 1,
    dir: "ck",
    reason: "interrupt",
  });
  assert.deepEqual(objs[5], {
    ...head,
    event: "end",
    step: 2,
    interrupted: false,
    final_loss: 6,
    elapsed_ms: 1500,
    tokens_per_sec: 90,
    saved_to: null,
  });
  assert.equal(objs[1].sequence_length, 8);
  assert.equal(objs[1].first_step, 1);
});

Deno.test("consoleLogger writes readable lines", () => {
  const lines: string[] = [];
  const log = consoleLogger((l) => lines.push(l));
  log.start(START);
  log.step(STEP);
  log.eval({ step: 1, loss: 5.5, sequences: 8 });
  log.save({ step: 1, path: "ck", reason: "interrupt" });
  log.end({ ...END, steps: 1, interrupted: true, savedTo: "ck" });
  log.corpus({ dir: "c", reason: "missing" });
  assert.match(lines[0], /1\.23M params/);
  assert.equal(lines[2], "eval after step 1 | loss 5.5000 | 8 sequences");
  assert.equal(
    lines[1],
    "step 1/2 | loss 6.2500 | lr 1.00e-3 | grad norm 0.500 | 320 ms | 100 tok/s | ETA 0s",
  );
  assert.equal(
    lines[3],
    "interrupted: saved the state after step 1 to ck (continue with --resume ck)",
  );
  assert.match(lines[4], /^stopped after 1 steps .*saved to ck$/);
  assert.equal(lines[5], "building the byte corpus in c (missing)");
  assert.deepEqual(
    [5, 65, 3725, NaN].map(formatDuration),
    ["5s", "1m05s", "1h02m", "?"],
  );
});

Deno.test("a save's and an optimizer upload's progress: a line for a person, a JSON event", () => {
  const record = {
    step: 7,
    path: "ck",
    doneBytes: 2 ** 30,
    totalBytes: 4 * 2 ** 30,
    mbPerSec: 512,
  };
  const human: string[] = [];
  consoleLogger((l) => human.push(l)).saveProgress(record);
  consoleLogger((l) => human.push(l)).upload({
    what: "optimizer",
    doneBytes: 2 ** 20,
    totalBytes: 2 ** 21,
    mbPerSec: 40,
  });
  assert.deepEqual(human, [
    "saving the checkpoint of step 7: 1.00 of 4.00 GiB (25%), 512 MB/s",
    "uploading the optimizer state: 1.00 of 2.00 MiB (50%), 40 MB/s",
  ]);
  const json: string[] = [];
  jsonLogger((l) => json.push(l), () => 0).saveProgress(record);
  assert.equal(logSchemaProblem(json[0]), null);
  assert.deepEqual(JSON.parse(json[0]), {
    time: "1970-01-01T00:00:00.000Z",
    level: "info",
    event: "checkpoint_progress",
    step: 7,
    dir: "ck",
    done_bytes: 2 ** 30,
    total_bytes: 4 * 2 ** 30,
    mb_per_sec: 512,
  });
});

Deno.test("read_weights: how far the read of --model's weights got", () => {
  const record = { path: "m", doneBytes: 2 ** 29, totalBytes: 2 ** 31, mbPerSec: 300 };
  const human: string[] = [];
  consoleLogger((l) => human.push(l)).readWeights(record);
  assert.deepEqual(human, ["reading the weights of m: 0.50 of 2.00 GiB (25%), 300 MB/s"]);
  const json: string[] = [];
  jsonLogger((l) => json.push(l), () => 0).readWeights(record);
  assert.equal(logSchemaProblem(json[0]), null);
  const { time: _, ...fields } = JSON.parse(json[0]);
  assert.deepEqual(fields, {
    level: "info",
    event: "read_weights",
    dir: "m",
    done_bytes: 2 ** 29,
    total_bytes: 2 ** 31,
    mb_per_sec: 300,
  });
});
