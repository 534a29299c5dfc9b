/**
 * `deno task demo`: the README's main command. A testnet of a coordinator and 3 clients
 * training the small Llama of config/llama-tiny (state.toml: `config/models/llama-20m`,
 * seeded init) with DisTrO on the bundled Brown corpus (served by the coordinator from
 * config/llama-tiny/data.toml), for a few epochs, within about ten minutes on a 2-core CPU
 * (WebGPU on lavapipe). Then it prints the summary: loss first -> last, steps applied, epochs
 * and rounds, whether the clients' parameters agreed at every step, and the last checkpoint's
 * folder (under runs/demo/); it exits as `deno task testnet` does (main.ts, verdict.ts).
 *
 * Arguments are passed on to the testnet and override the demo's (e.g. `--logs json`).
 *
 * @module
 */
import "../p2p/exit_fix.ts";
import { join } from "node:path";
import { EXIT_USAGE, runUntilSignal } from "./main.ts";
import { parseTestnetArgs, TESTNET_USAGE } from "./args.ts";
import { REPO_ROOT } from "./launcher.ts";
import { UsageError } from "../../common/mod.ts";

/** Where the demo's checkpoints go (git-ignored; emptied at the start of each demo). */
export const DEMO_CHECKPOINTS: string = join(REPO_ROOT, "runs", "demo");

/** The demo's testnet arguments (before the user's). */
export const DEMO_ARGS: readonly string[] = [
  "--num-clients",
  "3",
  "--config-path",
  join(REPO_ROOT, "config", "llama-tiny"),
  "--stop-after-epochs",
  "3",
  "--stop-after-seconds",
  "570",
  "--checkpoint-dir",
  DEMO_CHECKPOINTS,
  // A busy or slow machine gets the round and epoch times it needs, measured first.
  "--calibrate",
];

/**
 * Removes every `*-step{N}` folder in `dir` but the highest step's (a checkpoint of the 20 M
 * model is 80 MB, one is written per epoch). Missing `dir` is fine.
 */
export async function keepLastCheckpoint(dir: string): Promise<void> {
  const steps: { name: string; step: number }[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      const m = /-step(\d+)$/.exec(entry.name);
      if (entry.isDirectory && m !== null) steps.push({ name: entry.name, step: Number(m[1]) });
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  steps.sort((a, b) => a.step - b.step);
  for (const { name } of steps.slice(0, -1)) {
    await Deno.remove(join(dir, name), { recursive: true });
  }
}

if (import.meta.main) {
  let code: number;
  try {
    const args = parseTestnetArgs([...DEMO_ARGS, ...Deno.args]);
    if (args === null) {
      console.log(TESTNET_USAGE);
      code = 0;
    } else {
      // Each demo starts afresh: the previous demo's checkpoints (80 MB each) are removed.
      await Deno.remove(DEMO_CHECKPOINTS, { recursive: true }).catch(() => {});
      code = await runUntilSignal(args);
      await keepLastCheckpoint(join(DEMO_CHECKPOINTS, "client-1"));
    }
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`demo: ${e.message}`);
    code = EXIT_USAGE;
  }
  Deno.exit(code);
}
