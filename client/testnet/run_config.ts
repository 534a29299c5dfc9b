/**
 * The testnet's copy of a run config: the folder's `state.toml`, validated, with the data
 * server moved to a free local port when the run reads its data from one (so several testnets,
 * and tests, never collide on the fixed port written in the file).
 *
 * Pure: the caller reads the file and picks the port.
 *
 * @module
 */
import { parse, stringify } from "smol-toml";
import { parseRunConfig, type RunConfig } from "../../coordinator/config/mod.ts";
import type { CoordinatorConfig } from "../../coordinator/core/mod.ts";

/** The config to write for the testnet, and what the launcher needs to know about it. */
export interface PreparedRunConfig {
  /** The TOML to give the coordinator. */
  readonly text: string;
  /** The parsed run (after the rewrite). */
  readonly run: RunConfig;
  /** Whether the coordinator must serve the data (`--data-config`). */
  readonly servesData: boolean;
}

/**
 * Validates `text` (read from `source`) and, when its data location is `Server` and
 * `dataPort` is given, points it at `127.0.0.1:dataPort`. Throws `ConfigError` naming the key
 * when the config is invalid.
 *
 * @example
 * ```ts
 * import { prepareRunConfig } from "./run_config.ts";
 * const text = await Deno.readTextFile("config/llama-tiny/state.toml");
 * const prepared = prepareRunConfig(text, "state.toml", { dataPort: 41234 });
 * const location = prepared.run.model.dataLocation;
 * if (location.kind !== "Server" || location.address !== "127.0.0.1:41234") throw new Error();
 * ```
 */
export function prepareRunConfig(
  text: string,
  source: string,
  options: { dataPort?: number } = {},
): PreparedRunConfig {
  const original = parseRunConfig(text, source);
  const servesData = original.model.dataLocation.kind === "Server";
  if (!servesData || options.dataPort === undefined) {
    return { text, run: original, servesData };
  }
  const port = options.dataPort;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError(`data port must be in 1..65535, found ${port}`);
  }
  const doc = parse(text) as { model: { LLM: { data_location: unknown } } };
  doc.model.LLM.data_location = { Server: `127.0.0.1:${port}` };
  const rewritten =
    `# Written by the testnet from ${source} (data server moved to port ${port}).\n` +
    stringify(doc) + "\n";
  return { text: rewritten, run: parseRunConfig(rewritten, source), servesData };
}

/**
 * `prepared` with its `[config]` replaced by `config` (the testnet fitted its times to this
 * machine and the clients it starts). Throws `ConfigError` when the result breaks a rule.
 */
export function withCoordinatorConfig(
  prepared: PreparedRunConfig,
  config: CoordinatorConfig,
  note: string,
): PreparedRunConfig {
  const doc = parse(prepared.text) as { config: Record<string, unknown> };
  doc.config = {
    ...doc.config,
    warmup_time: config.warmupTime,
    max_round_train_time: config.maxRoundTrainTime,
    epoch_time: config.epochTime,
    init_min_clients: config.initMinClients,
  };
  const text = `# ${note}\n` + stringify(doc) + "\n";
  return { ...prepared, text, run: parseRunConfig(text, "the fitted run config") };
}
