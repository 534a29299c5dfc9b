/**
 * `deno task data-server --config data.toml (--state state.toml | --max-batch-sequences N)
 *  (--allow PUBKEY_HEX ... | --allow-any-client) [options]`: serves a tokenized folder to
 * authenticated clients (data_server_cli.ts has the flags). Standalone there is no coordinator
 * to say who is in the epoch and which batch is whose, so the operator lists the public keys
 * allowed (or, for local demos only, allows any client that completes the handshake), and each
 * request is capped at the run's largest batch and each client at about one batch per second.
 * Stops on SIGINT/SIGTERM.
 *
 * @module
 */
import { denoEnv, parseArgsOrExit } from "../cli/entry.ts";
import {
  DATA_SERVER_SPEC,
  type DataServerArgs,
  dataServerLimitsFromRun,
  defaultRateLimit,
  parseDataServerArgs,
} from "./data_server_cli.ts";
import { startDataServerFromConfig } from "./data_server_config.ts";
import { DataError } from "./errors.ts";
import type { AuthorizeFn } from "./tcp_server.ts";
import { ConfigError, toHex } from "../common/mod.ts";
import { crossCheckDataConfig, parseRunConfig } from "../coordinator/config/mod.ts";

const EXIT_INVALID = 1;

/**
 * What `--state` says: the largest batch, the data server's port, and a check of the data
 * config against it. Throws `DataError` naming the file when it cannot be read or is invalid.
 */
async function runLimits(
  args: DataServerArgs,
): Promise<{ maxBatchSequences?: number; port?: number; check?: (seqLen: number) => string[] }> {
  if (args.statePath === undefined) return {};
  const path = args.statePath;
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    throw new DataError(`Cannot read run config "${path}": ${(e as Error).message}`, {
      file: path,
    });
  }
  let run;
  try {
    run = parseRunConfig(text, path);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new DataError(e.message, { file: path, key: e.issues[0]?.path });
  }
  return {
    ...dataServerLimitsFromRun(run),
    check: (seqLen) => {
      const mismatch = crossCheckDataConfig(run, { seqLen });
      return [...mismatch.run, ...mismatch.data].map((i) => `${i.path}: ${i.message}`);
    },
  };
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgsOrExit((a) => parseDataServerArgs(a, denoEnv), DATA_SERVER_SPEC, argv);
  const authorize: AuthorizeFn = (key) =>
    args.allow === "any" || args.allow.has(toHex(key)) ? "Allowed" : "NotInThisRound";
  let port = args.port;
  try {
    const fromRun = await runLimits(args);
    const maxBatchSequences = (args.maxBatchSequences ?? fromRun.maxBatchSequences)!;
    port = args.port ?? fromRun.port ?? 0;
    const running = await startDataServerFromConfig(args.configPath, {
      authorize,
      port,
      hostname: args.hostname,
      maxBatchSequences,
      rateLimit: defaultRateLimit(maxBatchSequences, args.sequencesPerSecond),
      maxConnections: args.maxConnections,
      maxConnectionsPerAddress: args.maxConnectionsPerAddress,
      idleTimeoutMs: args.idleTimeoutMs,
      // The keys it serves are the run: their connections never make room for a newcomer.
      isMember: args.allow === "any" ? undefined : (key) => (args.allow as Set<string>).has(key),
      onEvent: (e) => {
        if (e.kind === "Connected") console.log(`client ${e.client} connected`);
        if (e.kind === "RefusedConnection") console.log(`refused ${e.address}: ${e.reason}`);
        if (e.kind === "EvictedConnection") {
          console.log(
            `closed the quietest connection (${e.client ?? "handshaking"} from ${e.address}) ` +
              "to make room: the server is at its connection cap",
          );
        }
        if (e.kind === "Rejected") {
          console.log(`refused ${e.client} batch ${e.batch.start}..${e.batch.end}: ${e.reason}`);
        }
        if (e.kind === "Disconnected" && e.error) {
          console.log(`client ${e.client ?? "?"}: ${e.error.message}`);
        }
      },
    });
    const { config, provider, server } = running;
    const problems = fromRun.check?.(config.seqLen) ?? [];
    if (problems.length > 0) {
      await running.close();
      console.error(
        `error: ${args.configPath} does not fit ${args.statePath}: ${problems.join("; ")}`,
      );
      return EXIT_INVALID;
    }
    console.log(
      `serving ${config.dir}: ${provider.numSequences} sequences of ${config.seqLen} tokens, ` +
        `at most ${maxBatchSequences} per request, on ${server.address}`,
    );
    const stopped = new Promise<void>((resolve) => {
      Deno.addSignalListener("SIGINT", resolve);
      Deno.addSignalListener("SIGTERM", resolve);
    });
    await stopped;
    await running.close();
    return 0;
  } catch (e) {
    if (e instanceof DataError) {
      console.error(`error: ${e.message}`);
      return EXIT_INVALID;
    }
    if (e instanceof Deno.errors.AddrInUse || e instanceof Deno.errors.PermissionDenied) {
      console.error(`error: cannot listen on ${args.hostname}:${port}: ${e.message}`);
      return EXIT_INVALID;
    }
    throw e;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
