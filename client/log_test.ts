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
  });
  assert.deepEqual(JSON.parse(lines[0]), {
    event: "train",
    time_ms: 42,
    epoch: 0,
    step: 3,
    batch: [4, 5],
    loss: 2.5,
    tokens: 64,
    tokens_per_sec: 100,
    ms: 640,
    payload_bytes: 900,
  });
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
    lr: 1e-3,
    params_hash: "abcdef0123456789",
    params_step: 9,
  });
  assert.equal(
    lines[0],
    "1970-01-01T00:00:00.000Z applied step 7: 2 results, 1 untrained, params abcdef012345",
  );
});
