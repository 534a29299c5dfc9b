/**
 * `deno task compare-optimizers`: the evidence that DisTrO trains as well as AdamW for far fewer
 * bytes. Trains the same model from the same seeded weights on the same token sequences twice,
 * once per optimizer, evaluates both on the held-out split, then writes a loss plot (SVG: loss by
 * step, and loss by the bytes one client sends its peers) and, when asked, a JSON summary.
 *
 * ```sh
 * deno task compare-optimizers --plot docs/distro-vs-adamw.svg --json docs/distro-vs-adamw.json
 * ```
 *
 * Bytes sent per step: DisTrO's compressed result at its exact wire size (optimizer/wire.ts
 * `payloadBytes`, the size `encodePayload` writes); AdamW, as plain data-parallel training, the
 * full f32 gradient (4 bytes per parameter). Both count one copy of what a client shares.
 *
 * @module
 */
import { basename, dirname, resolve } from "node:path";
import { parseOrExit } from "../cli/entry.ts";
import { UsageError } from "../common/mod.ts";
import { ensureCorpus } from "../data/mod.ts";
import { CORPUS_TOKENIZERS } from "../data/mod.ts";
import { formatCount, llamaParamLayout, type ParamEntry, readLlamaConfig } from "../model/mod.ts";
import { type ChunkingOptions, chunkLayouts, payloadBytes } from "../optimizer/mod.ts";
import { parseTrainArgs, type TrainOptions } from "./cli.ts";
import { type LossPlot, lossPlotSvg, type PlotRun } from "./loss_plot.ts";
import { train } from "./main.ts";

export { smooth } from "./loss_plot.ts";

/** DisTrO as Psyche runs it: chunk 64, top-8 per chunk, 1-bit signs. */
export const COMPARED_DISTRO = { chunk: 64, topk: 8, decay: 0.999, quantize1bit: true } as const;

/** Steps each point of the plot averages. */
export const PLOT_SMOOTHING = 10;

/** One optimizer's run: per-step training losses and the final held-out loss. */
export interface RunCurve {
  optimizer: "adamw" | "distro";
  losses: number[];
  evalLoss: number;
  seconds: number;
}

/** The flags of `deno task compare-optimizers`. */
export const COMPARE_OPTIMIZERS_SPEC = {
  usage: "deno task compare-optimizers [options]",
  summary: "Trains the same model from the same seeded weights on the same tokens twice, with " +
    "AdamW and with DisTrO (chunk 64, top-8, 1-bit), evaluates both on the held-out split, " +
    "then writes a loss plot (loss by step, and loss by the bytes one client sends its peers) " +
    "and prints a JSON summary.",
  flags: {
    model: {
      type: "string",
      value: "DIR",
      description: "HF model folder (config.json)",
      default: "config/models/llama-mini",
    },
    "data-path": {
      type: "string",
      value: "DIR",
      description: "training tokens (the byte corpus, data/corpus/brown-bytes/train, is built " +
        "on first use)",
      default: "data/corpus/brown/train",
    },
    "eval-data-path": {
      type: "string",
      value: "DIR",
      description: "held-out tokens",
      default: "data/corpus/brown/validation",
    },
    steps: { type: "string", value: "N", description: "steps per optimizer", default: "150" },
    "sequence-length": {
      type: "string",
      value: "T",
      description: "tokens per sequence",
      default: "128",
    },
    batch: { type: "string", value: "B", description: "sequences per step", default: "8" },
    "learning-rate": {
      type: "string",
      value: "LR",
      description: "AdamW's peak learning rate (cosine schedule, 10 warmup steps)",
      default: "1e-3",
    },
    // Sign descent moves every weight by lr each step: it wants its own scale (docs/benchmarks.md:
    // 3e-3 ends within 3% of AdamW at 1e-3 on llama-mini, 1e-3 trails by 8.5%).
    "distro-learning-rate": {
      type: "string",
      value: "LR",
      description: "DisTrO's peak learning rate",
      default: "3e-3",
    },
    plot: {
      type: "string",
      value: "FILE",
      description: "write the loss plot (SVG) here",
      defaultText: "runs/compare-optimizers/<model folder name>.svg",
    },
    "no-plot": { type: "boolean", description: "write no plot" },
    svg: { type: "string", value: "FILE", description: "the same as --plot" },
    json: { type: "string", value: "FILE", description: "also write the summary here" },
  },
} as const;

type CompareFlags = {
  -readonly [K in keyof typeof COMPARE_OPTIMIZERS_SPEC.flags]?: string | boolean;
};

/** What the command does, checked before any training starts. */
export interface CompareSettings {
  readonly model: string;
  readonly dataPath: string;
  readonly evalDataPath: string;
  /** The trainer's options for each run. */
  readonly adamw: TrainOptions;
  readonly distro: TrainOptions;
  /** Where the plot goes; null with `--no-plot`. */
  readonly plotPath: string | null;
  readonly jsonPath: string | null;
}

/** The default plot file of a model folder: `runs/compare-optimizers/<folder name>.svg`. */
export function defaultPlotPath(model: string): string {
  return `runs/compare-optimizers/${basename(model.replace(/\/+$/, "")) || "model"}.svg`;
}

/** `--plot`, its older name `--svg`, or `--no-plot`, reconciled; throws on a contradiction. */
export function plotPathOf(values: CompareFlags, model: string): string | null {
  const plot = values.plot as string | undefined, svg = values.svg as string | undefined;
  if (plot !== undefined && svg !== undefined && plot !== svg) {
    throw new UsageError(`--plot ${plot} and --svg ${svg} name two files; give one`);
  }
  const path = plot ?? svg;
  if (values["no-plot"] === true) {
    if (path !== undefined) {
      throw new UsageError(
        `--no-plot contradicts --${plot !== undefined ? "plot" : "svg"} ${path}`,
      );
    }
    return null;
  }
  return path ?? defaultPlotPath(model);
}

function learningRateOf(values: CompareFlags, flag: "learning-rate" | "distro-learning-rate") {
  const text = values[flag] as string;
  const v = Number(text);
  if (text.trim() === "" || !Number.isFinite(v) || v <= 0) {
    throw new UsageError(`--${flag} must be a positive number, found "${text}"`);
  }
  return v;
}

/**
 * The checked settings of parsed flags (their defaults filled in). Both runs' trainer options
 * are parsed here, so a bad value stops the command before the first run, not after it. Throws
 * {@link UsageError} naming the flag.
 */
export function compareSettings(values: CompareFlags): CompareSettings {
  const model = values.model as string;
  const dataPath = values["data-path"] as string;
  const evalDataPath = values["eval-data-path"] as string;
  const adamwLr = learningRateOf(values, "learning-rate");
  const distroLr = learningRateOf(values, "distro-learning-rate");
  const common = [
    `--model=${model}`,
    `--data-path=${dataPath}`,
    `--eval-data-path=${evalDataPath}`,
    `--eval-sequences=64`,
    `--sequence-length=${values["sequence-length"]}`,
    `--micro-batch=${values.batch}`,
    `--total-batch=${values.batch}`,
    `--steps=${values.steps}`,
    "--warmup-steps=10",
    "--lr-schedule=cosine",
    "--seed=1",
    `--compression-chunk=${COMPARED_DISTRO.chunk}`,
    `--compression-topk=${COMPARED_DISTRO.topk}`,
    `--compression-decay=${COMPARED_DISTRO.decay}`,
    ...(COMPARED_DISTRO.quantize1bit ? ["--quantize-1bit"] : []),
    // A comparison keeps its curves, not its models: nothing is saved.
    "--logs=json",
    "--no-save",
  ];
  const options = (optimizer: string, lr: number): TrainOptions => {
    const parsed = parseTrainArgs([...common, `--optimizer=${optimizer}`, `--learning-rate=${lr}`]);
    if (parsed === "help") throw new Error("unreachable: no --help was passed");
    return parsed;
  };
  return {
    model,
    dataPath,
    evalDataPath,
    adamw: options("adamw", adamwLr),
    distro: options("distro", distroLr),
    plotPath: plotPathOf(values, model),
    jsonPath: (values.json as string | undefined) ?? null,
  };
}

/** Bytes one client sends its peers per step, and the parameters that sets them. */
export interface WireBytes {
  /** DisTrO's compressed result, as optimizer/wire.ts encodes it. */
  readonly distro: number;
  /** The full f32 gradient of plain data-parallel training: 4 bytes per parameter. */
  readonly adamw: number;
  readonly parameters: number;
}

/** {@link WireBytes} of a model's parameters under DisTrO's chunking and value format. */
export function wireBytesPerStep(
  entries: readonly Pick<ParamEntry, "name" | "shape">[],
  options: ChunkingOptions & { quantize1bit: boolean },
): WireBytes {
  const parameters = entries.reduce((n, e) => n + e.shape.reduce((a, b) => a * b, 1), 0);
  return {
    distro: payloadBytes(chunkLayouts(entries, options), options.quantize1bit),
    adamw: 4 * parameters,
    parameters,
  };
}

/** A learning rate as people write it: 0.003 is `3e-3`. */
export function formatLearningRate(lr: number): string {
  return lr.toExponential().replace("e+", "e");
}

/** The plot of two finished runs, titled from the data they used. */
export function comparisonPlot(
  settings: CompareSettings,
  runs: readonly RunCurve[],
  bytes: WireBytes,
): LossPlot {
  const { adamw } = settings;
  const T = adamw.sequenceLength ?? 0, B = adamw.totalBatch;
  const modelName = basename(settings.model.replace(/\/+$/, "")) || settings.model;
  const quantized = COMPARED_DISTRO.quantize1bit ? ", 1-bit" : "";
  const plotted: PlotRun[] = runs.map((run) => {
    const options = settings[run.optimizer];
    const name = run.optimizer === "distro" ? "DisTrO" : "AdamW";
    return {
      id: run.optimizer,
      label: `${name} (lr ${formatLearningRate(options.learningRate)})`,
      losses: run.losses,
      evalLoss: run.evalLoss,
      bytesPerStep: bytes[run.optimizer],
      bytesWhat: run.optimizer === "distro" ? "compressed result" : "f32 gradient",
    };
  });
  return {
    title: `DisTrO (chunk ${COMPARED_DISTRO.chunk}, top-${COMPARED_DISTRO.topk}${quantized}) ` +
      `vs AdamW: ${modelName}, ${formatCount(bytes.parameters)} parameters`,
    subtitle: `${settings.dataPath}: ${adamw.steps} steps × ${B} × ${T} tokens = ` +
      `${(adamw.steps * B * T).toLocaleString("en-US")} tokens per optimizer`,
    runs: plotted,
    smoothing: PLOT_SMOOTHING,
    headings: [
      "Training loss by step",
      `Training loss by bytes sent: DisTrO sends ${
        Math.round(bytes.adamw / bytes.distro).toLocaleString("en-US")
      }× fewer bytes per step than AdamW`,
    ],
  };
}

/** The summary printed and written with `--json`: the plot can be drawn again from it. */
export function comparisonSummary(
  settings: CompareSettings,
  runs: readonly RunCurve[],
  bytes: WireBytes,
) {
  const { adamw } = settings;
  const byName = Object.fromEntries(runs.map((r) => [r.optimizer, r])) as Record<
    RunCurve["optimizer"],
    RunCurve
  >;
  const tokensPerStep = adamw.totalBatch * (adamw.sequenceLength ?? 0);
  const run = (name: RunCurve["optimizer"]) => ({
    eval_loss: byName[name].evalLoss,
    final_train_loss: byName[name].losses.at(-1),
    s: byName[name].seconds,
    bytes_per_step: bytes[name],
    bytes_sent: bytes[name] * byName[name].losses.length,
    losses: byName[name].losses,
  });
  return {
    model: settings.model,
    parameters: bytes.parameters,
    data_path: settings.dataPath,
    eval_data_path: settings.evalDataPath,
    steps: adamw.steps,
    tokens_per_step: tokensPerStep,
    tokens: tokensPerStep * adamw.steps,
    learning_rate: { adamw: settings.adamw.learningRate, distro: settings.distro.learningRate },
    distro_settings: COMPARED_DISTRO,
    adamw: run("adamw"),
    distro: run("distro"),
    distro_vs_adamw: byName.distro.evalLoss / byName.adamw.evalLoss - 1,
    adamw_bytes_per_distro_byte: bytes.adamw / bytes.distro,
  };
}

async function runOne(optimizer: RunCurve["optimizer"], options: TrainOptions): Promise<RunCurve> {
  let evalLoss = Number.NaN;
  let seconds = 0;
  const { losses } = await train(options, {
    write: (line) => {
      const event = JSON.parse(line);
      if (event.event === "eval") evalLoss = event.held_out_loss;
      if (event.event === "end") seconds = event.elapsed_ms / 1000;
      if (event.event === "step" && event.step % 10 === 0) {
        console.error(`${optimizer} step ${event.step}: loss ${event.loss.toFixed(4)}`);
      }
    },
  });
  return { optimizer, losses, evalLoss, seconds };
}

/** Builds the byte corpus first when a path reads from it (the LLaMA corpus is committed). */
async function ensureByteCorpus(paths: readonly string[]): Promise<void> {
  const dir = CORPUS_TOKENIZERS.bytes.dir;
  if (paths.some((p) => resolve(p).startsWith(dir))) {
    await ensureCorpus("bytes", {
      onBuild: (at, reason) => console.error(`building the byte corpus in ${at}: ${reason}`),
    });
  }
}

async function writeFileMakingFolder(path: string, text: string): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, text);
}

if (import.meta.main) {
  const settings = parseOrExit(COMPARE_OPTIMIZERS_SPEC, (parsed) => compareSettings(parsed.values));
  await ensureByteCorpus([settings.dataPath, settings.evalDataPath]);
  const config = await readLlamaConfig(`${settings.model}/config.json`);
  const bytes = wireBytesPerStep(llamaParamLayout(config).entries, COMPARED_DISTRO);
  const runs = [
    await runOne("adamw", settings.adamw),
    await runOne("distro", settings.distro),
  ];
  const summary = comparisonSummary(settings, runs, bytes);
  const { losses: _a, ...adamwShown } = summary.adamw;
  const { losses: _d, ...distroShown } = summary.distro;
  console.log(JSON.stringify({ ...summary, adamw: adamwShown, distro: distroShown }, null, 2));
  if (settings.plotPath !== null) {
    await writeFileMakingFolder(
      settings.plotPath,
      lossPlotSvg(comparisonPlot(settings, runs, bytes)),
    );
    console.error(`plot written to ${settings.plotPath}`);
  }
  if (settings.jsonPath !== null) {
    await writeFileMakingFolder(settings.jsonPath, JSON.stringify(summary, null, 2) + "\n");
    console.error(`summary written to ${settings.jsonPath}`);
  }
}
