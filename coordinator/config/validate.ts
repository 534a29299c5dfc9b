/**
 * The rules a run config must satisfy before a coordinator will run it: Psyche's
 * `CoordinatorConfig::check_error`, `Model::check`, `CoordinatorProgress::check` and
 * `check_cold_start_warmup_steps`, plus the sanity checks Psyche leaves to panics at run time
 * (schedule step order, optimizer ranges, string capacities, control characters in the run
 * id). Pure: values in, issues out.
 *
 * Works on a draft whose fields may be `undefined` (a value the TOML reader already
 * rejected); a rule is skipped when a value it needs is missing, so every other problem is
 * still reported.
 *
 * @module
 */
import type { RunConfigDraft } from "./types.ts";
import {
  type ConfigIssue,
  type DataLocation,
  durationProblem,
  type HttpLocation,
  INTEGER_MAX,
  type IntegerKind,
  type LrSchedule,
  type OptimizerDefinition,
  renderValue,
  unprintableProblem,
} from "../../common/mod.ts";
import {
  type Checkpoint,
  type CoordinatorConfig,
  type CoordinatorProgress,
  type LlmModel,
  MAX_CLIENTS_LIMIT,
  MAX_RUN_ID_BYTES,
  MAX_STRING_BYTES,
  MAX_URL_BYTES,
  MAX_WAITING_FOR_MEMBERS_EXTRA_TIME,
  MAX_WITNESSES,
  roundsPerEpoch,
  SNAPSHOT_DTYPES,
} from "../core/mod.ts";

/**
 * Largest `global_batch_size_start`/`_end`: the u16 width Psyche gives these fields (and our
 * state encoding keeps), i.e. 65,535 sequences per step.
 */
export const MAX_GLOBAL_BATCH_SIZE = 0xffff;

/**
 * Upper bounds of the optimizer's floats. Psyche has none; a value past these is a typo, not a
 * choice (AdamW's and DisTrO's step is about `lr` per parameter, so a rate above 1 diverges at
 * once), and it is refused before a run is started on it. The Solana program checks the same
 * bounds (program/model_rules.c).
 */
export const MAX_LEARNING_RATE = 1;
/** Largest `weight_decay` (θ shrinks by `lr · weight_decay` per step). */
export const MAX_WEIGHT_DECAY = 1;
/** Largest AdamW `eps`. */
export const MAX_ADAM_EPS = 1;
/** Largest `clip_grad_norm`; a run that wants no clipping leaves the key out. */
export const MAX_CLIP_GRAD_NORM = 1e6;

const encoder = new TextEncoder();

/** Collects issues; each rule is skipped when its value is missing or already mistyped. */
class Checker {
  readonly #issues: ConfigIssue[];
  readonly #mistyped = new Set<string>();

  constructor(issues: ConfigIssue[]) {
    this.#issues = issues;
  }

  fail(path: string, value: unknown, message: string): void {
    this.#issues.push({
      path,
      found: value === undefined ? null : renderValue(value),
      message,
    });
  }

  /** Checks integer width (needed for values built in code, which no TOML reader saw). */
  uint(path: string, value: number | undefined, kind: IntegerKind): void {
    if (value === undefined) return;
    if (!Number.isInteger(value) || value < 0 || value > INTEGER_MAX[kind]) {
      this.#mistyped.add(path);
      this.fail(path, value, `expected a ${kind} integer (0..${INTEGER_MAX[kind]})`);
    }
  }

  /**
   * Checks a duration in seconds: finite, >= 0, at most `max`, whole milliseconds (integers
   * mean whole seconds, as in Psyche; fractions need the TCP coordinator's millisecond clock).
   */
  seconds(path: string, value: number | undefined, max?: number): void {
    if (value === undefined) return;
    const problem = durationProblem(value, max);
    if (problem !== null) {
      this.#mistyped.add(path);
      this.fail(path, value, `${problem} (a duration in seconds)`);
    }
  }

  /** Checks that a float is finite (needed before any comparison means anything). */
  finite(path: string, value: number | null | undefined): void {
    if (value === undefined || value === null) return;
    if (!Number.isFinite(value)) {
      this.#mistyped.add(path);
      this.fail(path, value, "must be a finite number");
    }
  }

  /** `value`, or `undefined` when its path failed a width/finiteness check (so rules that
   * depend on it are skipped instead of piling up follow-on errors). */
  usable<T>(path: string, value: T | undefined): T | undefined {
    return this.#mistyped.has(path) ? undefined : value;
  }

  rule<T>(
    path: string,
    value: T | null | undefined,
    ok: (value: T) => boolean,
    message: string | ((value: T) => string),
  ): void {
    if (value === undefined || value === null || this.#mistyped.has(path)) return;
    if (!ok(value)) this.fail(path, value, typeof message === "string" ? message : message(value));
  }

  /** A string of at most `maxBytes` UTF-8 bytes, without NULs (Psyche's FixedString). */
  fixedString(path: string, value: string | null | undefined, maxBytes: number): void {
    if (value === undefined || value === null) return;
    const bytes = encoder.encode(value).length;
    if (bytes > maxBytes) this.fail(path, value, `too long: ${bytes} bytes, at most ${maxBytes}`);
    if (value.includes("\0")) this.fail(path, value, "must not contain NUL characters");
  }

  /** An identifier shown on terminals: no control or bidi character (common/printable.ts). */
  printable(path: string, value: string | null | undefined): void {
    if (value === undefined || value === null || value.includes("\0")) return; // NUL: see above
    const problem = unprintableProblem(value);
    if (problem !== null) this.fail(path, value, problem);
  }

  nonEmpty(path: string, value: string | null | undefined): void {
    this.rule(path, value, (s) => s.trim() !== "", "must not be empty");
  }

  httpUrl(path: string, value: string | undefined): void {
    this.rule(path, value, isHttpUrl, "expected an http:// or https:// URL");
  }
}

function isHttpUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const protocol = new URL(text).protocol;
  return protocol === "http:" || protocol === "https:";
}

/**
 * Every rule violation in a run config (or a draft of one), in file order. Empty means valid.
 */
export function validateRunConfigDraft(draft: RunConfigDraft): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const v = new Checker(issues);
  if (draft.runId !== undefined) {
    v.nonEmpty("run_id", draft.runId);
    v.fixedString("run_id", draft.runId, MAX_RUN_ID_BYTES);
    v.printable("run_id", draft.runId);
  }
  checkCoordinatorConfig(v, draft.config);
  checkModel(v, draft.model, draft.config);
  checkProgress(v, draft.progress);
  return issues;
}

function checkCoordinatorConfig(v: Checker, c: Partial<CoordinatorConfig>): void {
  const p = (key: string) => `config.${key}`;
  v.seconds(p("warmup_time"), c.warmupTime);
  v.seconds(p("cooldown_time"), c.cooldownTime);
  v.seconds(p("max_round_train_time"), c.maxRoundTrainTime);
  v.seconds(p("round_witness_time"), c.roundWitnessTime);
  v.uint(p("global_batch_size_warmup_tokens"), c.globalBatchSizeWarmupTokens, "u64");
  v.seconds(p("epoch_time"), c.epochTime);
  v.uint(p("total_steps"), c.totalSteps, "u32");
  v.uint(p("init_min_clients"), c.initMinClients, "u16");
  v.uint(p("min_clients"), c.minClients, "u16");
  v.uint(p("witness_nodes"), c.witnessNodes, "u16");
  v.uint(p("global_batch_size_start"), c.globalBatchSizeStart, "u16");
  v.uint(p("global_batch_size_end"), c.globalBatchSizeEnd, "u16");
  v.uint(p("verification_percent"), c.verificationPercent, "u8");
  v.seconds(
    p("waiting_for_members_extra_time"),
    c.waitingForMembersExtraTime,
    MAX_WAITING_FOR_MEMBERS_EXTRA_TIME,
  );
  v.uint(p("max_clients"), c.maxClients, "u16");
  v.uint(p("verification_bar_epochs"), c.verificationBarEpochs, "u16");

  const epochTime = v.usable(p("epoch_time"), c.epochTime);
  const minClients = v.usable(p("min_clients"), c.minClients);
  const maxClients = v.usable(p("max_clients"), c.maxClients);
  const globalBatchSizeStart = v.usable(p("global_batch_size_start"), c.globalBatchSizeStart);
  const initMinClients = c.initMinClients;
  v.rule(
    p("warmup_time"),
    c.warmupTime,
    (x) => epochTime === undefined || x < epochTime,
    () => `must be less than config.epoch_time (${epochTime})`,
  );
  v.rule(p("cooldown_time"), c.cooldownTime, (x) => x > 0, "must be > 0");
  v.rule(p("max_round_train_time"), c.maxRoundTrainTime, (x) => x > 0, "must be > 0");
  v.rule(
    p("max_round_train_time"),
    c.maxRoundTrainTime,
    (x) => x === 0 || epochTime === undefined || x < epochTime,
    () => `must be less than config.epoch_time (${epochTime})`,
  );
  v.rule(p("round_witness_time"), c.roundWitnessTime, (x) => x > 0, "must be > 0");
  v.rule(p("epoch_time"), epochTime, (x) => x > 0, "must be > 0");
  v.rule(p("total_steps"), c.totalSteps, (x) => x > 0, "must be > 0");
  v.rule(p("min_clients"), minClients, (x) => x > 0, "must be > 0");
  v.rule(
    p("max_clients"),
    maxClients,
    (x) => x >= 1 && x <= MAX_CLIENTS_LIMIT,
    () => `must be between 1 and ${MAX_CLIENTS_LIMIT}`,
  );
  v.rule(
    p("init_min_clients"),
    initMinClients,
    (x) => minClients === undefined || x >= minClients,
    () => `must be at least config.min_clients (${minClients})`,
  );
  v.rule(
    p("init_min_clients"),
    initMinClients,
    (x) => maxClients === undefined || x <= maxClients,
    () => `must be at most config.max_clients (${maxClients})`,
  );
  v.rule(
    p("init_min_clients"),
    initMinClients,
    (x) =>
      globalBatchSizeStart === undefined || globalBatchSizeStart === 0 ||
      x <= globalBatchSizeStart,
    () =>
      `must be at most config.global_batch_size_start (${globalBatchSizeStart}): ` +
      "every client needs at least one sequence per step",
  );
  v.rule(
    p("witness_nodes"),
    c.witnessNodes,
    (x) => minClients === undefined || x <= minClients,
    () => `must be at most config.min_clients (${minClients})`,
  );
  v.rule(
    p("witness_nodes"),
    c.witnessNodes,
    (x) => x <= MAX_WITNESSES,
    `must be at most ${MAX_WITNESSES}`,
  );
  v.rule(p("global_batch_size_start"), globalBatchSizeStart, (x) => x > 0, "must be > 0");
  v.rule(p("global_batch_size_end"), c.globalBatchSizeEnd, (x) => x > 0, "must be > 0");
  v.rule(
    p("global_batch_size_end"),
    c.globalBatchSizeEnd,
    (x) => globalBatchSizeStart === undefined || x >= globalBatchSizeStart,
    () => `must be at least config.global_batch_size_start (${globalBatchSizeStart})`,
  );
  v.rule(
    p("global_batch_size_end"),
    c.globalBatchSizeEnd,
    (x) => x <= MAX_GLOBAL_BATCH_SIZE,
    () => `must be at most ${MAX_GLOBAL_BATCH_SIZE}`,
  );
  v.rule(
    p("verification_percent"),
    c.verificationPercent,
    (x) => x <= 100,
    "must be a percentage (0..100) of each round's batches to verify",
  );
  v.rule(
    p("waiting_for_members_extra_time"),
    c.waitingForMembersExtraTime,
    (x) => x > 0,
    "must be > 0",
  );
}

function checkProgress(v: Checker, progress: Partial<CoordinatorProgress>): void {
  v.uint("progress.epoch", progress.epoch, "u16");
  v.uint("progress.step", progress.step, "u32");
  v.uint("progress.epoch_start_data_index", progress.epochStartDataIndex, "u64");
  v.rule("progress.step", progress.step, (x) => x > 0, "must be > 0 (steps start at 1)");
}

function checkModel(v: Checker, m: Partial<LlmModel>, c: Partial<CoordinatorConfig>): void {
  const p = (key: string) => `model.LLM.${key}`;
  const epochTime = v.usable("config.epoch_time", c.epochTime);
  const warmupTime = v.usable("config.warmup_time", c.warmupTime);
  const maxRoundTrainTime = v.usable("config.max_round_train_time", c.maxRoundTrainTime);
  const totalSteps = v.usable("config.total_steps", c.totalSteps);
  v.uint(p("max_seq_len"), m.maxSeqLen, "u32");
  v.uint(p("cold_start_warmup_steps"), m.coldStartWarmupSteps, "u32");
  v.rule(p("max_seq_len"), m.maxSeqLen, (x) => x > 0, "must be > 0");
  v.rule(
    p("snapshot_dtype"),
    m.snapshotDtype,
    (x) => SNAPSHOT_DTYPES.includes(x),
    `expected one of ${SNAPSHOT_DTYPES.map((d) => JSON.stringify(d)).join(", ")}`,
  );
  if (
    epochTime !== undefined && warmupTime !== undefined && maxRoundTrainTime !== undefined &&
    epochTime > warmupTime && maxRoundTrainTime > 0
  ) {
    const rounds = roundsPerEpoch({ epochTime, warmupTime, maxRoundTrainTime });
    v.rule(
      p("cold_start_warmup_steps"),
      m.coldStartWarmupSteps,
      (x) => x <= rounds,
      () =>
        `must be at most (config.epoch_time - config.warmup_time) / config.max_round_train_time ` +
        `= (${epochTime} - ${warmupTime}) / ${maxRoundTrainTime} = ${rounds} (rounds in one epoch)`,
    );
  }
  if (m.dataLocation !== undefined) checkDataLocation(v, p("data_location"), m.dataLocation);
  if (m.checkpoint !== undefined) checkCheckpoint(v, p("checkpoint"), m.checkpoint);
  if (m.lrSchedule !== undefined) checkLrSchedule(v, p("lr_schedule"), m.lrSchedule, totalSteps);
  if (m.optimizer !== undefined) checkOptimizer(v, p("optimizer"), m.optimizer);
}

function checkDataLocation(v: Checker, base: string, location: DataLocation): void {
  const path = `${base}.${location.kind}`;
  switch (location.kind) {
    case "Dummy":
      return;
    case "Server":
      v.nonEmpty(path, location.address);
      v.fixedString(path, location.address, MAX_STRING_BYTES);
      v.rule(path, location.address, (a) => a.trim() === "" || isHostPort(a), "expected host:port");
      return;
    case "Local":
    case "Preprocessed": {
      const value = location.kind === "Local" ? location.path : location.source;
      v.nonEmpty(path, value);
      v.fixedString(path, value, MAX_URL_BYTES);
      return;
    }
    case "WeightedHttp":
      v.fixedString(path, location.url, MAX_URL_BYTES);
      v.httpUrl(path, location.url);
      return;
    case "Http":
      checkHttpDataLocation(v, path, location);
      return;
    default:
      unreachable(location);
  }
}

/**
 * The rules of one `Http` data location whose keys are at `path` (`location`, `shuffle`), as
 * issues: the run config's `data_location.Http`, or an entry of a `WeightedHttp` mix's JSON
 * (data/weighted_config.ts).
 */
export function validateHttpDataLocation(
  path: string,
  location: Extract<DataLocation, { kind: "Http" }>,
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  checkHttpDataLocation(new Checker(issues), path, location);
  return issues;
}

function checkHttpDataLocation(
  v: Checker,
  path: string,
  location: Extract<DataLocation, { kind: "Http" }>,
): void {
  checkHttpLocation(v, `${path}.location`, location.location);
  if (location.shuffle.kind === "Seeded") {
    v.rule(
      `${path}.shuffle.Seeded`,
      location.shuffle.seed,
      (s) => s.length === 32,
      (s) => `expected 32 bytes, found ${s.length}`,
    );
  }
}

function isHostPort(address: string): boolean {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(address);
  if (match === null) return false;
  const port = Number(match[2]);
  return port >= 1 && port <= 0xffff;
}

function checkHttpLocation(v: Checker, base: string, location: HttpLocation): void {
  const path = `${base}.${location.kind}`;
  switch (location.kind) {
    case "SingleUrl":
      v.fixedString(path, location.url, MAX_URL_BYTES);
      v.httpUrl(path, location.url);
      return;
    case "NumberedFiles": {
      const template = `${path}.url_template`;
      v.fixedString(template, location.urlTemplate, MAX_URL_BYTES);
      v.rule(
        template,
        location.urlTemplate,
        (t) => t.split("{}").length === 2,
        "must contain exactly one {} (where the file number goes)",
      );
      v.rule(
        template,
        location.urlTemplate,
        (t) => t.split("{}").length !== 2 || isHttpUrl(t.replace("{}", "0")),
        "expected an http:// or https:// URL template",
      );
      v.uint(`${path}.start_index`, location.startIndex, "u32");
      v.uint(`${path}.n_left_pad_zeros`, location.nLeftPadZeros, "u8");
      v.uint(`${path}.num_files`, location.numFiles, "u32");
      v.rule(`${path}.num_files`, location.numFiles, (n) => n > 0, "must be > 0");
      return;
    }
    case "Gcp":
      v.nonEmpty(`${path}.bucket_name`, location.bucketName);
      v.fixedString(`${path}.bucket_name`, location.bucketName, MAX_STRING_BYTES);
      v.fixedString(`${path}.filter_directory`, location.filterDirectory, MAX_URL_BYTES);
      return;
    default:
      unreachable(location);
  }
}

function checkCheckpoint(v: Checker, base: string, checkpoint: Checkpoint): void {
  const path = `${base}.${checkpoint.kind}`;
  switch (checkpoint.kind) {
    case "Ephemeral":
      v.fail(
        base,
        "Ephemeral",
        "Ephemeral checkpoints are not accepted in a run config: clients would have no " +
          "model to start from (use Hub, P2P, Gcs, P2PGcs or Dummy)",
      );
      return;
    case "Dummy":
    case "Hub":
    case "P2P":
      if (checkpoint.kind !== "Dummy") v.nonEmpty(`${path}.repo_id`, checkpoint.repo.repoId);
      v.fixedString(`${path}.repo_id`, checkpoint.repo.repoId, MAX_STRING_BYTES);
      v.nonEmpty(`${path}.revision`, checkpoint.repo.revision);
      v.fixedString(`${path}.revision`, checkpoint.repo.revision, MAX_STRING_BYTES);
      return;
    case "Gcs":
    case "P2PGcs":
      v.nonEmpty(`${path}.bucket`, checkpoint.repo.bucket);
      v.fixedString(`${path}.bucket`, checkpoint.repo.bucket, MAX_STRING_BYTES);
      v.fixedString(`${path}.prefix`, checkpoint.repo.prefix, MAX_STRING_BYTES);
      return;
    default:
      unreachable(checkpoint);
  }
}

function checkLrSchedule(
  v: Checker,
  base: string,
  s: LrSchedule,
  runTotalSteps: number | undefined,
): void {
  const p = (key: string) => `${base}.${s.kind}.${key}`;
  const rate = (key: string, value: number) => {
    v.finite(p(key), value);
    v.rule(p(key), value, (x) => x >= 0, "must be >= 0");
    v.rule(p(key), value, (x) => x <= MAX_LEARNING_RATE, `must be at most ${MAX_LEARNING_RATE}`);
  };
  rate("base_lr", s.baseLr);
  rate("warmup_init_lr", s.warmupInitLr);
  v.uint(p("warmup_steps"), s.warmupSteps, "u32");
  switch (s.kind) {
    case "Constant":
      return;
    case "Linear":
    case "Cosine": {
      rate("final_lr", s.finalLr);
      v.uint(p("total_steps"), s.totalSteps, "u32");
      if (s.kind === "Linear") {
        v.rule(
          p("total_steps"),
          s.totalSteps,
          (x) => x >= s.warmupSteps,
          () => `must be at least warmup_steps (${s.warmupSteps})`,
        );
        return;
      }
      v.rule(
        p("total_steps"),
        s.totalSteps,
        (x) => x > s.warmupSteps,
        () => `must be greater than warmup_steps (${s.warmupSteps})`,
      );
      v.rule(
        p("total_steps"),
        s.totalSteps,
        (x) => runTotalSteps === undefined || x >= runTotalSteps,
        () =>
          `must be at least config.total_steps (${runTotalSteps}): past its total_steps ` +
          "a cosine schedule rises again",
      );
      return;
    }
    case "WarmupStableDecay": {
      rate("cosine_decay_final_lr", s.cosineDecayFinalLr);
      rate("linear_decay_final_lr", s.linearDecayFinalLr);
      v.uint(p("stable_steps"), s.stableSteps, "u32");
      v.uint(p("cosine_decay_steps"), s.cosineDecaySteps, "u32");
      v.uint(p("linear_decay_steps"), s.linearDecaySteps, "u32");
      v.rule(
        p("cosine_decay_final_lr"),
        s.cosineDecayFinalLr,
        (x) => x <= s.baseLr,
        () => `must be at most base_lr (${s.baseLr})`,
      );
      v.rule(
        p("linear_decay_final_lr"),
        s.linearDecayFinalLr,
        (x) => x <= s.cosineDecayFinalLr,
        () => `must be at most cosine_decay_final_lr (${s.cosineDecayFinalLr})`,
      );
      const phases = s.warmupSteps + s.stableSteps + s.cosineDecaySteps + s.linearDecaySteps;
      v.rule(
        p("linear_decay_steps"),
        s.linearDecaySteps,
        () => phases <= INTEGER_MAX.u32,
        () => `warmup + stable + cosine + linear decay steps (${phases}) must fit in a u32`,
      );
      return;
    }
    default:
      unreachable(s);
  }
}

function checkOptimizer(v: Checker, base: string, o: OptimizerDefinition): void {
  const p = (key: string) => `${base}.${o.kind}.${key}`;
  const clip = (value: number | null) => {
    v.finite(p("clip_grad_norm"), value);
    v.rule(p("clip_grad_norm"), value, (x) => x > 0, "must be > 0 when given");
    v.rule(
      p("clip_grad_norm"),
      value,
      (x) => x <= MAX_CLIP_GRAD_NORM,
      `must be at most ${MAX_CLIP_GRAD_NORM} (leave it out for no clipping)`,
    );
  };
  const decay = (value: number | null) => {
    v.finite(p("weight_decay"), value);
    v.rule(p("weight_decay"), value, (x) => x >= 0, "must be >= 0");
    v.rule(
      p("weight_decay"),
      value,
      (x) => x <= MAX_WEIGHT_DECAY,
      `must be at most ${MAX_WEIGHT_DECAY}`,
    );
  };
  switch (o.kind) {
    case "Dummy":
      v.fail(
        base,
        "Dummy",
        "the Dummy optimizer is not accepted in a run config (use AdamW or Distro)",
      );
      return;
    case "AdamW":
      o.betas.forEach((beta, i) => {
        v.finite(`${p("betas")}[${i}]`, beta);
        v.rule(`${p("betas")}[${i}]`, beta, (x) => x >= 0 && x < 1, "must be in [0, 1)");
      });
      decay(o.weightDecay);
      v.finite(p("eps"), o.eps);
      v.rule(p("eps"), o.eps, (x) => x > 0, "must be > 0");
      v.rule(p("eps"), o.eps, (x) => x <= MAX_ADAM_EPS, `must be at most ${MAX_ADAM_EPS}`);
      clip(o.clipGradNorm);
      return;
    case "Distro":
      clip(o.clipGradNorm);
      decay(o.weightDecay);
      v.finite(p("compression_decay"), o.compressionDecay);
      v.rule(
        p("compression_decay"),
        o.compressionDecay,
        (x) => x > 0 && x <= 1,
        "must be in (0, 1]",
      );
      v.uint(p("compression_chunk"), o.compressionChunk, "u16");
      v.uint(p("compression_topk"), o.compressionTopk, "u16");
      v.rule(p("compression_chunk"), o.compressionChunk, (x) => x > 0, "must be > 0");
      v.rule(p("compression_topk"), o.compressionTopk, (x) => x > 0, "must be > 0");
      v.rule(
        p("compression_topk"),
        o.compressionTopk,
        (x) => o.compressionChunk === 0 || x <= o.compressionChunk * o.compressionChunk,
        () =>
          `must be at most compression_chunk^2 (${o.compressionChunk}^2 = ` +
          `${o.compressionChunk * o.compressionChunk} values per DCT chunk)`,
      );
      return;
    default:
      unreachable(o);
  }
}

function unreachable(value: never): never {
  throw new Error(`unhandled variant ${JSON.stringify(value)}`);
}

/** The problems of pairing a run config with a TCP data server's `data.toml`. */
export interface DataConfigMismatch {
  /** Problems to report against the run config. */
  run: ConfigIssue[];
  /** Problems to report against the data config. */
  data: ConfigIssue[];
}

/**
 * Checks that a data-server config fits the run it serves: the run must read its data from
 * a `Server` location, and the server's sequences must be `max_seq_len` tokens long.
 */
export function crossCheckDataConfig(
  run: { model: Pick<LlmModel, "dataLocation" | "maxSeqLen"> },
  data: { seqLen: number },
): DataConfigMismatch {
  const mismatch: DataConfigMismatch = { run: [], data: [] };
  const location = run.model.dataLocation;
  if (location.kind !== "Server") {
    mismatch.run.push({
      path: "model.LLM.data_location",
      found: location.kind,
      message: "a data config was given, but the run does not read from a TCP data Server",
    });
  }
  if (data.seqLen !== run.model.maxSeqLen) {
    mismatch.data.push({
      path: "seq_len",
      found: String(data.seqLen),
      message: `must equal the run's model.LLM.max_seq_len (${run.model.maxSeqLen})`,
    });
  }
  return mismatch;
}
