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
import { engineDenoFlags } from "../torch/engine_process.ts";
import { ReplayFolderError } from "./replay_folder.ts";
import {
  type BenchItem,
  type BenchStep,
  runTrainerProcess,
  runVerifierProcess,
  type VerifierSummary,
} from "./replay_roles.ts";

/** The backends `--verifier-backend` names: lavapipe's two, or whatever adapter WebGPU picks. */
const BACKENDS = ["vulkan", "gl", "default"] as const;
type Backend = typeof BACKENDS[number];

/** The flags of `deno task bench-verify`. */
const BENCH_VERIFY_SPEC = {
  usage:
    "deno task bench-verify [--steps N] [--honest K] [--verifier-backend vulkan|gl|default]\n" +
    "       deno task bench-verify --role trainer --dir DIR [--steps N] [--honest K] [--model M]\n" +
    "       deno task bench-verify --role verifier --dir DIR [--verifier-backend B]",
  summary: "Verification by replay, honest and attacked: trainers in one process, a verifier " +
    "on another adapter in another, every result judged as a seated verifier judges it; the " +
    "verdicts counted per kind of result. With --role, one half only: the trainers fill DIR, " +
    'the verifier checks a DIR made earlier, elsewhere (docs/gpu-benchmarks.md, "Verification ' +
    'across adapters").',
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
      description: "the verifier's WebGPU backend: vulkan or gl (lavapipe's here), or default " +
        "(DENO_WEBGPU_BACKEND as it is: the GPU's adapter on a GPU machine)",
      default: "gl",
    },
    "seq-len": { type: "string", value: "T", description: "tokens per sequence", default: "128" },
    model: {
      type: "string",
      value: "M",
      description: "the model's folder, from the repository root",
      default: "config/models/llama-bytes",
    },
    data: {
      type: "string",
      value: "DIR",
      description: "the trainers' token files (a prefix of the first is copied into the folder)",
      default: "data/corpus/brown-bytes/train",
    },
    json: { type: "boolean", description: "one JSON object instead of the human summary" },
    role: {
      type: "string",
      value: "ROLE",
      description: "trainer (fill --dir) or verifier (check --dir; settings from its manifest)",
    },
    dir: { type: "string", value: "DIR", description: "the folder the roles share" },
    follow: { type: "boolean", description: "internal: the verifier follows a trainer beside it" },
  },
  footer: "Exit status: 0 no honest result failed and every attack was caught, 1 otherwise, " +
    "2 bad flags or an unusable --dir.",
} as const;

const ROOT = new URL("../..", import.meta.url).pathname;

function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new UsageError(`--${name} must be a positive integer, found "${value}"`);
  }
  return n;
}

/** A path from the repository root, or as given when absolute. */
function fromRoot(path: string): string {
  return path.startsWith("/") ? path : `${ROOT}${path}`;
}

/** The parsed flags. */
interface BenchOptions {
  readonly steps: number;
  readonly honest: number;
  readonly seqLen: number;
  readonly model: string;
  readonly data: string;
  readonly backend: Backend;
  readonly json: boolean;
  readonly role: "trainer" | "verifier" | undefined;
  readonly dir: string;
  readonly follow: boolean;
}

async function main(): Promise<number> {
  const o: BenchOptions = parseOrExit(BENCH_VERIFY_SPEC, ({ values }) => {
    const backend = values["verifier-backend"] as Backend;
    if (!BACKENDS.includes(backend)) {
      throw new UsageError(
        `--verifier-backend must be ${BACKENDS.join(", ")}, found "${backend}"`,
      );
    }
    const role = values.role;
    if (role !== undefined && role !== "trainer" && role !== "verifier") {
      throw new UsageError(`--role must be trainer or verifier, found "${role}"`);
    }
    if (role !== undefined && !values.dir) {
      throw new UsageError(`--role ${role} needs --dir, the folder the roles share`);
    }
    return {
      steps: positive("steps", values.steps),
      honest: positive("honest", values.honest),
      seqLen: positive("seq-len", values["seq-len"]),
      model: values.model!.replace(/\/+$/, ""),
      data: fromRoot(values.data!),
      backend,
      json: values.json ?? false,
      role,
      dir: values.dir ?? "",
      follow: values.follow ?? false,
    };
  });
  try {
    if (o.role === "trainer") return await trainerRole(o);
    if (o.role === "verifier") return await verifierRole(o);
  } catch (e) {
    if (!(e instanceof ReplayFolderError)) throw e;
    console.error(`bench-verify: ${e.message}`);
    return 2;
  }
  return await orchestrate(o);
}

async function trainerRole(o: BenchOptions): Promise<number> {
  const started = performance.now();
  await runTrainerProcess(o);
  const seconds = (performance.now() - started) / 1000;
  console.error(
    `bench-verify: trainers wrote ${o.dir} (${o.steps} steps) in ${seconds.toFixed(0)} s`,
  );
  return 0;
}

/**
 * The verifier on `o.backend`: in this process when DENO_WEBGPU_BACKEND already says so (it is
 * read when the adapter is first requested), else in a child with it set.
 */
async function verifierRole(o: BenchOptions): Promise<number> {
  if (o.backend !== "default" && Deno.env.get("DENO_WEBGPU_BACKEND") !== o.backend) {
    const child = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...engineDenoFlags(Deno.env.get), "-A", SELF, ...Deno.args],
      env: { DENO_WEBGPU_BACKEND: o.backend },
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    return child.code;
  }
  const started = performance.now();
  const loadBefore = Deno.loadavg();
  const summary = await runVerifierProcess({ dir: o.dir, follow: o.follow });
  if (o.follow) {
    console.log(JSON.stringify(summary));
    return 0;
  }
  return report(summary, { started, loadBefore, json: o.json });
}

const SELF = new URL(import.meta.url).pathname;

async function orchestrate(o: BenchOptions): Promise<number> {
  const dir = await Deno.makeTempDir({ prefix: "psyche-verify-bench-" });
  const common = ["run", ...engineDenoFlags(Deno.env.get), "-A", SELF, "--dir", dir];
  const loadBefore = Deno.loadavg();
  const started = performance.now();
  const trainer = new Deno.Command(Deno.execPath(), {
    args: [
      ...common,
      "--role",
      "trainer",
      "--steps",
      String(o.steps),
      "--honest",
      String(o.honest),
      "--seq-len",
      String(o.seqLen),
      "--model",
      o.model,
      "--data",
      o.data,
    ],
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const env: Record<string, string> = o.backend === "default"
    ? {}
    : { DENO_WEBGPU_BACKEND: o.backend };
  const verifier = new Deno.Command(Deno.execPath(), {
    args: [...common, "--role", "verifier", "--follow", "--verifier-backend", o.backend],
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
  return report(summary, { started, loadBefore, json: o.json });
}

/** Prints the summary with its time and load; the exit status its verdicts give. */
function report(
  summary: VerifierSummary,
  o: { started: number; loadBefore: number[]; json: boolean },
): number {
  const r = {
    ...summary,
    seconds: (performance.now() - o.started) / 1000,
    loadBefore: o.loadBefore,
    loadAfter: Deno.loadavg(),
    date: new Date().toISOString(),
  };
  console.log(o.json ? JSON.stringify(r) : humanSummary(r));
  const falseAccusations = summary.kinds.honest?.fail ?? 0;
  const missed = RESULT_ATTACKS.reduce((a, k) => a + (summary.kinds[k]?.pass ?? 0), 0);
  return falseAccusations === 0 && missed === 0 ? 0 : 1;
}

function humanSummary(
  r: VerifierSummary & { seconds: number; loadBefore: number[]; loadAfter: number[]; date: string },
): string {
  const lines = [
    `trainers on ${r.trainerAdapter}; verifier on ${r.verifierAdapter}`,
    `${r.model}, ${r.honest} honest trainers, ${r.seqLen} tokens a sequence`,
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
