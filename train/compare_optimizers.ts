/**
 * `deno task compare-optimizers`: the evidence that DisTrO trains as well as AdamW. Trains the
 * same model from the same seeded weights on the same token sequences twice, once per optimizer,
 * then evaluates both on the held-out split and writes a loss plot (SVG) and a JSON summary.
 *
 * ```sh
 * deno task compare-optimizers --steps 150 --svg docs/distro-vs-adamw.svg \
 *   --json docs/distro-vs-adamw.json
 * ```
 *
 * @module
 */
import { parseOrExit } from "../cli/entry.ts";
import { parseTrainArgs } from "./cli.ts";
import { train } from "./main.ts";

/** One optimizer's run: per-step training losses and the final held-out loss. */
export interface RunCurve {
  optimizer: string;
  losses: number[];
  evalLoss: number;
  seconds: number;
}

/** Mean over a trailing window of `width` values (the first points average what exists). */
export function smooth(values: readonly number[], width: number): number[] {
  const out: number[] = [];
  let sum = 0;
  for (let i = 0; i < values.length; i++) {
    sum += values[i];
    if (i >= width) sum -= values[i - width];
    out.push(sum / Math.min(i + 1, width));
  }
  return out;
}

/** A self-contained SVG line chart of the smoothed training losses, one line per run. */
export function lossChartSvg(runs: readonly RunCurve[], title: string): string {
  const W = 720, H = 420, left = 60, right = 20, top = 40, bottom = 50;
  const curves = runs.map((r) => smooth(r.losses, 10));
  const all = curves.flat();
  const steps = Math.max(...runs.map((r) => r.losses.length));
  const lo = Math.floor(Math.min(...all) * 2) / 2, hi = Math.ceil(Math.max(...all) * 2) / 2;
  const x = (i: number) => left + (i / Math.max(1, steps - 1)) * (W - left - right);
  const y = (v: number) => top + (1 - (v - lo) / (hi - lo || 1)) * (H - top - bottom);
  const colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${title}</text>`,
  ];
  for (let t = 0; t <= 4; t++) {
    const v = lo + (t / 4) * (hi - lo);
    parts.push(
      `<line x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(2)}</text>`,
    );
    const s = Math.round((t / 4) * (steps - 1));
    parts.push(`<text x="${x(s)}" y="${H - bottom + 18}" text-anchor="middle">${s + 1}</text>`);
  }
  parts.push(
    `<text x="${W / 2}" y="${H - 12}" text-anchor="middle">step</text>`,
    `<text x="16" y="${H / 2}" transform="rotate(-90 16 ${H / 2})" text-anchor="middle">` +
      `training loss (mean of last 10 steps)</text>`,
  );
  curves.forEach((c, k) => {
    const points = c.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    const color = colors[k % colors.length];
    parts.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${points}"/>`,
      `<rect x="${W - right - 250}" y="${
        top + 10 + k * 20
      }" width="14" height="4" fill="${color}"/>`,
      `<text x="${W - right - 230}" y="${top + 16 + k * 20}">${runs[k].optimizer}: held-out ` +
        `loss ${runs[k].evalLoss.toFixed(4)}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}

async function runOne(optimizer: string, common: string[]): Promise<RunCurve> {
  // A comparison keeps its curves, not its models: nothing is saved.
  const options = parseTrainArgs([
    ...common,
    `--optimizer=${optimizer}`,
    "--logs=json",
    "--no-save",
  ]);
  if (options === "help") throw new Error("unreachable");
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

/** The flags of `deno task compare-optimizers`. */
export const COMPARE_OPTIMIZERS_SPEC = {
  usage: "deno task compare-optimizers [options]",
  summary: "Trains the same model from the same seeded weights on the same tokens twice, with " +
    "AdamW and with DisTrO, then evaluates both on the held-out split and writes a loss plot " +
    "and a JSON summary.",
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
      description: "training tokens",
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
      description: "peak learning rate (cosine schedule, 10 warmup steps)",
      default: "1e-3",
    },
    // Sign descent moves every weight by lr each step; it may want its own peak rate.
    "distro-learning-rate": {
      type: "string",
      value: "LR",
      description: "DisTrO's peak learning rate",
      defaultText: "--learning-rate",
    },
    svg: { type: "string", value: "FILE", description: "write the loss plot here" },
    json: { type: "string", value: "FILE", description: "write the summary here" },
  },
} as const;

if (import.meta.main) {
  // The values are checked by the trainer's own parser, which these become flags of.
  const values = parseOrExit(COMPARE_OPTIMIZERS_SPEC, (parsed) => parsed.values);
  const common = [
    `--model=${values.model}`,
    `--data-path=${values["data-path"]}`,
    `--eval-data-path=${values["eval-data-path"]}`,
    `--eval-sequences=64`,
    `--sequence-length=${values["sequence-length"]}`,
    `--micro-batch=${values.batch}`,
    `--total-batch=${values.batch}`,
    `--steps=${values.steps}`,
    "--warmup-steps=10",
    "--lr-schedule=cosine",
    "--seed=1",
    // DisTrO as Psyche runs it: chunk 64, top-8 per chunk, 1-bit signs.
    "--compression-chunk=64",
    "--compression-topk=8",
    "--compression-decay=0.999",
    "--quantize-1bit",
  ];
  const adamwLr = values["learning-rate"];
  const distroLr = values["distro-learning-rate"] ?? adamwLr;
  const runs = [
    await runOne("adamw", [...common, `--learning-rate=${adamwLr}`]),
    await runOne("distro", [...common, `--learning-rate=${distroLr}`]),
  ];
  const [adamw, distro] = runs;
  const gap = distro.evalLoss / adamw.evalLoss - 1;
  const summary = {
    model: values.model,
    steps: Number(values.steps),
    tokens_per_step: Number(values.batch) * Number(values["sequence-length"]),
    learning_rate: { adamw: Number(adamwLr), distro: Number(distroLr) },
    adamw: { eval_loss: adamw.evalLoss, final_train_loss: adamw.losses.at(-1), s: adamw.seconds },
    distro: {
      eval_loss: distro.evalLoss,
      final_train_loss: distro.losses.at(-1),
      s: distro.seconds,
    },
    distro_vs_adamw: gap,
  };
  console.log(JSON.stringify(summary, null, 2));
  if (values.svg) {
    await Deno.writeTextFile(
      values.svg,
      lossChartSvg(runs, `DisTrO (top-8, 1-bit) vs AdamW, ${values.model}, bundled Brown corpus`),
    );
  }
  if (values.json) await Deno.writeTextFile(values.json, JSON.stringify(summary, null, 2) + "\n");
}
