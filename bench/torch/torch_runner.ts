/**
 * The PyTorch side of the comparison, run as a child process: find a Python that imports torch,
 * then run `llama_step.py` on the same model folder and token file and parse its JSON report.
 *
 * @module
 */
import { parseStepReport, type StepReport } from "./report.ts";

/** Absolute path of the PyTorch script beside this module. */
export const SCRIPT_PATH: string = new URL("./llama_step.py", import.meta.url).pathname;

/** No candidate Python could import torch; `tried` says what each one answered. */
export class TorchUnavailableError extends Error {
  /** Each Python tried and why it was not usable. */
  readonly tried: { python: string; reason: string }[];
  constructor(tried: { python: string; reason: string }[]) {
    const list = tried.map((t) => `  ${t.python}: ${t.reason}`).join("\n");
    super(
      `no Python with PyTorch found; tried:\n${list}\n` +
        `Install PyTorch for one of them (pip install torch, or on Debian apt-get install ` +
        `python3-torch libopenblas0-pthread), or name one with --python PATH or $PYTHON.`,
    );
    this.name = "TorchUnavailableError";
    this.tried = tried;
  }
}

/** `llama_step.py` failed; the message carries its exit status and the end of its stderr. */
export class TorchRunError extends Error {
  /** The script's exit status. */
  readonly code: number;
  constructor(code: number, stderr: string) {
    const tail = stderr.trim().split("\n").slice(-6).join("\n");
    super(`llama_step.py exited with status ${code}:\n${tail}`);
    this.name = "TorchRunError";
    this.code = code;
  }
}

/**
 * Pythons to try, in order: `--python` if given (then only it), else `$PYTHON`, `python3` on
 * the PATH and Debian's `/usr/bin/python3` (where `apt-get install python3-torch` puts torch
 * when the PATH's python3 is another one, e.g. pyenv's).
 */
export function pythonCandidates(explicit: string | undefined, env: string | undefined): string[] {
  if (explicit !== undefined && explicit !== "") return [explicit];
  const out = [env, "python3", "/usr/bin/python3"].filter((p): p is string => !!p);
  return [...new Set(out)];
}

/** The last non-empty line of a process's stderr (what a Python traceback ends with). */
function lastLine(text: string): string {
  const lines = text.trim().split("\n").filter((l) => l.trim() !== "");
  return lines.length === 0 ? "(no output)" : lines[lines.length - 1].trim();
}

/**
 * The first candidate that imports torch, with torch's version. Throws
 * {@link TorchUnavailableError} listing every candidate's answer when none does.
 */
export async function findTorchPython(
  candidates: string[],
): Promise<{ python: string; version: string }> {
  const tried: { python: string; reason: string }[] = [];
  for (const python of candidates) {
    let out: Deno.CommandOutput;
    try {
      out = await new Deno.Command(python, {
        args: ["-c", "import torch; print(torch.__version__)"],
        stdout: "piped",
        stderr: "piped",
      }).output();
    } catch (e) {
      tried.push({
        python,
        reason: e instanceof Deno.errors.NotFound ? "not found" : (e as Error).message,
      });
      continue;
    }
    const dec = new TextDecoder();
    if (out.success) return { python, version: dec.decode(out.stdout).trim() };
    tried.push({ python, reason: lastLine(dec.decode(out.stderr)) });
  }
  throw new TorchUnavailableError(tried);
}

/** What `llama_step.py` runs. */
export interface TorchStepOptions {
  modelDir: string;
  tokensFile: string;
  batch: number;
  seqLen: number;
  warmup: number;
  steps: number;
  lr: number;
  /** `"cpu"` or `"cuda"`. */
  device: "cpu" | "cuda";
  /** CPU threads (0 or absent: every core). */
  threads?: number;
  /** AdamW and clipping (default: the script's, which are Psyche's). */
  adamw?: { beta1: number; beta2: number; eps: number; weightDecay: number; maxGradNorm: number };
}

/** The script's command-line arguments for `options`. */
export function torchStepArgs(options: TorchStepOptions): string[] {
  const args = [
    "--model",
    options.modelDir,
    "--tokens",
    options.tokensFile,
    "--batch",
    String(options.batch),
    "--seq-len",
    String(options.seqLen),
    "--warmup",
    String(options.warmup),
    "--steps",
    String(options.steps),
    "--lr",
    String(options.lr),
    "--device",
    options.device,
  ];
  if (options.threads) args.push("--threads", String(options.threads));
  const a = options.adamw;
  if (a) {
    args.push(
      "--beta1",
      String(a.beta1),
      "--beta2",
      String(a.beta2),
      "--eps",
      String(a.eps),
      "--weight-decay",
      String(a.weightDecay),
      "--max-grad-norm",
      String(a.maxGradNorm),
    );
  }
  return args;
}

/**
 * Runs `llama_step.py` with `python` and returns its parsed report. Throws
 * {@link TorchRunError} when the script fails, a ReportError when its output is malformed.
 */
export async function runTorchSteps(
  python: string,
  options: TorchStepOptions,
  io?: { signal?: AbortSignal; script?: string },
): Promise<StepReport> {
  const out = await new Deno.Command(python, {
    args: [io?.script ?? SCRIPT_PATH, ...torchStepArgs(options)],
    stdout: "piped",
    stderr: "piped",
    env: { PYTHONUNBUFFERED: "1" },
    signal: io?.signal,
  }).output();
  const dec = new TextDecoder();
  if (!out.success) throw new TorchRunError(out.code, dec.decode(out.stderr));
  return parseStepReport(dec.decode(out.stdout), "llama_step.py");
}
