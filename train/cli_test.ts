import assert from "node:assert/strict";
import { DEMO_CORPUS, DEMO_DEFAULTS, DEMO_MODEL, parseTrainArgs, TRAIN_SPEC } from "./cli.ts";
import { helpText } from "../cli/entry.ts";
import { UsageError } from "../common/mod.ts";

const BASE = ["--model", "m", "--data-path", "d"];

Deno.test("parseTrainArgs: Psyche's defaults, and every flag read", () => {
  const d = parseTrainArgs(BASE);
  assert.notEqual(d, "help");
  if (d === "help") return;
  assert.equal(d.sequenceLength, null); // the model's max_position_embeddings, at most 2048
  assert.equal(d.totalBatch, 256);
  assert.equal(d.learningRate, 4e-4);
  assert.equal(d.lrSchedule, "cosine");
  assert.equal(d.maxGradNorm, 1);
  assert.equal(d.savePath, "checkpoints/m");
  assert.equal(d.saveEvery, 0);
  assert.equal(d.resume, null);
  assert.equal(d.evalDataPath, null);
  assert.equal(d.precision, "auto");
  assert.equal(d.recompute, false);
  const o = parseTrainArgs([
    ...BASE,
    "--token-size=4",
    "--sequence-length=64",
    "--micro-batch=2",
    "--total-batch=6",
    "--steps=3",
    "--optimizer=distro",
    "--learning-rate=1e-3",
    "--warmup-steps=0",
    "--lr-schedule=constant",
    "--beta1=0.8",
    "--beta2=0.99",
    "--weight-decay=0",
    "--eps=1e-6",
    "--max-grad-norm=0",
    "--compression-chunk=32",
    "--compression-topk=8",
    "--compression-decay=0.9",
    "--distro-quantization",
    "--seed=9",
    "--no-shuffle",
    "--save-path=out",
    "--save-every=7",
    "--resume=ck",
    "--save-dtype=bf16",
    "--max-shard-size=1GiB",
    "--eval-data-path=v",
    "--eval-every=5",
    "--eval-sequences=16",
    "--precision=f16",
    "--recompute",
    "--logs=json",
  ]);
  assert.deepEqual(o, {
    model: "m",
    dataPath: "d",
    demoData: false,
    tokenSize: 4,
    sequenceLength: 64,
    microBatch: 2,
    totalBatch: 6,
    steps: 3,
    optimizer: "distro",
    learningRate: 1e-3,
    warmupSteps: 0,
    lrSchedule: "constant",
    beta1: 0.8,
    beta2: 0.99,
    weightDecay: 0,
    eps: 1e-6,
    maxGradNorm: 0,
    compressionChunk: 32,
    compressionTopk: 8,
    compressionDecay: 0.9,
    distroQuantization: true,
    seed: 9,
    shuffle: false,
    savePath: "out",
    saveEvery: 7,
    resume: "ck",
    fromCheckpoint: [], // every setting is given
    saveDtype: "BF16",
    maxShardBytes: 2 ** 30,
    evalDataPath: "v",
    evalEvery: 5,
    evalSequences: 16,
    precision: "f16",
    recompute: true,
    logs: "json",
  });
  assert.equal(parseTrainArgs(["--help"]), "help");
  const bf16 = parseTrainArgs([...BASE, "--precision", "bf16"]);
  assert.equal(bf16 !== "help" && bf16.precision, "bf16");
});

Deno.test("parseTrainArgs: errors name the flag", () => {
  const cases: [string[], RegExp][] = [
    [[...BASE, "--save-every=x"], /--save-every must be an integer/],
    [[...BASE, "--token-size=3"], /--token-size must be/],
    [
      [...BASE, "--micro-batch=3", "--total-batch=8"],
      /--total-batch 8 must be a multiple of --micro-batch 3/,
    ],
    [[...BASE, "--steps=-1"], /--steps must be an integer/],
    [[...BASE, "--steps=1.5"], /--steps must be an integer/],
    [[...BASE, "--beta2=1"], /--beta2 must be in \[0, 1\)/],
    [[...BASE, "--learning-rate=abc"], /--learning-rate must be a positive number/],
    [[...BASE, "--optimizer=sgd"], /--optimizer must be one of adamw, distro/],
    [[...BASE, "--logs=xml"], /--logs must be one of console, json/],
    [[...BASE, "--compression-chunk=512"], /--compression-chunk must be an integer in \[1, 256\]/],
    [[...BASE, "--save-dtype=f64"], /--save-dtype must be one of f32, bf16, f16/],
    [[...BASE, "--max-shard-size=5XB"], /--max-shard-size: size "5XB" is not a positive byte/],
    [[...BASE, "--precision=fp8"], /--precision must be one of f32, f16, bf16, auto/],
    [
      [...BASE, "--lr-schedul=cosine"],
      /unknown flag --lr-schedul \(did you mean --lr-schedule\?\)/,
    ],
    [[...BASE, "--steps"], /--steps needs a value \(N\)/],
    [[...BASE, "extra"], /unexpected argument "extra"/],
  ];
  for (const [argv, pattern] of cases) {
    assert.throws(
      () => parseTrainArgs(argv),
      (e: unknown) => e instanceof UsageError && pattern.test(e.message),
      pattern.source,
    );
  }
});

Deno.test("--quantize-1bit selects 1-bit DisTrO values, like --distro-quantization", () => {
  const base = ["--model=m", "--data-path=d", "--optimizer=distro"];
  const quantized = parseTrainArgs([...base, "--quantize-1bit"]);
  const plain = parseTrainArgs(base);
  assert.ok(quantized !== "help" && plain !== "help");
  assert.equal(quantized.distroQuantization, true);
  assert.equal(plain.distroQuantization, false);
});

Deno.test("parseTrainArgs: no flags is the demo; --resume names the model and the save path", () => {
  const demo = parseTrainArgs([]);
  assert.ok(demo !== "help");
  assert.equal(demo.model, DEMO_MODEL);
  assert.equal(demo.dataPath, `${DEMO_CORPUS}/train`);
  assert.equal(demo.demoData, true);
  assert.equal(demo.evalDataPath, `${DEMO_CORPUS}/validation`);
  assert.equal(demo.sequenceLength, DEMO_DEFAULTS.sequenceLength);
  assert.equal(demo.totalBatch, DEMO_DEFAULTS.totalBatch);
  assert.equal(demo.steps, DEMO_DEFAULTS.steps);
  assert.equal(demo.savePath, "checkpoints/llama-bytes");
  const resumed = parseTrainArgs(["--resume=runs/ck/", "--data-path=d"]);
  assert.ok(resumed !== "help");
  assert.deepEqual([resumed.model, resumed.savePath], ["runs/ck/", "runs/ck/"]);
  assert.equal(resumed.totalBatch, 256); // Psyche's defaults, not the demo's, until the
  // checkpoint's trainer_state.json fills in what is not given (train/resume_options.ts).
  assert.deepEqual(resumed.fromCheckpoint, [
    "optimizer",
    "total-batch",
    "micro-batch",
    "sequence-length",
    "shuffle",
  ]);
  const unsaved = parseTrainArgs([...BASE, "--no-save"]);
  assert.ok(unsaved !== "help");
  assert.equal(unsaved.savePath, null);
});

Deno.test("parseTrainArgs: PSYCHE_* variables set flags, the command line wins, errors name them", () => {
  const env = { PSYCHE_STEPS: "7", PSYCHE_NO_SAVE: "1", PSYCHE_OPTIMIZER: "distro" };
  const o = parseTrainArgs([...BASE, "--optimizer=adamw"], { env });
  assert.ok(o !== "help");
  assert.deepEqual([o.steps, o.savePath, o.optimizer], [7, null, "adamw"]);
  // Without `env`, nothing is read: compare-optimizers builds its arguments itself.
  const plain = parseTrainArgs(BASE);
  assert.ok(plain !== "help");
  assert.equal(plain.steps, 25000);
  assert.throws(
    () => parseTrainArgs(BASE, { env: { PSYCHE_MICRO_BATCH: "0" } }),
    (e: unknown) =>
      e instanceof UsageError &&
      /--micro-batch must be .* \(PSYCHE_MICRO_BATCH is set in the environment\)/.test(e.message),
  );
});

Deno.test("TRAIN_SPEC: --help lists every flag with its default and variable", () => {
  const help = helpText(TRAIN_SPEC).replace(/\s+/g, " "); // help wraps at 100 columns
  for (const flag of Object.keys(TRAIN_SPEC.flags)) assert.match(help, new RegExp(`--${flag}\\b`));
  assert.match(
    help,
    /--micro-batch N sequences per forward\/backward pass \[default: 8; demo 4; a resume: the checkpoint's; env: PSYCHE_MICRO_BATCH\]/,
  );
  assert.match(
    help,
    /--optimizer adamw\|distro the optimizer \[default: adamw; a resume: the checkpoint's; env: PSYCHE_OPTIMIZER\]/,
  );
});
