/**
 * `coordinator validate-config --state FILE [--data-config FILE]`: checks a run config (and
 * the TCP data server's config, if given, with the model's vocabulary against the data's
 * largest token id) without starting anything, like Psyche's
 * `psyche-centralized-server validate-config`.
 *
 * Exit codes: 0 valid (prints "ok" and a summary), 1 invalid (prints every problem),
 * 2 usage error or unreadable file.
 *
 * @module
 */
import { dirname } from "node:path";
import {
  type CliIo,
  type EnvLookup,
  EXIT_INVALID,
  EXIT_OK,
  EXIT_USAGE,
  helpText,
  parseFlags,
} from "../../cli/entry.ts";
import { checkModelVocabulary, type VocabularyCheck } from "./model_data_check.ts";
import { type DataServerConfig, parseDataConfig } from "../../data/mod.ts";
import {
  ConfigError,
  type ConfigIssue,
  type DataLocation,
  type LrSchedule,
  type OptimizerDefinition,
  UsageError,
} from "../../common/mod.ts";
import { crossCheckDataConfig, parseRunConfig, type RunConfig } from "../config/mod.ts";

/** The flags of `deno task coordinator validate-config`. */
export const VALIDATE_CONFIG_SPEC = {
  usage: "deno task coordinator validate-config --state FILE [--data-config FILE]",
  summary: "Checks a run config (state.toml) and, optionally, the TCP data server's data.toml: " +
    "with both, also that the run's model (its checkpoint's config.json, found as the clients " +
    'find it) has a vocabulary covering every token id in the data folder. Prints "ok" and a ' +
    "summary when they are valid, or every problem found.",
  flags: {
    state: {
      type: "string",
      value: "FILE",
      description: "the run config to check",
      required: true,
    },
    "data-config": {
      type: "string",
      value: "FILE",
      description: "the data server config to check against the run",
    },
  },
  footer: "Exit status: 0 valid, 1 invalid, 2 bad arguments or unreadable file.",
} as const;

/** Help text of `validate-config`. */
export const VALIDATE_CONFIG_USAGE: string = helpText(VALIDATE_CONFIG_SPEC);

/**
 * Runs `validate-config` with the arguments after the subcommand name; returns the exit code.
 * `env` fills flags not given (`PSYCHE_STATE`, `PSYCHE_DATA_CONFIG`).
 */
export async function validateConfigCommand(
  args: string[],
  io: CliIo,
  env: EnvLookup = {},
): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags(VALIDATE_CONFIG_SPEC, args, { env });
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`validate-config: ${error.message}`);
    io.err("Run with --help for usage.");
    return EXIT_USAGE;
  }
  const values = parsed.values;
  if (parsed.help) {
    io.out(VALIDATE_CONFIG_USAGE);
    return EXIT_OK;
  }
  const statePath = values.state;
  if (statePath === undefined) {
    io.err("validate-config: --state FILE is required. Run with --help for usage.");
    return EXIT_USAGE;
  }
  const dataPath = values["data-config"];

  const stateText = await readOrReport(io, statePath, "run config");
  const dataText = dataPath === undefined ? null : await readOrReport(io, dataPath, "data config");
  if (stateText === undefined || dataText === undefined) return EXIT_USAGE;

  const failures: ConfigError[] = [];
  const run = parseOrCollect(failures, () => parseRunConfig(stateText, statePath));
  let data: DataServerConfig | undefined;
  if (dataPath !== undefined && dataText !== null) {
    data = parseOrCollect(
      failures,
      () => parseDataConfig(dataText, dataPath, { baseDir: dirname(dataPath) }),
    );
  }
  let vocabulary: VocabularyCheck | undefined;
  if (run !== undefined && data !== undefined && dataPath !== undefined) {
    const mismatch = crossCheckDataConfig(run, data);
    const dataIssues: ConfigIssue[] = [...mismatch.data];
    if (!(await io.isDirectory(data.dir))) {
      dataIssues.unshift({
        path: "dir",
        found: JSON.stringify(data.dir),
        message: "no such directory (relative paths resolve against the data config's folder)",
      });
    } else {
      vocabulary = await checkModelVocabulary(run, data);
      const issue = vocabularyIssue(data, vocabulary);
      if (issue !== null) dataIssues.push(issue);
    }
    if (mismatch.run.length > 0) failures.push(new ConfigError(statePath, mismatch.run));
    if (dataIssues.length > 0) failures.push(new ConfigError(dataPath, dataIssues));
  }
  if (failures.length > 0) {
    for (const failure of failures) io.err(`invalid: ${failure.message}`);
    return EXIT_INVALID;
  }
  if (run !== undefined) {
    io.out(`ok: ${statePath}`);
    for (const line of describeRunConfig(run)) io.out(`  ${line}`);
  }
  if (data !== undefined && dataPath !== undefined) {
    io.out(`ok: ${dataPath}`);
    for (const line of describeDataConfig(data)) io.out(`  ${line}`);
    if (vocabulary !== undefined) io.out(`  ${describeVocabulary(vocabulary)}`);
  }
  return EXIT_OK;
}

/** The data-config issue a vocabulary check found, or null. */
function vocabularyIssue(data: DataServerConfig, check: VocabularyCheck): ConfigIssue | null {
  const found = JSON.stringify(data.dir);
  switch (check.kind) {
    case "Fits":
    case "Skipped":
      return null;
    case "BadData":
      return { path: "dir", found, message: check.reason };
    case "TooSmall": {
      const { scan } = check;
      return {
        path: "dir",
        found,
        message:
          `holds token id ${scan.maxToken} (${scan.file}, byte offset ${scan.byteOffset}), ` +
          `outside the model's vocabulary: vocab_size ${check.vocabSize} in ${check.configFile}; ` +
          "every batch would fail",
      };
    }
  }
}

/** One summary line about the vocabulary check. */
export function describeVocabulary(check: VocabularyCheck): string {
  switch (check.kind) {
    case "Fits":
    case "TooSmall": {
      const { scan } = check;
      const read = scan.scannedBytes === scan.totalBytes
        ? "every token read"
        : `${megabytes(scan.scannedBytes)} of ${megabytes(scan.totalBytes)} sampled`;
      return `vocabulary   token ids up to ${scan.maxToken} (${read}), model vocab_size ` +
        `${check.vocabSize} (${check.configFile})`;
    }
    case "BadData":
    case "Skipped":
      return `vocabulary   not checked: ${check.reason}`;
  }
}

function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

async function readOrReport(
  io: CliIo,
  path: string,
  what: string,
): Promise<string | undefined> {
  try {
    return await io.readTextFile(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    io.err(`validate-config: cannot read ${what} "${path}": ${reason}`);
    return undefined;
  }
}

function parseOrCollect<T>(failures: ConfigError[], parse: () => T): T | undefined {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    failures.push(error);
    return undefined;
  }
}

/** A short human summary of a valid run config, one fact per line. */
export function describeRunConfig(run: RunConfig): string[] {
  const c = run.config;
  const m = run.model;
  const witnesses = c.witnessNodes === 0
    ? "witnesses: every client up to 32"
    : `${c.witnessNodes} witness${c.witnessNodes === 1 ? "" : "es"} per round`;
  const batch = c.globalBatchSizeStart === c.globalBatchSizeEnd
    ? `${c.globalBatchSizeStart}`
    : `${c.globalBatchSizeStart} -> ${c.globalBatchSizeEnd} (over ${c.globalBatchSizeWarmupTokens} tokens)`;
  return [
    `run        ${run.runId} (${run.runState}), ${c.totalSteps} steps, at step ${run.progress.step} ` +
    `of epoch ${run.progress.epoch}`,
    `clients    min ${c.minClients}, ${c.initMinClients} to start, at most ${c.maxClients}; ${witnesses}`,
    `timing     epoch ${c.epochTime} s: warmup <= ${c.warmupTime} s, rounds <= ` +
    `${c.maxRoundTrainTime} s + ${c.roundWitnessTime} s witness, cooldown ${c.cooldownTime} s`,
    `batch      ${batch} sequences x ${m.maxSeqLen} tokens per step`,
    `model      ${m.architecture}, ${m.dataType}, checkpoint ${describeCheckpoint(run)}`,
    `data       ${describeDataLocation(m.dataLocation)}`,
    `lr         ${describeLrSchedule(m.lrSchedule)}`,
    `optimizer  ${describeOptimizer(m.optimizer)}`,
  ];
}

/** A short human summary of a data-server config. */
export function describeDataConfig(data: DataServerConfig): string[] {
  return [
    `data server  ${data.dir}: ${data.tokenSize} tokens, ${data.seqLen} per sequence, seeded shuffle`,
  ];
}

function describeCheckpoint(run: RunConfig): string {
  const checkpoint = run.model.checkpoint;
  switch (checkpoint.kind) {
    case "Ephemeral":
      return "Ephemeral";
    case "Dummy":
    case "Hub":
    case "P2P": {
      const revision = checkpoint.repo.revision === null ? "" : `@${checkpoint.repo.revision}`;
      return `${checkpoint.kind} ${checkpoint.repo.repoId}${revision}`;
    }
    case "Gcs":
    case "P2PGcs": {
      const prefix = checkpoint.repo.prefix === null ? "" : `/${checkpoint.repo.prefix}`;
      return `${checkpoint.kind} gs://${checkpoint.repo.bucket}${prefix}`;
    }
  }
}

function describeDataLocation(location: DataLocation): string {
  switch (location.kind) {
    case "Dummy":
      return "Dummy (zero tokens)";
    case "Server":
      return `TCP data server at ${location.address}`;
    case "Local":
      return `local folder ${location.path}`;
    case "WeightedHttp":
      return `weighted HTTP mix ${location.url}`;
    case "Preprocessed":
      return `preprocessed ${location.source}`;
    case "Http": {
      const l = location.location;
      const where = l.kind === "SingleUrl"
        ? l.url
        : l.kind === "NumberedFiles"
        ? `${l.numFiles} files ${l.urlTemplate} from ${l.startIndex}`
        : `gs://${l.bucketName}/${l.filterDirectory}`;
      const shuffle = location.shuffle.kind === "Seeded" ? "seeded shuffle" : "no shuffle";
      return `HTTP ${where}, ${location.tokenSizeInBytes} tokens, ${shuffle}`;
    }
  }
}

function describeLrSchedule(s: LrSchedule): string {
  const warmup = s.warmupSteps === 0
    ? `${s.baseLr}`
    : `${s.warmupInitLr} -> ${s.baseLr} over ${s.warmupSteps} warmup steps`;
  switch (s.kind) {
    case "Constant":
      return `Constant ${warmup}`;
    case "Linear":
    case "Cosine":
      return `${s.kind} ${warmup}, then to ${s.finalLr} at step ${s.totalSteps}`;
    case "WarmupStableDecay":
      return `WarmupStableDecay ${warmup}, stable ${s.stableSteps} steps, cosine to ` +
        `${s.cosineDecayFinalLr} over ${s.cosineDecaySteps}, linear to ${s.linearDecayFinalLr} ` +
        `over ${s.linearDecaySteps}`;
  }
}

function describeOptimizer(o: OptimizerDefinition): string {
  const clip = (value: number | null) => value === null ? "no clipping" : `clip ${value}`;
  switch (o.kind) {
    case "Dummy":
      return "Dummy";
    case "AdamW":
      return `AdamW betas ${o.betas[0]}/${o.betas[1]}, weight decay ${o.weightDecay}, ` +
        `eps ${o.eps}, ${clip(o.clipGradNorm)}`;
    case "Distro":
      return `DisTrO chunk ${o.compressionChunk}, top-k ${o.compressionTopk}, ` +
        `${o.quantize1bit ? "1-bit signs" : "bf16 values"}, decay ${o.compressionDecay}, ` +
        `weight decay ${o.weightDecay ?? 0}, ${clip(o.clipGradNorm)}`;
  }
}
