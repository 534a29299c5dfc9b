/**
 * `deno task demo`: the README's main command. A testnet of a coordinator and 3 clients training
 * a small Llama with DisTrO on the bundled Brown corpus for three epochs, about five minutes of
 * training on a 2-core CPU (WebGPU on lavapipe), then the summary (loss first -> last, steps
 * applied, epochs and rounds, whether the clients' parameters agreed at every step) with the
 * loss curve, and the held-out loss (validation text no client trained on) of the seeded model
 * and of the last checkpoint (under runs/demo/).
 *
 * `--model bytes` (the default, config/demo: 1.9M parameters over UTF-8 bytes) learns visibly
 * in minutes; `--model llama-20m` (config/llama-tiny: 20M parameters over LLaMA-2 tokens) is the
 * bigger, slower run. Other arguments go to the testnet and override the demo's.
 *
 * Exits as `deno task testnet` does (main.ts, verdict.ts), and 1 as well when the held-out loss
 * could not be measured after training or did not fall.
 *
 * @module
 */
import "../../net/p2p/mod.ts";
import { join } from "node:path";
import { CORPUS_TOKENIZERS, ensureCorpus, type TokenizerName } from "../../data/mod.ts";
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, runWithSignals } from "./main.ts";
import { parseTestnetArgs, TESTNET_SPEC, type TestnetArgs } from "./args.ts";
import {
  denoEnv,
  type EnvLookup,
  envName,
  type FlagSpec,
  helpText,
  parseFlags,
  usageLines,
} from "../../cli/entry.ts";
import { type LogLevel, logLine } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";
import { REPO_ROOT } from "./launcher.ts";
import { formatLine } from "./output.ts";
import { prepareRunConfig } from "./run_config.ts";
import { heldOutLoss } from "./held_out.ts";
import { lossChart } from "./loss_chart.ts";

/** Where the demo's checkpoints go (git-ignored; emptied at the start of each demo). */
export const DEMO_CHECKPOINTS: string = join(REPO_ROOT, "runs", "demo");

/** A run the demo can show. */
export interface DemoModel {
  /** The run's config folder (state.toml, data.toml). */
  readonly configPath: string;
  /** The tokenization of the corpus its data server reads (built first when missing). */
  readonly corpus: TokenizerName;
  /** What it is, for the first line. */
  readonly description: string;
}

/** The runs of `--model`. */
export const DEMO_MODELS: Readonly<Record<string, DemoModel>> = {
  bytes: {
    configPath: join(REPO_ROOT, "config", "demo"),
    corpus: "bytes",
    description: "a 1.9M-parameter Llama over UTF-8 bytes (config/demo)",
  },
  "llama-20m": {
    configPath: join(REPO_ROOT, "config", "llama-tiny"),
    corpus: "llama",
    description: "a 20M-parameter Llama over LLaMA-2 tokens (config/llama-tiny)",
  },
};

/** Where the demo's coordinator serves its dashboard (`--dashboard-port 0` picks a free one). */
export const DEMO_DASHBOARD_PORT = 20003;

/** The demo model when `--model` is not given. */
export const DEFAULT_DEMO_MODEL = "bytes";

/** Held-out sequences evaluated before and after training. */
export const HELD_OUT_SEQUENCES = 64;

/** The demo's testnet settings for `model`: flag name to value (`true` for a boolean). */
export function demoSettings(model: DemoModel): Record<string, string | true> {
  return {
    "num-clients": "3",
    "config-path": model.configPath,
    "stop-after-epochs": "3",
    "stop-after-seconds": "570",
    "checkpoint-dir": DEMO_CHECKPOINTS,
    // A busy or slow machine gets the round and epoch times it needs, measured first.
    calibrate: true,
    "dashboard-port": String(DEMO_DASHBOARD_PORT),
  };
}

/**
 * The demo's testnet arguments for `model` (they go before the user's, which win), less those
 * whose `PSYCHE_*` variable `env` sets: the environment wins over the demo's settings too.
 */
export function demoArgs(model: DemoModel, env: EnvLookup = {}): string[] {
  const set = (name: string) =>
    (typeof env === "function" ? env(envName(name)) : env[envName(name)]) !== undefined;
  return Object.entries(demoSettings(model)).filter(([name]) => !set(name)).flatMap((
    [name, value],
  ) => value === true ? [`--${name}`] : [`--${name}`, value]);
}

/** The flags of `deno task demo`: `--model`, then the testnet's, none of them required. */
export const DEMO_SPEC = {
  usage: `deno task demo [--model ${Object.keys(DEMO_MODELS).join("|")}] [testnet options]`,
  summary: "A testnet of a coordinator and 3 clients training a small Llama on the bundled " +
    "Brown corpus for 3 epochs, then the loss curve and the held-out loss before and after. " +
    "The testnet's options override the demo's settings (" +
    Object.entries(demoSettings(DEMO_MODELS[DEFAULT_DEMO_MODEL])).filter(([n]) =>
      n !== "config-path" && n !== "checkpoint-dir"
    ).map(([n, v]) => v === true ? `--${n}` : `--${n} ${v}`).join(", ") +
    ", checkpoints under runs/demo/).",
  flags: {
    model: {
      type: "string",
      value: Object.keys(DEMO_MODELS).join("|"),
      description: Object.entries(DEMO_MODELS).map(([name, m]) => `${name}: ${m.description}`)
        .join("; "),
      default: DEFAULT_DEMO_MODEL,
    },
    ...Object.fromEntries(
      Object.entries(TESTNET_SPEC.flags).map(([name, flag]) => {
        const { required: _, ...rest } = flag as FlagSpec;
        return [name, rest];
      }),
    ) as { [K in keyof typeof TESTNET_SPEC.flags]: FlagSpec },
  },
  footer: "Exit status: as deno task testnet's, and 1 as well when the held-out loss could not " +
    "be measured after training or did not fall.",
} as const;

/** What `deno task demo` was asked for. */
export interface DemoArgs {
  /** A key of {@link DEMO_MODELS}. */
  readonly model: string;
  /** The user's testnet arguments (`--model` taken out). */
  readonly rest: string[];
}

/**
 * `--model NAME` (or `--model=NAME`, or `PSYCHE_MODEL`) taken out of `argv`; the rest goes to
 * the testnet. Every flag is checked against {@link DEMO_SPEC} first (a misspelt one is refused
 * with the one meant). Null when help was asked for.
 */
export function parseDemoArgs(argv: readonly string[], env: EnvLookup = {}): DemoArgs | null {
  const parsed = parseFlags(DEMO_SPEC, argv, { env });
  if (parsed.help) return null;
  const model = parsed.values.model ?? DEFAULT_DEMO_MODEL;
  if (!Object.hasOwn(DEMO_MODELS, model)) {
    throw explainEnvError(
      parsed.fromEnv.get("model"),
      `--model must be one of ${Object.keys(DEMO_MODELS).join(", ")}, not ${JSON.stringify(model)}`,
    );
  }
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--model") i++;
    else if (!argv[i].startsWith("--model=")) rest.push(argv[i]);
  }
  return { model, rest };
}

function explainEnvError(variable: string | undefined, message: string): UsageError {
  return new UsageError(
    variable === undefined ? message : `${message} (${variable} is set in the environment)`,
  );
}

/** The demo's help: its own flag, then the testnet's. */
export const DEMO_USAGE: string = helpText(DEMO_SPEC);

/** The step of a checkpoint folder `<run>-step<N>`; null for another name. */
export function checkpointStep(dir: string): number | null {
  const m = /-step(\d+)\/?$/.exec(dir);
  return m === null ? null : Number(m[1]);
}

/** The held-out loss line: before -> after, and the change in percent. */
export function describeHeldOut(before: number, after: number, step: number): string {
  const change = ((after - before) / before) * 100;
  return `held-out loss ${before.toFixed(3)} -> ${after.toFixed(3)} after step ${step} ` +
    `(${change >= 0 ? "+" : ""}${change.toFixed(1)}%)`;
}

/**
 * Removes every `*-step{N}` folder in `dir` but the highest step's (a checkpoint of the 20 M
 * model is 80 MB, one is written per epoch). Missing `dir` is fine.
 */
export async function keepLastCheckpoint(dir: string): Promise<void> {
  const steps: { name: string; step: number }[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      const step = checkpointStep(entry.name);
      if (entry.isDirectory && step !== null) steps.push({ name: entry.name, step });
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  steps.sort((a, b) => a.step - b.step);
  for (const { name } of steps.slice(0, -1)) {
    await Deno.remove(join(dir, name), { recursive: true });
  }
}

/** Runs the demo, `env` filling flags not given (`PSYCHE_*`); resolves to the exit code. */
export async function runDemo(argv: readonly string[], env: EnvLookup = denoEnv): Promise<number> {
  let args: TestnetArgs | null;
  let model: DemoModel;
  try {
    const parsed = parseDemoArgs(argv, env);
    if (parsed === null) {
      console.log(DEMO_USAGE);
      return EXIT_OK;
    }
    model = DEMO_MODELS[parsed.model];
    args = parseTestnetArgs([...demoArgs(model, env), ...parsed.rest], env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`demo: ${e.message}\n\n${usageLines(DEMO_SPEC)}`);
    return EXIT_USAGE;
  }
  if (args === null) {
    console.log(DEMO_USAGE);
    return EXIT_OK;
  }
  const say = (message: string, fields: Record<string, unknown> = {}, level: LogLevel = "info") =>
    console.log(formatLine(
      { label: "demo", kind: "testnet", index: 10 },
      logLine(Date.now(), level, "demo", { message, ...fields }),
      {
        format: args.logs,
        colour: Deno.stdout.isTerminal() && !Deno.env.get("NO_COLOR"),
        labelWidth: 11,
      },
    ));

  say(`training ${model.description} with 3 clients`);
  await ensureCorpus(model.corpus, {
    onBuild: (dir) => say(`building the ${model.corpus} corpus in ${dir} (first run)`),
  });
  const statePath = join(args.configPath, "state.toml");
  const { run } = prepareRunConfig(await Deno.readTextFile(statePath), statePath);
  if (run.model.checkpoint.kind !== "Dummy") {
    throw new Error(`${statePath}: the demo builds its model from a config folder (Dummy)`);
  }
  const heldOut = (modelFolder: string) =>
    heldOutLoss({
      modelFolder,
      runId: run.runId,
      validationDir: join(CORPUS_TOKENIZERS[model.corpus].dir, "validation"),
      seqLen: run.model.maxSeqLen,
      sequences: HELD_OUT_SEQUENCES,
    });
  const before = await heldOut(join(REPO_ROOT, run.model.checkpoint.repo.repoId));
  say(
    `held-out loss of the seeded model: ${before.loss.toFixed(3)} (${before.sequences} ` +
      `sequences of ${run.model.maxSeqLen} tokens of validation text no client trains on)`,
    { held_out_loss: before.loss, step: 0 },
  );

  // Each demo starts afresh: the previous demo's checkpoints (80 MB each for 20M) are removed.
  await Deno.remove(DEMO_CHECKPOINTS, { recursive: true }).catch(() => {});
  let outcome;
  try {
    outcome = await runWithSignals(args);
  } catch (e) {
    console.error(`demo: ${(e as Error).message}`);
    return EXIT_FAILURE;
  }
  await keepLastCheckpoint(join(DEMO_CHECKPOINTS, "client-1"));
  if (args.logs === "console") {
    const points = [...outcome.summary.lossByStep].map(([step, loss]) => ({ step, loss }));
    for (const line of lossChart(points)) console.log(`--- ${line}`);
  }

  const last = outcome.summary.checkpoints
    .map((dir) => ({ dir, step: checkpointStep(dir) }))
    .filter((c): c is { dir: string; step: number } => c.step !== null)
    .sort((a, b) => a.step - b.step)
    .at(-1);
  if (last === undefined) {
    const problem = "no checkpoint was written, so the held-out loss after training is unknown";
    if (args.logs === "json") say(problem, {}, "error");
    else console.log(`--- FAILED: ${problem}`);
    return EXIT_FAILURE;
  }
  const after = await heldOut(last.dir);
  const line = describeHeldOut(before.loss, after.loss, last.step);
  if (args.logs === "json") say(line, { held_out_loss: after.loss, step: last.step });
  else console.log(`--- ${line}`);
  if (!(after.loss < before.loss)) {
    if (args.logs === "json") say("the held-out loss did not fall", {}, "error");
    else console.log("--- FAILED: the held-out loss did not fall");
    return EXIT_FAILURE;
  }
  return outcome.exitCode;
}

if (import.meta.main) Deno.exit(await runDemo(Deno.args));
