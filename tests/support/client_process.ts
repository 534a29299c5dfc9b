/**
 * A real `deno task client` process for tests: its JSON events and every output line collected,
 * and a poll that waits for an event (naming what it waited for, with the client's output, on a
 * timeout).
 *
 * @module
 */
import { forEachLine } from "../../client/testnet/mod.ts";
import { lifelineSpawnOptions } from "../../cli/entry.ts";
import { releaseLifeline } from "./lifeline.ts";

const CLIENT = new URL("../../client/main.ts", import.meta.url).pathname;

/** One client process and what it printed so far. */
export class ClientProcess {
  /** The JSON lines it printed, parsed, in order. */
  readonly events: Record<string, unknown>[] = [];
  /** Every line of stdout and stderr, in order. */
  readonly output: string[] = [];
  readonly #child: Deno.ChildProcess;
  readonly #reading: Promise<unknown>;

  private constructor(args: readonly string[]) {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", CLIENT, ...args],
      ...lifelineSpawnOptions(),
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    releaseLifeline(this.#child);
    const onLine = (line: string) => {
      this.output.push(line);
      try {
        this.events.push(JSON.parse(line));
      } catch {
        // not an event (stderr)
      }
    };
    this.#reading = Promise.all([
      forEachLine(this.#child.stdout, onLine),
      forEachLine(this.#child.stderr, onLine),
    ]);
  }

  /** Starts `client/main.ts` with `args` (e.g. `["train", "--run-id", …, "--logs", "json"]`). */
  static start(args: readonly string[]): ClientProcess {
    return new ClientProcess(args);
  }

  /** Waits until an event `predicate` accepts was printed; names `what` on a timeout. */
  async waitFor(
    predicate: (e: Record<string, unknown>) => boolean,
    what: string,
    timeoutMs = 30_000,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.events.find(predicate);
      if (hit !== undefined) return hit;
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; client output:\n${this.output.join("\n")}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Sends `signal` and resolves with the exit status once its output is read to the end. */
  async stop(signal: Deno.Signal = "SIGTERM"): Promise<Deno.CommandStatus> {
    try {
      this.#child.kill(signal);
    } catch {
      // already exited
    }
    const status = await this.#child.status;
    await this.#reading;
    return status;
  }
}
