/**
 * One child process of the testnet: spawned with piped output, every stdout and stderr line
 * handed to a callback as it arrives, stoppable with a signal and awaitable, and stopping by
 * itself if this process dies (its stdin is our lifeline, cli/stop_request.ts).
 *
 * @module
 */
import { lifelineSpawnOptions } from "../../cli/entry.ts";

/** A line-by-line reader of a byte stream; the last partial line is flushed at the end. */
export async function forEachLine(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  let pending = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    pending += text;
    let at: number;
    while ((at = pending.indexOf("\n")) >= 0) {
      onLine(pending.slice(0, at).replace(/\r$/, ""));
      pending = pending.slice(at + 1);
    }
  }
  if (pending !== "") onLine(pending);
}

/** This process's environment less its `PSYCHE_*` variables (the flags' variables). */
export function inheritedEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([name]) => !name.startsWith("PSYCHE_")),
  );
}

/** A running child process. */
export class ChildProcess {
  /** The label shown in front of its lines. */
  readonly label: string;
  readonly #process: Deno.ChildProcess;
  readonly #done: Promise<Deno.CommandStatus>;
  #status: Deno.CommandStatus | null = null;

  /** Spawns `args[0]` with the rest as arguments; every output line goes to `onLine`. */
  constructor(
    label: string,
    options: {
      args: readonly string[];
      cwd: string;
      onLine: (line: string) => void;
      /** Variables added to the inherited environment (less its `PSYCHE_*` variables). */
      env?: Record<string, string>;
    },
  ) {
    this.label = label;
    const [program, ...rest] = options.args;
    this.#process = new Deno.Command(program, {
      args: rest,
      cwd: options.cwd,
      // The parent passes every setting as a flag; a PSYCHE_* variable meant for the testnet
      // (PSYCHE_LOGS, PSYCHE_CHECKPOINT_DIR) would otherwise fill a child's flag of that name.
      clearEnv: true,
      // Its stdin is our lifeline: if this process dies, however it dies, the child stops.
      ...lifelineSpawnOptions({ ...inheritedEnv(), ...options.env }),
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const out = forEachLine(this.#process.stdout, options.onLine);
    const err = forEachLine(this.#process.stderr, options.onLine);
    this.#done = Promise.all([this.#process.status, out, err]).then(async ([status]) => {
      this.#status = status;
      await this.#process.stdin.close().catch(() => {}); // the child is gone: nothing to keep
      return status;
    });
  }

  /** The process id. */
  get pid(): number {
    return this.#process.pid;
  }

  /** Whether it has exited (and its output is drained). */
  get exited(): boolean {
    return this.#status !== null;
  }

  /** Resolves with the exit status once it has exited and its output is drained. */
  get status(): Promise<Deno.CommandStatus> {
    return this.#done;
  }

  /** Sends `signal` unless it has already exited. */
  signal(signal: Deno.Signal): void {
    if (this.#status !== null) return;
    try {
      this.#process.kill(signal);
    } catch (e) {
      if (!(e instanceof TypeError)) throw e; // already exited
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
  async stop(graceMs = 5000): Promise<Deno.CommandStatus> {
    this.signal("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    try {
      const first = await Promise.race([this.#done, late]);
      if (first !== undefined) return first;
      this.signal("SIGKILL");
      return await this.#done;
    } finally {
      clearTimeout(timer);
    }
  }
}
