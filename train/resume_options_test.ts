import assert from "node:assert/strict";
import { parseTrainArgs, type TrainOptions } from "./cli.ts";
import { largestDivisorAtMost, resumeOptions } from "./resume_options.ts";
import { nextSequence, type TrainerState, TrainerStateError } from "./train_state.ts";

const SAVED: TrainerState = {
  step: 3,
  optimizer: "adamw",
  totalBatch: 6,
  microBatch: 3,
  sequenceLength: 128,
  data: { sequences: 50, shuffleSeed: 9, nextSequence: nextSequence(3, 6, 50) },
  lrSchedule: { kind: "Constant", baseLr: 1e-3, warmupSteps: 0, warmupInitLr: 0 },
  weightsDtype: "F32",
};

function flags(...argv: string[]): TrainOptions {
  const o = parseTrainArgs(["--data-path=d", ...argv]);
  if (o === "help") throw new Error("unreachable");
  return o;
}

Deno.test("resumeOptions: --resume alone continues the saved geometry and data order", () => {
  const given = flags("--resume=ck");
  assert.deepEqual(given.fromCheckpoint, [
    "optimizer",
    "total-batch",
    "micro-batch",
    "sequence-length",
    "shuffle",
  ]);
  const distro = { ...SAVED, optimizer: "distro" as const };
  const { options, inherited } = resumeOptions(given, distro);
  assert.deepEqual(
    [
      options.optimizer,
      options.totalBatch,
      options.microBatch,
      options.sequenceLength,
      options.shuffle,
      options.seed,
    ],
    ["distro", 6, 3, 128, true, 9],
  );
  assert.deepEqual(inherited, [
    "--optimizer distro",
    "--total-batch 6",
    "--micro-batch 3",
    "--sequence-length 128",
    "--seed 9",
  ]);
  const unshuffled = { ...SAVED, data: { ...SAVED.data, shuffleSeed: null } };
  const r = resumeOptions(given, unshuffled);
  assert.equal(r.options.shuffle, false);
  assert.equal(r.inherited.at(-1), "--no-shuffle");
});

Deno.test("resumeOptions: flags given on the command line win (the run checks them later)", () => {
  const given = flags(
    "--resume=ck",
    "--optimizer=adamw",
    "--micro-batch=2",
    "--seed=1",
    "--sequence-length=64",
  );
  assert.deepEqual(given.fromCheckpoint, ["total-batch"]);
  const { options, inherited } = resumeOptions(given, SAVED);
  assert.deepEqual(
    [options.totalBatch, options.microBatch, options.sequenceLength, options.seed],
    [6, 2, 64, 1],
  );
  assert.deepEqual(inherited, ["--total-batch 6"]);
  assert.deepEqual(flags("--resume=ck", "--no-shuffle").fromCheckpoint.includes("shuffle"), false);
  // Without --resume nothing is inherited, and the geometry is checked at once.
  assert.deepEqual(flags("--model=m").fromCheckpoint, []);
  assert.throws(() => flags("--model=m", "--micro-batch=3"), /multiple of --micro-batch 3/);
  // A micro-batch given alone is checked against the saved total batch, naming both.
  assert.throws(
    () => resumeOptions(flags("--resume=ck", "--micro-batch=4"), SAVED),
    (e: unknown) =>
      e instanceof TrainerStateError &&
      /"ck": --total-batch 6 is not a multiple of --micro-batch 4/.test(e.message),
  );
});

Deno.test("resumeOptions: a checkpoint without micro_batch gets the largest divisor of its batch", () => {
  const { microBatch: _, ...old } = SAVED;
  // The default micro-batch (8) does not divide 6: the largest divisor at most 8 is 6.
  assert.equal(resumeOptions(flags("--resume=ck"), old).options.microBatch, 6);
  assert.deepEqual(
    [12, 7, 1, 9].map((n) => largestDivisorAtMost(n, 8)),
    [6, 7, 1, 3],
  );
});
