/**
 * `deno task coordinator <command>`: the coordinator's command line. Each subcommand lives
 * in its own module and is registered in {@link COMMANDS}: `validate-config` and `run` (the
 * TCP server, coordinator/server/).
 *
 * @module
 */
import { validateConfigCommand } from "./validate_config.ts";
import {
  type CliIo,
  commandsHelp,
  denoEnv,
  denoIo,
  type EnvLookup,
  EXIT_OK,
  EXIT_USAGE,
  unknownCommand,
} from "../../cli/entry.ts";
import { type DashboardStarter, runCommand } from "../server/mod.ts";
import { snapshotOf, startDashboard } from "../dashboard/mod.ts";

/** `run --dashboard-port`: the dashboard of coordinator/dashboard/, reading the host's state. */
const runDashboard: DashboardStarter = ({ hostname, port, host }) =>
  startDashboard({
    hostname,
    port,
    snapshot: () => snapshotOf(host.state, host.pending().map((p) => p.signer)),
  });

/** One subcommand: a one-line summary for the help text and its entry point. */
export interface Command {
  /** One line for the top-level help. */
  summary: string;
  /**
   * Runs with the arguments after the subcommand name; `env` fills flags not given
   * (`PSYCHE_*`). Resolves to the exit code.
   */
  run(args: string[], io: CliIo, env: EnvLookup): Promise<number>;
}

/** Every subcommand, by name. */
export const COMMANDS: Readonly<Record<string, Command>> = {
  "validate-config": {
    summary: "check a run config (and a data server config) without starting anything",
    run: validateConfigCommand,
  },
  run: {
    summary: "run a training run's coordinator over TCP (until SIGINT/SIGTERM)",
    run: (args, io, env) => runCommand(args, io, { env, startDashboard: runDashboard }),
  },
};

/** Top-level usage text, listing the subcommands. */
export function usage(): string {
  return commandsHelp("deno task coordinator", COMMANDS);
}

/** Dispatches `argv` to its subcommand; resolves to the process exit code. */
export async function main(
  argv: string[],
  io: CliIo = denoIo,
  env: EnvLookup = {},
): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    io.err(usage());
    return EXIT_USAGE;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    io.out(usage());
    return EXIT_OK;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) {
    io.err(`coordinator: ${unknownCommand(name, Object.keys(COMMANDS)).message}`);
    io.err(usage());
    return EXIT_USAGE;
  }
  return await command.run(rest, io, env);
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args, denoIo, denoEnv));
}
