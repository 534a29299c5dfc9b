import assert from "node:assert/strict";
import { consoleClientLogger, jsonClientLogger } from "./log.ts";

Deno.test("jsonClientLogger: one JSON object per event with its fields", () => {
  const lines: string[] = [];
  const log = jsonClientLogger((l) => lines.push(l), () => 42);
  log.log("train", {
    epoch: 0,
    step: 3,
    batch: [4, 5],
    loss: 2.5,
    tokens: 64,
    tokens_per_sec: 100,
    ms: 640,
    payload_bytes: 900,
    publish_ms: 3,
  });
  assert.deepEqual(JSON.parse(lines[0]), {
    time: "1970-01-01T00:00:00.042Z",
    level: "info",
    event: "train",
    epoch: 0,
    step: 3,
    batch: [4, 5],
    loss: 2.5,
    tokens: 64,
    tokens_per_sec: 100,
    ms: 640,
    payload_bytes: 900,
    publish_ms: 3,
  });
});

Deno.test("jsonClientLogger: warnings and errors carry their level", () => {
  const lines: string[] = [];
  const log = jsonClientLogger((l) => lines.push(l), () => 0);
  log.log("reconnecting", { address: "h:1", attempt: 1, delay_ms: 100, error: null });
  log.log("error", { what: "train", error: "device lost" });
  assert.deepEqual(lines.map((l) => JSON.parse(l).level), ["warn", "error"]);
});

Deno.test("consoleClientLogger: a readable line per event", () => {
  const lines: string[] = [];
  const log = consoleClientLogger((l) => lines.push(l), () => 0);
  log.log("apply", {
    epoch: 0,
    step: 7,
    applied: 2,
    untrained_batches: 1,
    untrained: [[4, 5]],
    rejected: [],
    lr: 1e-3,
    params_hash: "abcdef0123456789",
    params_step: 9,
    ms: 4,
  });
  assert.equal(
    lines[0],
    "1970-01-01T00:00:00.000Z applied step 7: 2 results, 1 untrained, params abcdef012345",
  );
});

Deno.test("model_load: a line per phase for a person, its fields as they are in JSON", () => {
  const fields = {
    phase: "seeded_init",
    done_bytes: 2 ** 30,
    total_bytes: 4 * 2 ** 30,
    mb_per_sec: 95.4,
  } as const;
  const lines: string[] = [];
  consoleClientLogger((l) => lines.push(l), () => 0).log("model_load", fields);
  consoleClientLogger((l) => lines.push(l), () => 0).log("model_load", {
    ...fields,
    phase: "digest",
  });
  assert.deepEqual(lines, [
    "1970-01-01T00:00:00.000Z making the seeded init of the model: 1.00 of 4.00 GiB (25%), 95 MB/s",
    "1970-01-01T00:00:00.000Z checking the model's digest: 1.00 of 4.00 GiB (25%), 95 MB/s",
  ]);
  const json: string[] = [];
  jsonClientLogger((l) => json.push(l), () => 0).log("model_load", fields);
  assert.deepEqual(JSON.parse(json[0]), {
    time: "1970-01-01T00:00:00.000Z",
    level: "info",
    event: "model_load",
    ...fields,
  });
});

Deno.test("checkpoint_progress: how far a checkpoint's write got, as model_upload says it", () => {
  const lines: string[] = [];
  consoleClientLogger((l) => lines.push(l), () => 0).log("checkpoint_progress", {
    step: 12,
    dir: "ck/run-step12",
    done_bytes: 3 * 2 ** 20,
    total_bytes: 12 * 2 ** 20,
    mb_per_sec: 700,
  });
  consoleClientLogger((l) => lines.push(l), () => 0).log("checkpoint_progress", {
    step: null,
    dir: "ck/run-interrupted",
    done_bytes: 12 * 2 ** 20,
    total_bytes: 12 * 2 ** 20,
    mb_per_sec: 700,
  });
  assert.deepEqual(lines, [
    "1970-01-01T00:00:00.000Z writing the checkpoint of step 12: 3.00 of 12.00 MiB (25%), 700 MB/s",
    "1970-01-01T00:00:00.000Z saving the parameters to ck/run-interrupted: 12.00 of 12.00 MiB " +
    "(100%), 700 MB/s",
  ]);
});

Deno.test("warmup_stage: a line as each stage of the warm-up begins", () => {
  const lines: string[] = [];
  const log = consoleClientLogger((l) => lines.push(l.slice(25)), () => 0);
  log.log("warmup_stage", { stage: "first_step", sequences: 8 });
  log.log("warmup_stage", { stage: "apply", sequences: 8 });
  assert.deepEqual(lines, [
    "warming up: building the GPU pipelines with a dry step of 8 sequences",
    "warming up: applying a dry result to scratch and resetting the optimizer",
  ]);
});

Deno.test("model_snapshot_progress: a line per phase of a snapshot", () => {
  const lines: string[] = [];
  consoleClientLogger((l) => lines.push(l.slice(25)), () => 0).log("model_snapshot_progress", {
    step: 9,
    phase: "hash",
    done_bytes: 2 ** 30,
    total_bytes: 2 ** 31,
    mb_per_sec: 800,
  });
  assert.deepEqual(lines, [
    "snapshot of step 9: hashing the blobs: 1.00 of 2.00 GiB (50%), 800 MB/s",
  ]);
});
