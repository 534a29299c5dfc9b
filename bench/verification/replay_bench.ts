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
import { parseArgs } from "node:util";
import {
  ATTACKS_IN_BENCH,
  type BenchItem,
  type BenchStep,
  runTrainerProcess,
  runVerifierProcess,
  type VerifierSummary,
} from "./replay_roles.ts";

const USAGE = `deno task bench-verify [--steps N] [--honest K] [--verifier-backend vulkan|gl]
  --steps N             training steps (default 60)
  --honest K            honest trainers per step (default 8): K replays of honest results a step
  --verifier-backend B  the verifier's WebGPU backend: vulkan (lavapipe) or gl (default gl)
  --seq-len T           tokens per sequence (default 128)
  --json                one JSON object instead of the human summary
  --help                this text`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      steps: { type: "string", default: "60" },
      honest: { type: "string", default: "8" },
      "verifier-backend": { type: "string", default: "gl" },
      "seq-len": { type: "string", default: "128" },
      role: { type: "string" },
      dir: { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const steps = Number(values.steps), honest = Number(values.honest);
  const seqLen = Number(values["seq-len"]);
  for (
    const [name, v] of [["--steps", steps], ["--honest", honest], ["--seq-len", seqLen]] as const
  ) {
    if (!Number.isInteger(v) || v < 1) {
      console.error(`${name} must be a positive integer\n${USAGE}`);
      return 2;
    }
  }
  const backend = values["verifier-backend"];
  if (backend !== "vulkan" && backend !== "gl") {
    console.error(`--verifier-backend must be vulkan or gl, found ${backend}\n${USAGE}`);
    return 2;
  }
  const options = { steps, honest, seqLen, dir: values.dir ?? "" };
  if (values.role === "trainer") {
    await runTrainerProcess(options);
    return 0;
  }
  if (values.role === "verifier") {
    const summary = await runVerifierProcess(options);
    console.log(JSON.stringify(summary));
    return 0;
  }
  return await orchestrate({ ...options, backend, json: values.json });
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
  const missed = ATTACKS_IN_BENCH.reduce((a, k) => a + (summary.kinds[k]?.pass ?? 0), 0);
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
