/**
 * `deno task bench-verify`: how verification by replay fares on honest results and on attacks,
 * with the trainers on one adapter and the verifier on another (docs/benchmarks.md,
 * "Verification").
 *
 * Two processes, as two machines would be: a trainer process trains `--honest` honest trainers and
 * one trainer per training attack (negated gradient, gradient ×10, other data) on one shared θ,
 * and derives the publishing attacks (random signs, an old result, a free rider's copy) from the
 * honest results; it writes every result's payload and every state it would serve into a folder.
 * A verifier process, on the adapter `--verifier-backend` names (lavapipe's Vulkan or its GL
 * backend), follows the same θ by applying the honest results, and checks every result exactly as
 * a seated verifier does: the chain, the served states, the replay, the verdict
 * (client/results/verify_check.ts). It prints, per kind of result, how many passed and failed and
 * with what evidence, and the largest honest measurement against the tolerance.
 *
 * With 0 false accusations in N honest replays the rate is below 3/N at 95% confidence (the rule of
 * three).
 *
 * @module
 */
import { parseOrExit } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";
import { RESULT_ATTACKS } from "../../client/testing/replay_parts.ts";
import {
  type BenchItem,
  type BenchStep,
  runTrainerProcess,
  runVerifierProcess,
  type VerifierSummary,
} from "./replay_roles.ts";

/** The flags of `deno task bench-verify`. */
const BENCH_VERIFY_SPEC = {
  usage: "deno task bench-verify [--steps N] [--honest K] [--verifier-backend vulkan|gl]",
  summary: "Verification by replay, honest and attacked: trainers in one process, a verifier " +
    "on lavapipe's Vulkan or GL backend in another, every result judged as a seated verifier " +
    "judges it; the verdicts counted per kind of result.",
  flags: {
    steps: { type: "string", value: "N", description: "training steps", default: "60" },
    honest: {
      type: "string",
      value: "K",
      description: "honest trainers per step: K honest replays a step",
      default: "8",
    },
    "verifier-backend": {
      type: "string",
      value: "B",
      description: "the verifier's WebGPU backend: vulkan (lavapipe) or gl",
      default: "gl",
    },
    "seq-len": { type: "string", value: "T", description: "tokens per sequence", default: "128" },
    json: { type: "boolean", description: "one JSON object instead of the human summary" },
    role: { type: "string", value: "ROLE", description: "internal: trainer or verifier" },
    dir: { type: "string", value: "DIR", description: "internal: the folder the roles share" },
  },
  footer: "Exit status: 0 no honest result failed and every attack was caught, 1 otherwise.",
} as const;

function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new UsageError(`--${name} must be a positive integer, found "${value}"`);
  }
  return n;
}

async function main(): Promise<number> {
  const o = parseOrExit(BENCH_VERIFY_SPEC, ({ values }) => {
    const backend = values["verifier-backend"];
    if (backend !== "vulkan" && backend !== "gl") {
      throw new UsageError(`--verifier-backend must be vulkan or gl, found "${backend}"`);
    }
    return {
      steps: positive("steps", values.steps),
      honest: positive("honest", values.honest),
      seqLen: positive("seq-len", values["seq-len"]),
      backend: backend as "vulkan" | "gl",
      json: values.json ?? false,
      role: values.role,
      dir: values.dir ?? "",
    };
  });
  if (o.role === "trainer") {
    await runTrainerProcess(o);
    return 0;
  }
  if (o.role === "verifier") {
    const summary = await runVerifierProcess(o);
    console.log(JSON.stringify(summary));
    return 0;
  }
  return await orchestrate(o);
}

async function orchestrate(
  o: { steps: number; honest: number; seqLen: number; backend: "vulkan" | "gl"; json: boolean },
): Promise<number> {
  const dir = await Deno.makeTempDir({ prefix: "psyche-verify-bench-" });
  const self = new URL(import.meta.url).pathname;
  const args = (role: string) => [
    "run",
    "-A",
    self,
    "--role",
    role,
    "--dir",
    dir,
    "--steps",
    String(o.steps),
    "--honest",
    String(o.honest),
    "--seq-len",
    String(o.seqLen),
  ];
  const loadBefore = Deno.loadavg();
  const started = performance.now();
  const trainer = new Deno.Command(Deno.execPath(), {
    args: args("trainer"),
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const env: Record<string, string> = o.backend === "gl" ? { DENO_WEBGPU_BACKEND: "gl" } : {};
  const verifier = new Deno.Command(Deno.execPath(), {
    args: args("verifier"),
    env,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const [t, v] = await Promise.all([trainer.status, verifier.output()]);
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  if (!t.success || !v.success) {
    console.error(`bench-verify: the ${t.success ? "verifier" : "trainer"} process failed`);
    return 1;
  }
  const lines = new TextDecoder().decode(v.stdout).trim().split("\n");
  const summary = JSON.parse(lines.at(-1)!) as VerifierSummary;
  const report = {
    ...summary,
    seconds: (performance.now() - started) / 1000,
    loadBefore,
    loadAfter: Deno.loadavg(),
    date: new Date().toISOString(),
  };
  if (o.json) {
    console.log(JSON.stringify(report));
  } else {
    console.log(humanSummary(report));
  }
  const falseAccusations = summary.kinds.honest?.fail ?? 0;
  const missed = RESULT_ATTACKS.reduce((a, k) => a + (summary.kinds[k]?.pass ?? 0), 0);
  return falseAccusations === 0 && missed === 0 ? 0 : 1;
}

function humanSummary(
  r: VerifierSummary & { seconds: number; loadBefore: number[]; loadAfter: number[]; date: string },
): string {
  const lines = [
    `trainers on ${r.trainerAdapter}; verifier on ${r.verifierAdapter}`,
    `${r.steps} steps, ${r.seconds.toFixed(0)} s, load ${r.loadBefore[0].toFixed(2)} -> ` +
    `${r.loadAfter[0].toFixed(2)}, ${r.date}`,
  ];
  for (const [kind, k] of Object.entries(r.kinds)) {
    const evidence = Object.entries(k.evidence).map(([e, n]) => `${e} ${n}`).join(", ");
    lines.push(
      `${kind.padEnd(13)} ${k.pass} pass, ${k.fail} fail${evidence ? ` (${evidence})` : ""}` +
        `; detail ppm max ${k.maxDetail}, replay ${k.replayMs.toFixed(0)} ms mean`,
    );
  }
  const n = r.kinds.honest?.pass ?? 0;
  if (n > 0 && (r.kinds.honest?.fail ?? 0) === 0) {
    lines.push(`0 false accusations in ${n} honest replays: below ${(300 / n).toFixed(2)}% (95%)`);
  }
  return lines.join("\n");
}

export type { BenchItem, BenchStep };

if (import.meta.main) Deno.exit(await main());
