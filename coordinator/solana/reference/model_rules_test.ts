/**
 * The program's model-content rules on `update` (program/model_rules.c): each rule rejected
 * with its error code, the example configs accepted, and a differential check that for
 * random models the program accepts exactly when coordinator/config/validate.ts reports no problem
 * under `model.` (URLs are always well-formed here: the URL rules are not mirrored).
 * Every instruction goes through DualRun, so the reference model agrees on every code too.
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { testConfig, testModel } from "../../../tests/support/coordinator_fixtures.ts";
import { modelRuleViolation } from "./model_rules.ts";
import { CoordinatorSvm } from "../testing/svm.ts";
import { DualRun } from "../testing/dual_run.ts";
import type { CoordinatorProgramErrorName } from "../abi/mod.ts";
import type { DataLocation, LrSchedule, OptimizerDefinition } from "../../../common/mod.ts";
import type { Checkpoint, CoordinatorConfig, LlmModel } from "../../core/mod.ts";
import { parseRunConfig, validateRunConfigDraft } from "../../config/mod.ts";

const svm = await CoordinatorSvm.create();

const adamW = (o: Partial<OptimizerDefinition & { kind: "AdamW" }>): OptimizerDefinition => ({
  kind: "AdamW",
  betas: [0.9, 0.95],
  weightDecay: 0,
  eps: 1e-8,
  clipGradNorm: null,
  ...o,
});
const distro = (o: Partial<OptimizerDefinition & { kind: "Distro" }>): OptimizerDefinition => ({
  kind: "Distro",
  clipGradNorm: 1,
  weightDecay: null,
  compressionDecay: 0.999,
  compressionTopk: 32,
  compressionChunk: 64,
  quantize1bit: false,
  ...o,
});
const wsd = (o: Partial<LrSchedule & { kind: "WarmupStableDecay" }>): LrSchedule => ({
  kind: "WarmupStableDecay",
  baseLr: 3e-4,
  warmupSteps: 10,
  warmupInitLr: 0,
  stableSteps: 100,
  cosineDecaySteps: 50,
  cosineDecayFinalLr: 1e-5,
  linearDecaySteps: 10,
  linearDecayFinalLr: 0,
  ...o,
});
const numbered = (urlTemplate: string, numFiles = 9): DataLocation => ({
  kind: "Http",
  location: { kind: "NumberedFiles", urlTemplate, startIndex: 0, nLeftPadZeros: 2, numFiles },
  tokenSizeInBytes: "TwoBytes",
  shuffle: { kind: "DontShuffle" },
});
const hub = (repoId: string, revision: string | null = null): Checkpoint => ({
  kind: "Hub",
  repo: { repoId, revision },
});

/** Each rule, one model breaking it, and the code the program must return. */
const CASES: [string, Partial<LlmModel>, CoordinatorProgramErrorName][] = [
  ["Server empty", { dataLocation: { kind: "Server", address: " \u00a0" } }, "InvalidDataLocation"],
  [
    "Server not host:port",
    { dataLocation: { kind: "Server", address: "host" } },
    "InvalidDataLocation",
  ],
  ["Server port 0", { dataLocation: { kind: "Server", address: "h:0" } }, "InvalidDataLocation"],
  [
    "Server port > 65535",
    { dataLocation: { kind: "Server", address: "h:65536" } },
    "InvalidDataLocation",
  ],
  [
    "Server > 64 bytes",
    { dataLocation: { kind: "Server", address: `${"h".repeat(70)}:1` } },
    "InvalidDataLocation",
  ],
  ["Server NUL", { dataLocation: { kind: "Server", address: "h\0:1" } }, "InvalidDataLocation"],
  ["Local blank", { dataLocation: { kind: "Local", path: "\u3000\ufeff" } }, "InvalidDataLocation"],
  ["Local NUL", { dataLocation: { kind: "Local", path: "a\0b" } }, "InvalidDataLocation"],
  [
    "Preprocessed empty",
    { dataLocation: { kind: "Preprocessed", source: "" } },
    "InvalidDataLocation",
  ],
  [
    "WeightedHttp NUL",
    { dataLocation: { kind: "WeightedHttp", url: "https://x/a\0b" } },
    "InvalidDataLocation",
  ],
  ["template without {}", { dataLocation: numbered("https://x/a.ds") }, "InvalidDataLocation"],
  ["template with two {}", { dataLocation: numbered("https://x/{}/{}.ds") }, "InvalidDataLocation"],
  ["numFiles 0", { dataLocation: numbered("https://x/{}.ds", 0) }, "InvalidDataLocation"],
  ["Gcp bucket blank", {
    dataLocation: {
      kind: "Http",
      location: { kind: "Gcp", bucketName: " ", filterDirectory: "" },
      tokenSizeInBytes: "FourBytes",
      shuffle: { kind: "DontShuffle" },
    },
  }, "InvalidDataLocation"],
  ["Hub repoId blank", { checkpoint: hub("\t") }, "InvalidModelCheckpoint"],
  ["Hub revision empty", { checkpoint: hub("org/m", "") }, "InvalidModelCheckpoint"],
  [
    "P2P repoId NUL",
    { checkpoint: { kind: "P2P", repo: { repoId: "a\0", revision: null } } },
    "InvalidModelCheckpoint",
  ],
  [
    "Dummy revision blank",
    { checkpoint: { kind: "Dummy", repo: { repoId: "", revision: " " } } },
    "InvalidModelCheckpoint",
  ],
  [
    "Gcs bucket empty",
    { checkpoint: { kind: "Gcs", repo: { bucket: "", prefix: null } } },
    "InvalidModelCheckpoint",
  ],
  [
    "Gcs prefix NUL",
    { checkpoint: { kind: "P2PGcs", repo: { bucket: "b", prefix: "\0" } } },
    "InvalidModelCheckpoint",
  ],
  ["baseLr < 0", {
    lrSchedule: { kind: "Constant", baseLr: -1e-3, warmupSteps: 0, warmupInitLr: 0 },
  }, "InvalidLrSchedule"],
  ["warmupInitLr < 0", {
    lrSchedule: { kind: "Constant", baseLr: 1, warmupSteps: 0, warmupInitLr: -5e-324 },
  }, "InvalidLrSchedule"],
  ["Linear total < warmup", {
    lrSchedule: {
      kind: "Linear",
      baseLr: 1,
      warmupSteps: 5,
      warmupInitLr: 0,
      totalSteps: 4,
      finalLr: 0,
    },
  }, "InvalidLrSchedule"],
  ["Linear finalLr < 0", {
    lrSchedule: {
      kind: "Linear",
      baseLr: 1,
      warmupSteps: 5,
      warmupInitLr: 0,
      totalSteps: 5,
      finalLr: -1,
    },
  }, "InvalidLrSchedule"],
  ["Cosine total = warmup", {
    lrSchedule: {
      kind: "Cosine",
      baseLr: 1,
      warmupSteps: 5,
      warmupInitLr: 0,
      totalSteps: 5,
      finalLr: 0,
    },
  }, "InvalidLrSchedule"],
  [
    "WSD cosine final > base",
    { lrSchedule: wsd({ cosineDecayFinalLr: 3.0000000000000003e-4 }) },
    "InvalidLrSchedule",
  ],
  [
    "WSD linear final > cosine final",
    { lrSchedule: wsd({ linearDecayFinalLr: 2e-5 }) },
    "InvalidLrSchedule",
  ],
  [
    "WSD steps overflow u32",
    { lrSchedule: wsd({ stableSteps: 0xffff_fff0 }) },
    "InvalidLrSchedule",
  ],
  ["Constant baseLr > 1", {
    lrSchedule: { kind: "Constant", baseLr: 1.0000000000000002, warmupSteps: 0, warmupInitLr: 0 },
  }, "InvalidLrSchedule"],
  ["Constant warmupInitLr > 1", {
    lrSchedule: { kind: "Constant", baseLr: 1, warmupSteps: 5, warmupInitLr: 2 },
  }, "InvalidLrSchedule"],
  ["Linear finalLr > 1", {
    lrSchedule: {
      kind: "Linear",
      baseLr: 1,
      warmupSteps: 5,
      warmupInitLr: 0,
      totalSteps: 5,
      finalLr: 1.5,
    },
  }, "InvalidLrSchedule"],
  ["AdamW weightDecay > 1", { optimizer: adamW({ weightDecay: 1.5 }) }, "InvalidOptimizer"],
  ["AdamW eps > 1", { optimizer: adamW({ eps: 2 }) }, "InvalidOptimizer"],
  ["AdamW clip > 1e6", { optimizer: adamW({ clipGradNorm: 2 ** 53 }) }, "InvalidOptimizer"],
  ["Distro clip > 1e6", {
    optimizer: distro({ clipGradNorm: 1000000.0000000001 }),
  }, "InvalidOptimizer"],
  [
    "Distro weightDecay > 1",
    { optimizer: distro({ weightDecay: 1.0000000000000002 }) },
    "InvalidOptimizer",
  ],
  ["AdamW beta 1", { optimizer: adamW({ betas: [0.9, 1] }) }, "InvalidOptimizer"],
  ["AdamW beta < 0", { optimizer: adamW({ betas: [-0.1, 0.9] }) }, "InvalidOptimizer"],
  ["AdamW eps -0", { optimizer: adamW({ eps: -0 }) }, "InvalidOptimizer"],
  ["AdamW weightDecay < 0", { optimizer: adamW({ weightDecay: -1 }) }, "InvalidOptimizer"],
  ["AdamW clip 0", { optimizer: adamW({ clipGradNorm: 0 }) }, "InvalidOptimizer"],
  ["Distro clip < 0", { optimizer: distro({ clipGradNorm: -1 }) }, "InvalidOptimizer"],
  ["Distro weightDecay < 0", { optimizer: distro({ weightDecay: -0.1 }) }, "InvalidOptimizer"],
  ["Distro decay 0", { optimizer: distro({ compressionDecay: 0 }) }, "InvalidOptimizer"],
  [
    "Distro decay > 1",
    { optimizer: distro({ compressionDecay: 1.0000000000000002 }) },
    "InvalidOptimizer",
  ],
  ["Distro chunk 0", { optimizer: distro({ compressionChunk: 0 }) }, "InvalidOptimizer"],
  ["Distro chunk > u16", { optimizer: distro({ compressionChunk: 65536 }) }, "InvalidOptimizer"],
  ["Distro topk 0", { optimizer: distro({ compressionTopk: 0 }) }, "InvalidOptimizer"],
  [
    "Distro topk > chunk^2",
    { optimizer: distro({ compressionChunk: 4, compressionTopk: 17 }) },
    "InvalidOptimizer",
  ],
  ["maxSeqLen 0", { maxSeqLen: 0 }, "InvalidModel"],
];

Deno.test("update: each model-content rule is rejected with its code", async () => {
  const run = await DualRun.create({ svm });
  for (const [label, overrides, code] of CASES) {
    const model = testModel(overrides);
    const issues = validateRunConfigDraft({ config: {}, model, progress: {} });
    assert.ok(issues.length > 0, `${label}: coordinator/config/validate.ts accepts it`);
    await run.expectError({ kind: "Update", model }, run.mainAuthority, code);
  }
  // The boundaries themselves are accepted.
  for (
    const overrides of [
      { dataLocation: { kind: "Server", address: "[::1]:65535" } },
      { dataLocation: numbered("https://x/{{}}.ds", 1) },
      { checkpoint: { kind: "Dummy", repo: { repoId: "", revision: "main" } } },
      { checkpoint: { kind: "Gcs", repo: { bucket: "b", prefix: "" } } },
      { lrSchedule: wsd({ cosineDecayFinalLr: 3e-4, linearDecayFinalLr: 3e-4 }) },
      {
        lrSchedule: wsd({
          warmupSteps: 0,
          stableSteps: 0xffff_ffff,
          cosineDecaySteps: 0,
          linearDecaySteps: 0,
        }),
      },
      { optimizer: adamW({ betas: [-0, 0.9999999999999999], weightDecay: -0 }) },
      { optimizer: adamW({ weightDecay: 1, eps: 1, clipGradNorm: 1e6 }) },
      { optimizer: distro({ weightDecay: 1, clipGradNorm: 1e6 }) },
      { lrSchedule: { kind: "Constant", baseLr: 1, warmupSteps: 3, warmupInitLr: 1 } },
      {
        optimizer: distro({ compressionDecay: 1, compressionChunk: 65535, compressionTopk: 65535 }),
      },
      { optimizer: distro({ compressionChunk: 4, compressionTopk: 16, clipGradNorm: null }) },
    ] satisfies Partial<LlmModel>[]
  ) {
    await run.expectOk({ kind: "Update", model: testModel(overrides) }, run.mainAuthority);
  }
});

Deno.test("update: blank means blank to String.prototype.trim, code point by code point", async () => {
  const run = await DualRun.create({ svm, runId: "model-rules-blank" });
  // Every code point trim() removes, and neighbours it keeps (NEL, ZWSP, 4-byte, U+2000 - 1).
  const spaces = [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f]
    .concat([0x205f, 0x3000, 0xfeff], Array.from({ length: 11 }, (_, i) => 0x2000 + i));
  const kept = [0x85, 0x200b, 0x1fff, 0x180e, 0x1f600, 0x21];
  for (const cp of [...spaces, ...kept]) {
    const path = ` ${String.fromCodePoint(cp)} `;
    assert.equal(path.trim() === "", spaces.includes(cp), `U+${cp.toString(16)}`);
    const ix = {
      kind: "Update" as const,
      model: testModel({ dataLocation: { kind: "Local", path } }),
    };
    if (spaces.includes(cp)) await run.expectError(ix, run.mainAuthority, "InvalidDataLocation");
    else await run.expectOk(ix, run.mainAuthority);
  }
});

Deno.test("update: a Cosine schedule must last config.totalSteps (checked on resume)", async () => {
  const run = await DualRun.create({ svm });
  const cosine: LrSchedule = {
    kind: "Cosine",
    baseLr: 1e-3,
    warmupSteps: 10,
    warmupInitLr: 0,
    totalSteps: 99,
    finalLr: 0,
  };
  const model = testModel({ lrSchedule: cosine });
  await run.expectOk(
    { kind: "Update", config: testConfig({ totalSteps: 100 }), model },
    run.mainAuthority,
  );
  run.setTime(5);
  await run.expectError(
    { kind: "SetPaused", paused: false },
    run.mainAuthority,
    "InvalidLrSchedule",
  );
  await run.expectOk({ kind: "Update", config: testConfig({ totalSteps: 99 }) }, run.mainAuthority);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  await run.expectError(
    { kind: "Update", config: testConfig({ totalSteps: 100 }) },
    run.mainAuthority,
    "InvalidLrSchedule",
  );
});

Deno.test("update: the example configs are accepted", async () => {
  for (const name of ["llama-tiny", "psyche-production"]) {
    const path = new URL(`../../../config/${name}/state.toml`, import.meta.url);
    const example = parseRunConfig(await Deno.readTextFile(path), path.pathname);
    assert.equal(modelRuleViolation(example.model, example.config), undefined);
    const run = await DualRun.create({ svm, runId: name });
    await run.expectOk(
      { kind: "Update", config: example.config, model: example.model },
      run.mainAuthority,
    );
    run.setTime(5);
    await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  }
});

// Pools biased towards valid values, so both outcomes are common.
const pick = <T>(...values: T[]) => fc.constantFrom(...values);
const text = pick("org/model", "main", "ü-ñ ✓", "org/model", "", " ", "\u2028", "a\0b");
/** `usual` four times as often as `rare`. */
const usually = <T>(usual: fc.Arbitrary<T>, rare: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 4, arbitrary: usual }, { weight: 1, arbitrary: rare });
const rate = usually(pick(0, 1e-3, 3e-4, 0.5, 1, 1e-8, -0), pick(-1e-3, -5e-324, 1.5, 2 ** 53));
const steps = usually(pick(0, 1, 10, 100, 1000), pick(2 ** 31, 0xffff_ffff));
const unit = pick(0, 0.5, 0.9, 0.95, 0.999, 1, -0.1, 1.5);
const optionalPositive = pick(null, 1, 0.5, 0, -1, 1e6, 1000000.0000000001);
const u16ish = pick(1, 4, 16, 64, 4096, 65535, 0, 65536, 70000);
const url = pick("https://example.com/d.bin", "http://a/b", "https://a/b\0c");
const template = pick("https://x/{}.ds", "https://x/{}{}.ds", "https://x/a.ds", "https://x/{{}}");

const arbDataLocation: fc.Arbitrary<DataLocation> = fc.oneof(
  fc.constant({ kind: "Dummy" as const }),
  pick("127.0.0.1:9000", "[::1]:80", "host:0", "h:65536", "host", ":80", "", "a b:1")
    .map((address) => ({ kind: "Server" as const, address })),
  text.map((path) => ({ kind: "Local" as const, path })),
  text.map((source) => ({ kind: "Preprocessed" as const, source })),
  url.map((u) => ({ kind: "WeightedHttp" as const, url: u })),
  fc.tuple(template, pick(0, 1, 1000)).map(([t, n]) => numbered(t, n)),
  fc.tuple(text, pick("", "dir", "d\0")).map(([bucketName, filterDirectory]) => ({
    kind: "Http" as const,
    location: { kind: "Gcp" as const, bucketName, filterDirectory },
    tokenSizeInBytes: "TwoBytes" as const,
    shuffle: { kind: "DontShuffle" as const },
  })),
);
const arbCheckpoint: fc.Arbitrary<Checkpoint> = fc.oneof(
  fc.tuple(pick("Dummy", "Hub", "P2P"), text, fc.option(text, { nil: null }))
    .map(([kind, repoId, revision]) => ({ kind, repo: { repoId, revision } } as Checkpoint)),
  fc.tuple(pick("Gcs", "P2PGcs"), text, fc.option(text, { nil: null }))
    .map(([kind, bucket, prefix]) => ({ kind, repo: { bucket, prefix } } as Checkpoint)),
);
const arbLrSchedule: fc.Arbitrary<LrSchedule> = fc.oneof(
  fc.record({ baseLr: rate, warmupSteps: steps, warmupInitLr: rate })
    .map((s) => ({ kind: "Constant" as const, ...s })),
  fc.record({
    kind: pick("Linear" as const, "Cosine" as const),
    baseLr: rate,
    warmupSteps: steps,
    warmupInitLr: rate,
    totalSteps: steps,
    finalLr: rate,
  }),
  fc.record({
    baseLr: rate,
    warmupSteps: steps,
    warmupInitLr: rate,
    stableSteps: steps,
    cosineDecaySteps: steps,
    cosineDecayFinalLr: rate,
    linearDecaySteps: steps,
    linearDecayFinalLr: rate,
  }).map((s) => ({ kind: "WarmupStableDecay" as const, ...s })),
);
const arbOptimizer: fc.Arbitrary<OptimizerDefinition> = fc.oneof(
  fc.record({
    betas: fc.tuple(unit, unit),
    weightDecay: rate,
    eps: pick(1e-8, 1e-6, 0, -1e-8, 1, 1.0000000000000002),
    clipGradNorm: optionalPositive,
  }).map((o) => ({ kind: "AdamW" as const, ...o })),
  fc.record({
    clipGradNorm: optionalPositive,
    weightDecay: fc.option(rate, { nil: null }),
    compressionDecay: unit,
    compressionTopk: u16ish,
    compressionChunk: u16ish,
    quantize1bit: fc.boolean(),
  }).map((o) => ({ kind: "Distro" as const, ...o })),
);
/** testModel()'s valid value most of the time, else one from `arb`. */
const mostly = <T>(valid: T, arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 2, arbitrary: fc.constant(valid) }, { weight: 1, arbitrary: arb });
const base = testModel();
const arbModel: fc.Arbitrary<LlmModel> = fc.record({
  maxSeqLen: mostly(base.maxSeqLen, pick(2048, 0)),
  coldStartWarmupSteps: mostly(base.coldStartWarmupSteps, pick(0, 1, 1000)),
  snapshotDtype: mostly(base.snapshotDtype, pick("f32" as const, "bf16" as const)),
  dataLocation: mostly(base.dataLocation, arbDataLocation),
  checkpoint: mostly(base.checkpoint, arbCheckpoint),
  lrSchedule: mostly(base.lrSchedule, arbLrSchedule),
  optimizer: mostly(base.optimizer, arbOptimizer),
}).map((m) => testModel(m));

/** A paused run, so the rules that need the config (cold start, Cosine length) apply too. */
async function pausedRun(runId: string): Promise<DualRun> {
  const run = await DualRun.create({ svm, runId });
  await run.expectOk(
    { kind: "Update", config: testConfig(), model: testModel() },
    run.mainAuthority,
  );
  run.setTime(5);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  return run;
}

/**
 * Sends `numRuns` random models (with a random config.totalSteps) to a paused run and asserts the
 * program accepts exactly those coordinator/config/validate.ts finds nothing wrong with.
 */
async function differential(
  runId: string,
  arb: fc.Arbitrary<LlmModel>,
  numRuns: number,
): Promise<void> {
  const run = await pausedRun(runId);
  const outcomes = { accepted: 0, rejected: 0 };
  await fc.assert(
    fc.asyncProperty(arb, pick(1, 10, 100, 1000), async (model, totalSteps) => {
      const config: CoordinatorConfig = testConfig({ totalSteps });
      const issues = validateRunConfigDraft({ config, model, progress: {} });
      assert.deepEqual(issues.filter((i) => !i.path.startsWith("model.")), []);
      const result = await run.send({ kind: "Update", config, model }, run.mainAuthority);
      const context = `${JSON.stringify(issues)}\n${result.logs.join("\n")}`;
      assert.equal(result.ok, issues.length === 0, context);
      outcomes[result.ok ? "accepted" : "rejected"]++;
    }),
    { seed: 7, numRuns },
  );
  const least = Math.floor(numRuns / 10);
  assert.ok(outcomes.accepted >= least && outcomes.rejected >= least, JSON.stringify(outcomes));
}

Deno.test("differential: the program accepts a model exactly when coordinator/config/validate.ts does", async () => {
  await differential("model-rules-diff", arbModel, 100);
});

Deno.test("differential, one part at a time: data location, checkpoint, schedule, optimizer", async () => {
  const parts: [string, fc.Arbitrary<Partial<LlmModel>>][] = [
    ["data", arbDataLocation.map((dataLocation) => ({ dataLocation }))],
    ["checkpoint", arbCheckpoint.map((checkpoint) => ({ checkpoint }))],
    ["schedule", arbLrSchedule.map((lrSchedule) => ({ lrSchedule }))],
    ["optimizer", arbOptimizer.map((optimizer) => ({ optimizer }))],
  ];
  for (const [name, arb] of parts) {
    await differential(`model-rules-${name}`, arb.map((part) => testModel(part)), 100);
  }
});
