import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { stringify } from "smol-toml";
import { parseRunConfig, validateRunConfig } from "./run_config.ts";
import type { RunConfig } from "./types.ts";
import { DEFAULT_PROGRESS } from "./read.ts";
import { crossCheckDataConfig, validateRunConfigDraft } from "./validate.ts";
import { runConfigToToml } from "./write.ts";
import { parseDataConfig } from "../../data/mod.ts";
import type { Checkpoint } from "../core/mod.ts";
import {
  ConfigError,
  type DataLocation,
  formatIssue,
  type LrSchedule,
  type OptimizerDefinition,
} from "../../common/mod.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
const CONFIG_DIR = join(ROOT, "config");

// deno-lint-ignore no-explicit-any
type Doc = Record<string, any>;

/** A valid state.toml as a plain object, to mutate per test and stringify. */
function baseDoc(): Doc {
  return {
    run_id: "test-run",
    run_state: "WaitingForMembers",
    config: {
      warmup_time: 30,
      cooldown_time: 10,
      epoch_time: 600,
      max_round_train_time: 30,
      round_witness_time: 2,
      min_clients: 2,
      init_min_clients: 2,
      global_batch_size_start: 8,
      global_batch_size_end: 8,
      global_batch_size_warmup_tokens: 0,
      verification_percent: 0,
      witness_nodes: 1,
      total_steps: 25000,
      waiting_for_members_extra_time: 3,
    },
    model: {
      LLM: {
        architecture: "HfLlama",
        data_type: "Pretraining",
        max_seq_len: 2048,
        cold_start_warmup_steps: 0,
        data_location: { Server: "127.0.0.1:20001" },
        checkpoint: { Hub: { repo_id: "emozilla/llama2-20m-init" } },
        lr_schedule: {
          Cosine: {
            base_lr: 4e-4,
            warmup_steps: 500,
            warmup_init_lr: 0,
            total_steps: 25000,
            final_lr: 4e-5,
          },
        },
        optimizer: {
          Distro: {
            compression_decay: 0.999,
            compression_chunk: 64,
            compression_topk: 8,
            quantize_1bit: true,
          },
        },
      },
    },
  };
}

function parseDoc(doc: Doc): RunConfig {
  return parseRunConfig(stringify(doc), "test.toml");
}

function issuesOf(text: string): ConfigError {
  try {
    parseRunConfig(text, "test.toml");
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  assert.fail("expected a ConfigError");
}

function issuePaths(doc: Doc): string[] {
  return issuesOf(stringify(doc)).issues.map((issue) => issue.path);
}

async function tomlFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(".toml")) files.push(join(dir, entry.name));
  }
  return files.sort();
}

Deno.test("the base document parses into the typed values", () => {
  const run = parseDoc(baseDoc());
  assert.equal(run.runId, "test-run");
  assert.equal(run.runState, "WaitingForMembers");
  assert.deepEqual(run.config, {
    warmupTime: 30,
    cooldownTime: 10,
    maxRoundTrainTime: 30,
    roundWitnessTime: 2,
    globalBatchSizeWarmupTokens: 0,
    epochTime: 600,
    totalSteps: 25000,
    initMinClients: 2,
    minClients: 2,
    witnessNodes: 1,
    globalBatchSizeStart: 8,
    globalBatchSizeEnd: 8,
    verificationPercent: 0,
    waitingForMembersExtraTime: 3,
    maxClients: 256,
    verificationBarEpochs: 4,
  });
  assert.deepEqual(run.model.dataLocation, { kind: "Server", address: "127.0.0.1:20001" });
  assert.deepEqual(run.model.checkpoint, {
    kind: "Hub",
    repo: { repoId: "emozilla/llama2-20m-init", revision: null },
  });
  assert.deepEqual(run.model.optimizer, {
    kind: "Distro",
    clipGradNorm: null,
    weightDecay: null,
    compressionDecay: 0.999,
    compressionTopk: 8,
    compressionChunk: 64,
    quantize1bit: true,
  });
  assert.deepEqual(run.progress, DEFAULT_PROGRESS);
});

Deno.test("every example config in config/ is accepted and round-trips", async () => {
  let count = 0;
  for await (const entry of Deno.readDir(CONFIG_DIR)) {
    if (!entry.isDirectory || entry.name === "invalid") continue;
    const path = join(CONFIG_DIR, entry.name, "state.toml");
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch {
      continue; // folders without a run config (e.g. model configs)
    }
    const run = parseRunConfig(text, path);
    assert.deepEqual(parseRunConfig(runConfigToToml(run), "round trip"), run, path);
    count++;
    const dataPath = join(CONFIG_DIR, entry.name, "data.toml");
    const dataText = await Deno.readTextFile(dataPath).catch(() => null);
    if (dataText !== null) {
      const data = parseDataConfig(dataText, dataPath);
      assert.deepEqual(crossCheckDataConfig(run, data), { run: [], data: [] }, dataPath);
    }
  }
  assert.ok(count >= 2, `expected at least 2 example configs, found ${count}`);
});

Deno.test("every broken config in config/invalid is rejected naming exactly the expected keys", async () => {
  const files = await tomlFiles(join(CONFIG_DIR, "invalid"));
  assert.ok(files.length >= 15, `found only ${files.length} broken configs`);
  for (const file of files) {
    const text = await Deno.readTextFile(file);
    const expected = [...text.matchAll(/^# expect: (\S+)$/gm)].map((m) => m[1]).sort();
    assert.ok(expected.length > 0, `${file} has no "# expect:" line`);
    const error = issuesOf(text);
    const found = error.issues.map((issue) => issue.path).sort();
    assert.deepEqual(found, expected, `${file}:\n${error.message}`);
    for (const issue of error.issues) {
      assert.ok(error.message.includes(formatIssue(issue)), file);
      assert.ok(issue.message.length > 0, file);
    }
  }
});

Deno.test("a config with three mistakes reports all three, in one error", () => {
  const doc = baseDoc();
  doc.config.cooldown_time = 0;
  doc.config.epoch_time = "600";
  doc.model.LLM.max_seq_len = 0;
  const error = issuesOf(stringify(doc));
  assert.deepEqual(error.issues.map((i) => i.path), [
    "config.epoch_time",
    "config.cooldown_time",
    "model.LLM.max_seq_len",
  ]);
  assert.match(error.message, /^test\.toml: 3 problems:\n/);
});

Deno.test("messages name the key, the value found and the rule", () => {
  const doc = baseDoc();
  doc.config.warmup_time = 700;
  const [issue] = issuesOf(stringify(doc)).issues;
  assert.equal(
    formatIssue(issue),
    "config.warmup_time = 700: must be less than config.epoch_time (600)",
  );

  const typed = baseDoc();
  typed.config.epoch_time = "600";
  assert.equal(
    formatIssue(issuesOf(stringify(typed)).issues[0]),
    'config.epoch_time = "600": expected seconds (0..1125899906842.623, at most millisecond ' +
      "precision), found a string",
  );

  const missing = baseDoc();
  delete missing.config.total_steps;
  assert.equal(
    formatIssue(issuesOf(stringify(missing)).issues[0]),
    "config.total_steps: missing (required: a u32 integer (0..4294967295))",
  );

  const unknown = baseDoc();
  unknown.model.LLM.optimizer.Distro.momentum = 0.9;
  const unknownIssue = issuesOf(stringify(unknown)).issues[0];
  assert.equal(unknownIssue.path, "model.LLM.optimizer.Distro.momentum");
  assert.match(unknownIssue.message, /^unknown key \(known keys here: .*compression_decay/);
});

Deno.test("unknown keys are reported at every level", () => {
  for (
    const mutate of [
      (d: Doc) => (d.extra = 1),
      (d: Doc) => (d.config.extra = 1),
      (d: Doc) => (d.model.LLM.extra = 1),
      (d: Doc) => (d.model.LLM.checkpoint.Hub.extra = 1),
      (d: Doc) => (d.model.LLM.lr_schedule.Cosine.extra = 1),
      (d: Doc) => (d.progress = { epoch: 0, step: 3, epoch_start_data_index: 0, extra: 1 }),
    ]
  ) {
    const doc = baseDoc();
    mutate(doc);
    const paths = issuePaths(doc);
    assert.equal(paths.length, 1, paths.join());
    assert.match(paths[0], /(^|\.)extra$/);
  }
});

Deno.test("wrong types are rejected naming the key", () => {
  const cases: [(d: Doc) => void, string][] = [
    [(d) => (d.run_id = 7), "run_id"],
    [(d) => (d.run_state = "Running"), "run_state"],
    [(d) => (d.config.min_clients = 1.5), "config.min_clients"],
    [(d) => (d.config.min_clients = -1), "config.min_clients"],
    [(d) => (d.config.min_clients = 70000), "config.min_clients"],
    [(d) => (d.config = 3), "config"],
    [(d) => (d.model.LLM.architecture = "Gpt2"), "model.LLM.architecture"],
    [
      (d) => (d.model.LLM.lr_schedule.Cosine.base_lr = "big"),
      "model.LLM.lr_schedule.Cosine.base_lr",
    ],
    [
      (d) => (d.model.LLM.optimizer.Distro.quantize_1bit = 1),
      "model.LLM.optimizer.Distro.quantize_1bit",
    ],
    [(d) => (d.model.LLM.data_location = { Server: 20001 }), "model.LLM.data_location.Server"],
    [(d) => (d.model.LLM.data_location = "Server"), "model.LLM.data_location.Server"],
    [(d) => (d.model.LLM.data_location = 5), "model.LLM.data_location"],
    [(d) => (d.model.LLM.data_location = {}), "model.LLM.data_location"],
    [(d) => (d.model = { GPT: {} }), "model"],
  ];
  for (const [mutate, path] of cases) {
    const doc = baseDoc();
    mutate(doc);
    assert.deepEqual(issuePaths(doc), [path], path);
  }
});

Deno.test("integers beyond 2^53 are rejected, not rounded", () => {
  const text = stringify(baseDoc()).replace(
    "global_batch_size_warmup_tokens = 0",
    "global_batch_size_warmup_tokens = 9007199254740993",
  );
  const [issue] = issuesOf(text).issues;
  assert.equal(issue.path, "config.global_batch_size_warmup_tokens");
  assert.equal(issue.found, "9007199254740993");
});

Deno.test("every data_location variant parses", () => {
  const seed = Array.from({ length: 32 }, (_, i) => 255 - i);
  const cases: [unknown, DataLocation][] = [
    ["Dummy", { kind: "Dummy" }],
    [{ Dummy: {} }, { kind: "Dummy" }],
    [{ Server: "data.example.org:20001" }, { kind: "Server", address: "data.example.org:20001" }],
    [{ Local: "data/corpus/train" }, { kind: "Local", path: "data/corpus/train" }],
    [
      { WeightedHttp: "https://example.org/mix.json" },
      { kind: "WeightedHttp", url: "https://example.org/mix.json" },
    ],
    [{ Preprocessed: "org/dataset" }, { kind: "Preprocessed", source: "org/dataset" }],
    [
      {
        Http: {
          location: { SingleUrl: "https://example.org/000.ds" },
          token_size_in_bytes: "TwoBytes",
          shuffle: "DontShuffle",
        },
      },
      {
        kind: "Http",
        location: { kind: "SingleUrl", url: "https://example.org/000.ds" },
        tokenSizeInBytes: "TwoBytes",
        shuffle: { kind: "DontShuffle" },
      },
    ],
    [
      {
        Http: {
          location: {
            NumberedFiles: {
              url_template: "http://127.0.0.1:8080/{}.ds",
              start_index: 3,
              n_left_pad_zeros: 4,
              num_files: 10,
            },
          },
          token_size_in_bytes: "FourBytes",
          shuffle: { Seeded: seed },
        },
      },
      {
        kind: "Http",
        location: {
          kind: "NumberedFiles",
          urlTemplate: "http://127.0.0.1:8080/{}.ds",
          startIndex: 3,
          nLeftPadZeros: 4,
          numFiles: 10,
        },
        tokenSizeInBytes: "FourBytes",
        shuffle: { kind: "Seeded", seed: new Uint8Array(seed) },
      },
    ],
    [
      {
        Http: {
          location: { Gcp: { bucket_name: "nous-data", filter_directory: "" } },
          token_size_in_bytes: "TwoBytes",
          shuffle: "DontShuffle",
        },
      },
      {
        kind: "Http",
        location: { kind: "Gcp", bucketName: "nous-data", filterDirectory: "" },
        tokenSizeInBytes: "TwoBytes",
        shuffle: { kind: "DontShuffle" },
      },
    ],
  ];
  for (const [toml, expected] of cases) {
    const doc = baseDoc();
    doc.model.LLM.data_location = toml;
    const run = parseDoc(doc);
    assert.deepEqual(run.model.dataLocation, expected);
    assert.deepEqual(parseRunConfig(runConfigToToml(run), "rt").model.dataLocation, expected);
  }
});

Deno.test("every checkpoint variant parses; Ephemeral parses but is rejected", () => {
  const cases: [unknown, Checkpoint][] = [
    [{ Hub: { repo_id: "a/b", revision: "abc" } }, {
      kind: "Hub",
      repo: { repoId: "a/b", revision: "abc" },
    }],
    [{ P2P: { repo_id: "a/b" } }, { kind: "P2P", repo: { repoId: "a/b", revision: null } }],
    [{ Dummy: { repo_id: "" } }, { kind: "Dummy", repo: { repoId: "", revision: null } }],
    [{ Gcs: { bucket: "ckpt", prefix: "run1" } }, {
      kind: "Gcs",
      repo: { bucket: "ckpt", prefix: "run1" },
    }],
    [{ P2PGcs: { bucket: "ckpt" } }, { kind: "P2PGcs", repo: { bucket: "ckpt", prefix: null } }],
  ];
  for (const [toml, expected] of cases) {
    const doc = baseDoc();
    doc.model.LLM.checkpoint = toml;
    assert.deepEqual(parseDoc(doc).model.checkpoint, expected);
  }
  for (const ephemeral of ["Ephemeral", { Ephemeral: {} }]) {
    const doc = baseDoc();
    doc.model.LLM.checkpoint = ephemeral;
    const [issue] = issuesOf(stringify(doc)).issues;
    assert.equal(issue.path, "model.LLM.checkpoint");
    assert.match(issue.message, /Ephemeral checkpoints are not accepted/);
  }
  const emptyHub = baseDoc();
  emptyHub.model.LLM.checkpoint = { Hub: { repo_id: " " } };
  assert.deepEqual(issuePaths(emptyHub), ["model.LLM.checkpoint.Hub.repo_id"]);
  const longBucket = baseDoc();
  longBucket.model.LLM.checkpoint = { Gcs: { bucket: "b".repeat(65) } };
  assert.deepEqual(issuePaths(longBucket), ["model.LLM.checkpoint.Gcs.bucket"]);
});

Deno.test("every lr_schedule variant parses", () => {
  const warmup = { base_lr: 0.01, warmup_steps: 10, warmup_init_lr: 0.001 };
  const typedWarmup = { baseLr: 0.01, warmupSteps: 10, warmupInitLr: 0.001 };
  const cases: [unknown, LrSchedule][] = [
    [{ Constant: warmup }, { kind: "Constant", ...typedWarmup }],
    [{ Linear: { ...warmup, total_steps: 100, final_lr: 0 } }, {
      kind: "Linear",
      ...typedWarmup,
      totalSteps: 100,
      finalLr: 0,
    }],
    [{ Cosine: { ...warmup, total_steps: 25000, final_lr: 1e-4 } }, {
      kind: "Cosine",
      ...typedWarmup,
      totalSteps: 25000,
      finalLr: 1e-4,
    }],
    [
      {
        WarmupStableDecay: {
          ...warmup,
          stable_steps: 100,
          cosine_decay_steps: 50,
          cosine_decay_final_lr: 0.001,
          linear_decay_steps: 20,
          linear_decay_final_lr: 0,
        },
      },
      {
        kind: "WarmupStableDecay",
        ...typedWarmup,
        stableSteps: 100,
        cosineDecaySteps: 50,
        cosineDecayFinalLr: 0.001,
        linearDecaySteps: 20,
        linearDecayFinalLr: 0,
      },
    ],
  ];
  for (const [toml, expected] of cases) {
    const doc = baseDoc();
    doc.model.LLM.lr_schedule = toml;
    assert.deepEqual(parseDoc(doc).model.lrSchedule, expected);
  }
});

Deno.test("lr_schedule sanity rules", () => {
  const bad: [unknown, string[]][] = [
    [{ Constant: { base_lr: -1, warmup_steps: 0, warmup_init_lr: 0 } }, [
      "model.LLM.lr_schedule.Constant.base_lr",
    ]],
    [{ Linear: { base_lr: 1, warmup_steps: 10, warmup_init_lr: 0, total_steps: 5, final_lr: 0 } }, [
      "model.LLM.lr_schedule.Linear.total_steps",
    ]],
    [
      {
        WarmupStableDecay: {
          base_lr: 0.01,
          warmup_steps: 0,
          warmup_init_lr: 0,
          stable_steps: 1,
          cosine_decay_steps: 1,
          cosine_decay_final_lr: 0.02,
          linear_decay_steps: 1,
          linear_decay_final_lr: 0.03,
        },
      },
      [
        "model.LLM.lr_schedule.WarmupStableDecay.cosine_decay_final_lr",
        "model.LLM.lr_schedule.WarmupStableDecay.linear_decay_final_lr",
      ],
    ],
  ];
  for (const [toml, paths] of bad) {
    const doc = baseDoc();
    doc.model.LLM.lr_schedule = toml;
    assert.deepEqual(issuePaths(doc), paths);
  }
  const text = stringify(baseDoc()).replace("base_lr = 0.0004", "base_lr = nan");
  assert.deepEqual(issuesOf(text).issues.map((i) => i.message), ["must be a finite number"]);
});

Deno.test("every optimizer variant parses; Dummy is rejected", () => {
  const cases: [unknown, OptimizerDefinition][] = [
    [{ AdamW: { betas: [0.9, 0.95], weight_decay: 0.1, eps: 1e-8 } }, {
      kind: "AdamW",
      betas: [0.9, 0.95],
      weightDecay: 0.1,
      eps: 1e-8,
      clipGradNorm: null,
    }],
    [{ AdamW: { betas: [0, 0.5], weight_decay: 0, eps: 1, clip_grad_norm: 2 } }, {
      kind: "AdamW",
      betas: [0, 0.5],
      weightDecay: 0,
      eps: 1,
      clipGradNorm: 2,
    }],
    [
      {
        Distro: {
          clip_grad_norm: 1,
          weight_decay: 0.1,
          compression_decay: 1,
          compression_topk: 4096,
          compression_chunk: 64,
          quantize_1bit: false,
        },
      },
      {
        kind: "Distro",
        clipGradNorm: 1,
        weightDecay: 0.1,
        compressionDecay: 1,
        compressionTopk: 4096,
        compressionChunk: 64,
        quantize1bit: false,
      },
    ],
  ];
  for (const [toml, expected] of cases) {
    const doc = baseDoc();
    doc.model.LLM.optimizer = toml;
    assert.deepEqual(parseDoc(doc).model.optimizer, expected);
  }
  const dummy = baseDoc();
  dummy.model.LLM.optimizer = "Dummy";
  assert.deepEqual(issuePaths(dummy), ["model.LLM.optimizer"]);
});

Deno.test("optimizer range rules", () => {
  const distro = (o: Doc) => ({
    Distro: {
      compression_decay: 0.999,
      compression_chunk: 64,
      compression_topk: 8,
      quantize_1bit: true,
      ...o,
    },
  });
  const cases: [unknown, string[]][] = [
    [distro({ compression_decay: 0 }), ["model.LLM.optimizer.Distro.compression_decay"]],
    [distro({ compression_decay: 1.5 }), ["model.LLM.optimizer.Distro.compression_decay"]],
    [distro({ compression_chunk: 0 }), ["model.LLM.optimizer.Distro.compression_chunk"]],
    [distro({ compression_topk: 0 }), ["model.LLM.optimizer.Distro.compression_topk"]],
    [distro({ compression_topk: 4097 }), ["model.LLM.optimizer.Distro.compression_topk"]],
    [distro({ clip_grad_norm: 0 }), ["model.LLM.optimizer.Distro.clip_grad_norm"]],
    [distro({ weight_decay: -0.1 }), ["model.LLM.optimizer.Distro.weight_decay"]],
    [{ AdamW: { betas: [-0.1, 0.9], weight_decay: 0, eps: 1e-8 } }, [
      "model.LLM.optimizer.AdamW.betas[0]",
    ]],
    [{ AdamW: { betas: [0.9], weight_decay: 0, eps: 1e-8 } }, ["model.LLM.optimizer.AdamW.betas"]],
    [{ AdamW: { betas: [0.9, 0.95], weight_decay: 0, eps: 0 } }, [
      "model.LLM.optimizer.AdamW.eps",
    ]],
  ];
  for (const [toml, paths] of cases) {
    const doc = baseDoc();
    doc.model.LLM.optimizer = toml;
    assert.deepEqual(issuePaths(doc), paths, JSON.stringify(toml));
  }
});

Deno.test("coordinator config rules of Psyche's check_error", () => {
  const cases: [Doc, string[]][] = [
    [{ warmup_time: 600 }, ["config.warmup_time"]],
    [{ cooldown_time: 0 }, ["config.cooldown_time"]],
    [{ max_round_train_time: 0 }, ["config.max_round_train_time"]],
    [{ max_round_train_time: 600 }, ["config.max_round_train_time"]],
    [{ round_witness_time: 0 }, ["config.round_witness_time"]],
    [{ epoch_time: 0, warmup_time: 0, max_round_train_time: 1 }, [
      "config.warmup_time",
      "config.max_round_train_time",
      "config.epoch_time",
    ]],
    [{ total_steps: 0 }, ["config.total_steps"]],
    [{ min_clients: 0, witness_nodes: 0 }, ["config.min_clients"]],
    [{ init_min_clients: 1 }, ["config.init_min_clients"]],
    [{ witness_nodes: 3 }, ["config.witness_nodes"]],
    [{
      min_clients: 40,
      init_min_clients: 40,
      witness_nodes: 33,
      global_batch_size_start: 64,
      global_batch_size_end: 64,
    }, ["config.witness_nodes"]],
    [{ global_batch_size_start: 0 }, ["config.global_batch_size_start"]],
    [{ global_batch_size_end: 4 }, ["config.global_batch_size_end"]],
    [{ init_min_clients: 9, min_clients: 9 }, ["config.init_min_clients"]],
    [{ verification_percent: 101 }, ["config.verification_percent"]],
    [{ waiting_for_members_extra_time: 0 }, ["config.waiting_for_members_extra_time"]],
    [{ max_clients: 1 }, ["config.init_min_clients"]],
    [{ max_clients: 65536 }, ["config.max_clients"]],
  ];
  for (const [overrides, paths] of cases) {
    const doc = baseDoc();
    Object.assign(doc.config, overrides);
    assert.deepEqual(issuePaths(doc), paths, JSON.stringify(overrides));
  }
  const big = baseDoc();
  big.config.max_clients = 65535;
  assert.equal(parseDoc(big).config.maxClients, 65535);
});

Deno.test("cold_start_warmup_steps is bounded by the rounds one epoch can hold", () => {
  // (600 - 30) / 30 = 19 rounds
  const ok = baseDoc();
  ok.model.LLM.cold_start_warmup_steps = 19;
  assert.equal(parseDoc(ok).model.coldStartWarmupSteps, 19);
  const bad = baseDoc();
  bad.model.LLM.cold_start_warmup_steps = 20;
  const [issue] = issuesOf(stringify(bad)).issues;
  assert.equal(issue.path, "model.LLM.cold_start_warmup_steps");
  assert.match(issue.message, /\(600 - 30\) \/ 30 = 19/);
  const absent = baseDoc();
  delete absent.model.LLM.cold_start_warmup_steps;
  assert.equal(parseDoc(absent).model.coldStartWarmupSteps, 0);
});

Deno.test("snapshot_dtype is f32 or bf16, f32 when absent, and survives a write", () => {
  const absent = baseDoc();
  assert.equal(parseDoc(absent).model.snapshotDtype, "f32");
  for (const dtype of ["f32", "bf16"] as const) {
    const doc = baseDoc();
    doc.model.LLM.snapshot_dtype = dtype;
    const parsed = parseDoc(doc);
    assert.equal(parsed.model.snapshotDtype, dtype);
    assert.equal(parseRunConfig(runConfigToToml(parsed), "rt").model.snapshotDtype, dtype);
  }
  for (const wrong of ["f16", "BF16", 16]) {
    const bad = baseDoc();
    (bad.model.LLM as Record<string, unknown>).snapshot_dtype = wrong;
    const [issue] = issuesOf(stringify(bad)).issues;
    assert.equal(issue.path, "model.LLM.snapshot_dtype");
    assert.match(issue.message, /one of "f32", "bf16"/);
  }
  // A model built in code (not read from TOML) gets the same check.
  const model = { ...parseDoc(baseDoc()).model, snapshotDtype: "fp8" as "f32" };
  const [issue] = validateRunConfigDraft({ config: {}, model, progress: {} });
  assert.equal(issue.path, "model.LLM.snapshot_dtype");
  assert.match(issue.message, /expected one of "f32", "bf16"/);
});

Deno.test("string capacities and formats", () => {
  const cases: [(d: Doc) => void, string][] = [
    [(d) => (d.run_id = "x".repeat(33)), "run_id"],
    [(d) => (d.run_id = "é".repeat(17)), "run_id"], // 34 UTF-8 bytes
    [(d) => (d.run_id = ""), "run_id"],
    [
      (d) => (d.model.LLM.data_location = { Server: `${"h".repeat(60)}:20001` }),
      "model.LLM.data_location.Server",
    ],
    [(d) => (d.model.LLM.data_location = { Server: "host:0" }), "model.LLM.data_location.Server"],
    [(d) => (d.model.LLM.data_location = { Local: "" }), "model.LLM.data_location.Local"],
    [(d) => (d.model.LLM.data_location = { Local: "a\0b" }), "model.LLM.data_location.Local"],
    [
      (d) => (d.model.LLM.data_location = { WeightedHttp: "ftp://x/y.json" }),
      "model.LLM.data_location.WeightedHttp",
    ],
    [
      (d) => (d.model.LLM.data_location = { Preprocessed: "p".repeat(193) }),
      "model.LLM.data_location.Preprocessed",
    ],
  ];
  for (const [mutate, path] of cases) {
    const doc = baseDoc();
    mutate(doc);
    assert.deepEqual(issuePaths(doc), [path], path);
  }
  const ipv6 = baseDoc();
  ipv6.model.LLM.data_location = { Server: "[::1]:20001" };
  assert.equal(parseDoc(ipv6).model.dataLocation.kind, "Server");
});

Deno.test("[progress] is optional, but a present table needs every key, and step must be > 0", () => {
  const doc = baseDoc();
  doc.progress = { epoch: 3, step: 1200, epoch_start_data_index: 96 };
  assert.deepEqual(parseDoc(doc).progress, { epoch: 3, step: 1200, epochStartDataIndex: 96 });
  doc.progress = { epoch: 0, step: 0, epoch_start_data_index: 0 };
  assert.deepEqual(issuePaths(doc), ["progress.step"]);
  // A saved state without its epoch must not silently restart at epoch 0.
  doc.progress = { step: 1200, epoch_start_data_index: 96 };
  assert.throws(
    () => parseDoc(doc),
    (e) =>
      e instanceof ConfigError && e.issues.length === 1 &&
      formatIssue(e.issues[0]) === "progress.epoch: missing (required: a u16 integer (0..65535))",
  );
  doc.progress = {};
  assert.deepEqual(issuePaths(doc), [
    "progress.epoch",
    "progress.step",
    "progress.epoch_start_data_index",
  ]);
});

Deno.test("validateRunConfig checks values built in code, integer widths included", () => {
  const run = parseDoc(baseDoc());
  assert.deepEqual(validateRunConfig(run), []);
  const broken: RunConfig = {
    ...run,
    config: { ...run.config, epochTime: 12.0005, minClients: 70000 },
    model: { ...run.model, maxSeqLen: -3 },
  };
  assert.deepEqual(validateRunConfig(broken).map((i) => i.path), [
    "config.epoch_time",
    "config.min_clients",
    "model.LLM.max_seq_len",
  ]);
  // rules that depend on a mistyped value are skipped rather than piling up follow-on errors
  const oneBad: RunConfig = { ...run, config: { ...run.config, minClients: 0.5 } };
  assert.deepEqual(validateRunConfig(oneBad).map((i) => i.path), ["config.min_clients"]);
});

Deno.test("a TOML syntax error is one issue with its line", () => {
  const error = issuesOf('run_id = "a"\n[config\nwarmup_time = 1');
  assert.equal(error.issues.length, 1);
  assert.equal(error.issues[0].path, "(toml)");
  assert.match(error.issues[0].message, /line 2/);
});

// ---- round trip over generated configs ----

const u = (max: number) => fc.integer({ min: 0, max });
const rate = fc.double({ min: 0, max: 1, noNaN: true, noDefaultInfinity: true });
const name = fc.stringMatching(/^[a-z0-9][a-z0-9/_.-]{0,30}$/);

const dataLocationArb: fc.Arbitrary<DataLocation> = fc.oneof(
  fc.constant({ kind: "Dummy" } as const),
  fc.record({ kind: fc.constant("Server" as const), address: fc.constant("10.0.0.1:9000") }),
  fc.record({ kind: fc.constant("Local" as const), path: name }),
  fc.record({ kind: fc.constant("Preprocessed" as const), source: name }),
  fc.record({
    kind: fc.constant("Http" as const),
    location: fc.oneof(
      fc.record({
        kind: fc.constant("NumberedFiles" as const),
        urlTemplate: fc.constant("https://example.org/{}.ds"),
        startIndex: u(0xffff_ffff),
        nLeftPadZeros: u(255),
        numFiles: fc.integer({ min: 1, max: 0xffff_ffff }),
      }),
      fc.record({
        kind: fc.constant("Gcp" as const),
        bucketName: name,
        filterDirectory: fc.oneof(fc.constant(""), name),
      }),
    ),
    tokenSizeInBytes: fc.constantFrom("TwoBytes" as const, "FourBytes" as const),
    shuffle: fc.oneof(
      fc.constant({ kind: "DontShuffle" } as const),
      fc.record({
        kind: fc.constant("Seeded" as const),
        seed: fc.uint8Array({ minLength: 32, maxLength: 32 }),
      }),
    ),
  }),
);

const checkpointArb: fc.Arbitrary<Checkpoint> = fc.oneof(
  fc.record({
    kind: fc.constantFrom("Hub" as const, "P2P" as const, "Dummy" as const),
    repo: fc.record({ repoId: name, revision: fc.option(name, { nil: null }) }),
  }),
  fc.record({
    kind: fc.constantFrom("Gcs" as const, "P2PGcs" as const),
    repo: fc.record({ bucket: name, prefix: fc.option(name, { nil: null }) }),
  }),
);

const optimizerArb: fc.Arbitrary<OptimizerDefinition> = fc.oneof(
  fc.record({
    kind: fc.constant("AdamW" as const),
    betas: fc.tuple(
      fc.double({ min: 0, max: 0.999, noNaN: true }),
      fc.double({ min: 0, max: 0.999, noNaN: true }),
    ),
    weightDecay: rate,
    eps: fc.double({ min: 1e-12, max: 1, noNaN: true }),
    clipGradNorm: fc.option(fc.double({ min: 0.01, max: 10, noNaN: true }), { nil: null }),
  }),
  fc.integer({ min: 1, max: 255 }).chain((chunk) =>
    fc.record({
      kind: fc.constant("Distro" as const),
      clipGradNorm: fc.option(fc.double({ min: 0.01, max: 10, noNaN: true }), { nil: null }),
      weightDecay: fc.option(rate, { nil: null }),
      compressionDecay: fc.double({ min: 0.001, max: 1, noNaN: true }),
      compressionTopk: fc.integer({ min: 1, max: Math.min(chunk * chunk, 0xffff) }),
      compressionChunk: fc.constant(chunk),
      quantize1bit: fc.boolean(),
    })
  ),
);

function lrArb(runTotalSteps: number): fc.Arbitrary<LrSchedule> {
  return fc.record({ baseLr: rate, warmupSteps: u(1000), warmupInitLr: rate }).chain((w) =>
    fc.oneof(
      fc.constant({ kind: "Constant" as const, ...w }),
      fc.record({
        kind: fc.constant("Linear" as const),
        totalSteps: fc.integer({ min: w.warmupSteps, max: 1_000_000 }),
        finalLr: rate,
      }).map((s) => ({ ...w, ...s })),
      fc.record({
        kind: fc.constant("Cosine" as const),
        totalSteps: fc.integer({ min: Math.max(w.warmupSteps + 1, runTotalSteps), max: 2_000_000 }),
        finalLr: rate,
      }).map((s) => ({ ...w, ...s })),
      fc.tuple(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
      )
        .chain(([a, b]) =>
          fc.record({
            kind: fc.constant("WarmupStableDecay" as const),
            stableSteps: u(100_000),
            cosineDecaySteps: u(100_000),
            cosineDecayFinalLr: fc.constant(w.baseLr * a),
            linearDecaySteps: u(100_000),
            linearDecayFinalLr: fc.constant(w.baseLr * a * b),
          })
        ).map((s) => ({ ...w, ...s })),
    )
  );
}

const runConfigArb: fc.Arbitrary<RunConfig> = fc.record({
  epochTime: fc.integer({ min: 2, max: 1_000_000 }),
  minClients: fc.integer({ min: 1, max: 100 }),
  totalSteps: fc.integer({ min: 1, max: 1_000_000 }),
}).chain((base) =>
  fc.record({
    runId: fc.stringMatching(/^[a-z][a-z0-9-]{0,31}$/),
    runState: fc.constantFrom("WaitingForMembers" as const, "Paused" as const),
    config: fc.record({
      warmupTime: u(base.epochTime - 1),
      cooldownTime: fc.integer({ min: 1, max: 10_000 }),
      maxRoundTrainTime: fc.integer({ min: 1, max: base.epochTime - 1 }),
      roundWitnessTime: fc.integer({ min: 1, max: 100 }),
      globalBatchSizeWarmupTokens: u(Number.MAX_SAFE_INTEGER),
      epochTime: fc.constant(base.epochTime),
      totalSteps: fc.constant(base.totalSteps),
      initMinClients: fc.integer({ min: base.minClients, max: 200 }),
      minClients: fc.constant(base.minClients),
      witnessNodes: u(Math.min(base.minClients, 32)),
      globalBatchSizeStart: fc.constant(200),
      globalBatchSizeEnd: fc.integer({ min: 200, max: 0xffff }),
      verificationPercent: u(100),
      waitingForMembersExtraTime: fc.integer({ min: 1, max: 255 }),
      maxClients: fc.integer({ min: 200, max: 0xffff }),
      verificationBarEpochs: u(0xffff),
    }),
    model: fc.record({
      architecture: fc.constantFrom(
        "HfLlama" as const,
        "HfDeepseek" as const,
        "HfAuto" as const,
        "Torchtitan" as const,
      ),
      dataType: fc.constantFrom("Pretraining" as const, "Finetuning" as const),
      maxSeqLen: fc.integer({ min: 1, max: 0xffff_ffff }),
      coldStartWarmupSteps: fc.constant(0),
      snapshotDtype: fc.constantFrom("f32" as const, "bf16" as const),
      dataLocation: dataLocationArb,
      checkpoint: checkpointArb,
      lrSchedule: lrArb(base.totalSteps),
      optimizer: optimizerArb,
    }),
    progress: fc.record({
      epoch: u(0xffff),
      step: fc.integer({ min: 1, max: 0xffff_ffff }),
      epochStartDataIndex: u(Number.MAX_SAFE_INTEGER),
    }),
  })
);

Deno.test("property: runConfigToToml then parseRunConfig gives back the same config", () => {
  fc.assert(
    fc.property(runConfigArb, (generated) => {
      const run = structuredClone(generated); // plain prototypes, as the parser builds
      assert.deepEqual(validateRunConfig(run), []);
      assert.deepEqual(parseRunConfig(runConfigToToml(run), "round trip"), run);
    }),
    { numRuns: 200 },
  );
});

/** Every key path of a document, for mutation. */
function keyPaths(doc: Doc, prefix: string[] = []): string[][] {
  return Object.entries(doc).flatMap(([key, value]) => {
    const path = [...prefix, key];
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? [path, ...keyPaths(value, path)]
      : [path];
  });
}

const BASE_PATHS = keyPaths(baseDoc());
const tomlValue = fc.oneof(
  fc.integer({ min: -5, max: 70_000 }),
  fc.double(),
  fc.boolean(),
  fc.string({ maxLength: 8 }),
  fc.constantFrom("Dummy", "Hub", "Ephemeral", "TwoBytes", "WaitingForMembers"),
  fc.array(fc.integer({ min: -1, max: 300 }), { maxLength: 33 }),
  fc.dictionary(fc.constantFrom("Server", "Local", "Hub", "x"), fc.string({ maxLength: 4 }), {
    maxKeys: 2,
  }),
);

Deno.test("property: any mutation of a valid config is accepted or rejected with a ConfigError", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          path: fc.constantFrom(...BASE_PATHS),
          value: fc.option(tomlValue, { nil: undefined }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
      (mutations) => {
        const doc = baseDoc();
        for (const { path, value } of mutations) {
          let table: Doc = doc;
          for (const key of path.slice(0, -1)) {
            if (table[key] === null || typeof table[key] !== "object") break;
            table = table[key];
          }
          const last = path[path.length - 1];
          if (value === undefined) delete table[last];
          else table[last] = value;
        }
        let text: string;
        try {
          text = stringify(doc);
        } catch {
          return; // not representable as TOML (e.g. NaN inside an array)
        }
        try {
          const run = parseRunConfig(text, "fuzz.toml");
          assert.deepEqual(validateRunConfig(run), []);
        } catch (error) {
          assert.ok(error instanceof ConfigError, String(error));
          assert.ok(error.issues.length > 0);
          for (const issue of error.issues) assert.ok(issue.path.length > 0);
        }
      },
    ),
    { numRuns: 400 },
  );
});

Deno.test("clip_grad_norm = 2^53 + 1 is refused, not rounded to 2^53", () => {
  const doc = baseDoc();
  doc.model.LLM.optimizer.Distro.clip_grad_norm = 2n ** 53n + 1n;
  const text = stringify(doc);
  assert.match(text, /clip_grad_norm = 9007199254740993/);
  const error = issuesOf(text);
  assert.deepEqual(error.issues.map(formatIssue), [
    "model.LLM.optimizer.Distro.clip_grad_norm = 9007199254740993: integer beyond ±(2^53 − 1) " +
    "= ±9007199254740991 cannot be held exactly; write a float if you mean one",
  ]);
  doc.config.global_batch_size_warmup_tokens = 2n ** 53n + 1n;
  assert.deepEqual(issuePaths(doc), [
    "config.global_batch_size_warmup_tokens",
    "model.LLM.optimizer.Distro.clip_grad_norm",
  ]);
});

Deno.test("optimizer and schedule floats must lie in their sane range", () => {
  const cases: [string, (d: Doc) => void, string][] = [
    ["base_lr", (d) => (d.model.LLM.lr_schedule.Cosine.base_lr = 1.5), "must be at most 1"],
    ["final_lr", (d) => (d.model.LLM.lr_schedule.Cosine.final_lr = 2), "must be at most 1"],
    [
      "clip_grad_norm",
      (d) => (d.model.LLM.optimizer.Distro.clip_grad_norm = 9007199254740993.0),
      "must be at most 1000000 (leave it out for no clipping)",
    ],
    ["weight_decay", (d) => (d.model.LLM.optimizer.Distro.weight_decay = 10), "must be at most 1"],
    ["eps", (d) => {
      d.model.LLM.optimizer = {
        AdamW: { betas: [0.9, 0.95], weight_decay: 0.1, eps: 3, clip_grad_norm: 1 },
      };
    }, "must be at most 1"],
  ];
  for (const [key, mutate, message] of cases) {
    const doc = baseDoc();
    mutate(doc);
    const issues = issuesOf(stringify(doc)).issues;
    assert.equal(issues.length, 1, key);
    assert.ok(issues[0].path.endsWith(`.${key}`), issues[0].path);
    assert.equal(issues[0].message, message, key);
  }
  const edge = baseDoc();
  edge.model.LLM.lr_schedule.Cosine.base_lr = 1;
  edge.model.LLM.optimizer.Distro.clip_grad_norm = 1e6;
  edge.model.LLM.optimizer.Distro.weight_decay = 1;
  assert.equal(parseDoc(edge).model.optimizer.kind, "Distro", "the bounds themselves pass");
});

Deno.test("a run_id with a control or bidi character is refused, naming the code point", () => {
  const codePoints = [0x0a, 0x0d, 0x1b, 0x7f, 0x85, 0x200e, 0x200f, 0x202a, 0x202e, 0x2066, 0x2069];
  for (const codePoint of codePoints) {
    const doc = baseDoc();
    doc.run_id = `run${String.fromCodePoint(codePoint)}x`;
    const issues = issuesOf(stringify(doc)).issues;
    const hex = codePoint.toString(16).toUpperCase().padStart(4, "0");
    assert.deepEqual(issues.map((i) => [i.path, i.message]), [[
      "run_id",
      `contains U+${hex} at character 4 (control and bidirectional-formatting characters ` +
      "are not allowed)",
    ]]);
    assert.ok(!/[\n\u202E]/.test(formatIssue(issues[0])), "the message itself is escaped");
  }
  const accents = baseDoc();
  accents.run_id = "über-🚀";
  assert.equal(parseDoc(accents).runId, "über-🚀");
});
