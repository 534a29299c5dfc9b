/**
 * How a long-running command learns it should stop: SIGINT, SIGTERM, or, for a process spawned
 * by another of ours, its parent's death. A parent that spawns with {@link lifelineSpawnOptions}
 * holds the write end of the child's stdin and never writes; when the parent exits, however it
 * exits (SIGKILL and the OOM killer included), the kernel closes that end and the child reads
 * end-of-file. Without it, a testnet whose parent was killed left its coordinator and clients
 * running, holding their ports.
 *
 * @module
 */

/** The variable that tells a child its stdin is its parent's lifeline. */
export const LIFELINE_ENV = "PSYCHE_LIFELINE";

/**
 * Options to spread into `new Deno.Command(...)` so the child stops when this process dies:
 * stdin piped (keep the child's `stdin` open; close it only once the child has exited) and
 * {@link LIFELINE_ENV} set. `env` is the child's other variables.
 */
export function lifelineSpawnOptions(
  env: Record<string, string> = {},
): { stdin: "piped"; env: Record<string, string> } {
  return { stdin: "piped", env: { ...env, [LIFELINE_ENV]: "stdin" } };
}

/** Why {@link onStopRequest} called back. */
export type StopReason = "SIGINT" | "SIGTERM" | "parent exited";

let lifeline: Promise<void> | null = null;

/** Resolves when stdin reaches end-of-file (started once per process). */
function parentGone(): Promise<void> {
  lifeline ??= (async () => {
    try {
      for await (const _ of Deno.stdin.readable) {
        // The parent never writes; anything it does write is ignored.
      }
    } catch {
      // A read error means the pipe is gone too.
    }
  })();
  return lifeline;
}

/** A variable's value, or undefined where the env permission does not cover it. */
function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/**
 * Calls `stop` once, on the first SIGINT or SIGTERM, or when the parent exits if this process
 * was spawned with {@link lifelineSpawnOptions}. Returns a function that unsubscribes.
 */
export function onStopRequest(
  stop: (reason: StopReason) => void,
  env: (name: string) => string | undefined = readEnv,
): () => void {
  let active = true;
  const once = (reason: StopReason) => {
    if (!active) return;
    unsubscribe();
    stop(reason);
  };
  const onInt = () => once("SIGINT");
  const onTerm = () => once("SIGTERM");
  Deno.addSignalListener("SIGINT", onInt);
  Deno.addSignalListener("SIGTERM", onTerm);
  if (env(LIFELINE_ENV) === "stdin") parentGone().then(() => once("parent exited"));
  function unsubscribe() {
    if (!active) return;
    active = false;
    Deno.removeSignalListener("SIGINT", onInt);
    Deno.removeSignalListener("SIGTERM", onTerm);
  }
  return unsubscribe;
}
