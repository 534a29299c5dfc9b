/**
 * Our side of the comparison in a process of its own, so that everything it held (the GPU
 * runtime, and on a CPU adapter such as lavapipe the device buffers, which are host memory) is
 * returned to the system when it exits, before PyTorch starts: a garbage collector that has not
 * run yet, or an allocator that keeps freed pages, would otherwise leave the 19 GiB of a 1B run
 * counted against PyTorch's 20. It also gives each side's own peak RSS (VmHWM).
 *
 * The parent runs {@link runEngineProcess}; the child is this file run as a script with one JSON
 * argument ({@link EngineJob}) and prints one JSON {@link StepReport} line.
 *
 * @module
 */
import { parseStepReport, type StepReport } from "./report.ts";
import { runEngineSteps } from "./engine_step.ts";
import { parseTiling } from "../../shaders/mod.ts";
import { decodeTokenFile } from "./inputs.ts";
import { GpuRuntime } from "../../shaders/mod.ts";

/** Absolute path of this script (the child's entry point). */
export const ENGINE_SCRIPT: string = new URL(import.meta.url).pathname;
/** The project's deno.json (its import map), whatever the parent's working directory. */
const CONFIG_FILE = new URL("../../deno.json", import.meta.url).pathname;

/**
 * How the child resolves modules: `PSYCHE_DENO_RUN_FLAGS` (split on spaces) when set, else the
 * project's deno.json. The lent GPU machines reach no registry, so bench/gpu/run.sh runs every
 * entry point on a small cache and import map and passes the same flags here; with deno.json the
 * child would try to fetch the lock's packages there and fail.
 */
export function engineDenoFlags(env: (name: string) => string | undefined): string[] {
  const flags = env("PSYCHE_DENO_RUN_FLAGS")?.split(/\s+/).filter((f) => f !== "");
  return flags !== undefined && flags.length > 0 ? flags : [`--config=${CONFIG_FILE}`];
}

/** What the child runs: {@link runEngineSteps} on files the parent wrote. */
export interface EngineJob {
  /** HF folder with config.json and the weights. */
  modelDir: string;
  /** `batch * seqLen` little-endian uint32 token ids (`encodeTokenFile`). */
  tokensFile: string;
  batch: number;
  seqLen: number;
  warmup: number;
  steps: number;
  lr: number;
  recompute: boolean;
  /** Matmul tiling instead of the adapter profile's (`rows,cols,wx,wy,depth[,vec4]`). */
  tiling?: string;
}

/** The child failed; the message carries its exit status and the end of its stderr. */
export class EngineRunError extends Error {
  /** The child's exit status. */
  readonly code: number;
  constructor(code: number, stderr: string) {
    const tail = stderr.trim().split("\n").slice(-6).join("\n");
    super(`our engine's process exited with status ${code}:\n${tail}`);
    this.name = "EngineRunError";
    this.code = code;
  }
}

/**
 * Parses and checks the child's JSON argument. Throws a RangeError naming the bad field.
 */
export function parseEngineJob(text: string): EngineJob {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new RangeError(`the job argument is not JSON: ${(e as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new RangeError("the job argument must be a JSON object");
  }
  const o = raw as Record<string, unknown>;
  const path = (key: string): string => {
    if (typeof o[key] !== "string" || o[key] === "") {
      throw new RangeError(`job field "${key}" must be a path, found ${JSON.stringify(o[key])}`);
    }
    return o[key] as string;
  };
  const int = (key: string, min: number): number => {
    const v = o[key];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) {
      throw new RangeError(
        `job field "${key}" must be an integer >= ${min}, found ${JSON.stringify(v)}`,
      );
    }
    return v;
  };
  if (typeof o.lr !== "number" || !(o.lr > 0) || !Number.isFinite(o.lr)) {
    throw new RangeError(`job field "lr" must be a positive number, found ${JSON.stringify(o.lr)}`);
  }
  if (typeof o.recompute !== "boolean") {
    throw new RangeError(`job field "recompute" must be true or false`);
  }
  if (o.tiling !== undefined) {
    if (typeof o.tiling !== "string") throw new RangeError(`job field "tiling" must be a string`);
    parseTiling(o.tiling);
  }
  return {
    modelDir: path("modelDir"),
    tokensFile: path("tokensFile"),
    batch: int("batch", 1),
    seqLen: int("seqLen", 2),
    warmup: int("warmup", 1),
    steps: int("steps", 1),
    lr: o.lr,
    recompute: o.recompute,
    ...(o.tiling === undefined ? {} : { tiling: o.tiling as string }),
  };
}

/** Bytes of the `VmHWM:` line (peak resident set) of a /proc/PID/status text; null if absent. */
export function parsePeakRss(status: string): number | null {
  const m = status.match(/^VmHWM:\s+(\d+) kB$/m);
  return m === null ? null : Number(m[1]) * 1024;
}

/** This process's peak RSS, or undefined where /proc is unavailable. */
function ownPeakRss(): number | undefined {
  try {
    return parsePeakRss(Deno.readTextFileSync("/proc/self/status")) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs `job` in a child Deno process (this file, with the parent's Deno) and returns its report,
 * with the child's peak RSS. Throws {@link EngineRunError} when it fails.
 */
export async function runEngineProcess(
  job: EngineJob,
  io?: { signal?: AbortSignal; denoFlags?: string[] },
): Promise<StepReport> {
  const flags = io?.denoFlags ?? engineDenoFlags((name) => Deno.env.get(name));
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...flags, ENGINE_SCRIPT, JSON.stringify(job)],
    stdout: "piped",
    stderr: "piped",
    signal: io?.signal,
  }).output();
  const dec = new TextDecoder();
  if (!out.success) throw new EngineRunError(out.code, dec.decode(out.stderr));
  return parseStepReport(dec.decode(out.stdout), "our engine's process");
}

/** The child: run the job, print the report as one JSON line. */
async function main(args: string[]): Promise<void> {
  if (args.length !== 1) throw new RangeError(`expected one JSON argument, got ${args.length}`);
  const job = parseEngineJob(args[0]);
  const tokens = decodeTokenFile(await Deno.readFile(job.tokensFile), job);
  let report: StepReport;
  {
    const matmulTiling = job.tiling === undefined ? undefined : parseTiling(job.tiling);
    using rt = await GpuRuntime.create({ matmulTiling });
    report = await runEngineSteps(rt, { ...job, tokens });
    if (job.tiling !== undefined) {
      report = { ...report, deviceName: `${report.deviceName}, matmul tiling ${job.tiling}` };
    }
  }
  const peak = ownPeakRss();
  console.log(JSON.stringify(peak === undefined ? report : { ...report, peakRssBytes: peak }));
}

if (import.meta.main) {
  try {
    await main(Deno.args);
  } catch (e) {
    console.error(`engine_process: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
