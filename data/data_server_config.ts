/**
 * Reads a `data.toml` file (parsed by data_config.ts) and opens the dataset it names,
 * the I/O edge shared by `deno task data-server` and a coordinator that starts the
 * data server in-process.
 *
 * @module
 */
import { dirname } from "node:path";
import { type DataServerConfig, parseDataConfig } from "./data_config.ts";
import { DataError } from "./errors.ts";
import { LocalDataProvider } from "./local.ts";
import { type DataServer, type DataServerOptions, startDataServer } from "./tcp_server.ts";
import { ConfigError } from "../common/mod.ts";

/**
 * Reads and validates `data.toml` at `path`; a relative `dir` resolves against the
 * file's folder. Throws {@linkcode DataError} naming the file and the first bad key
 * (the message lists every problem).
 */
export async function loadDataServerConfig(path: string): Promise<DataServerConfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (cause) {
    throw new DataError(`Cannot read data config "${path}": ${(cause as Error).message}`, {
      file: path,
    }, { cause });
  }
  try {
    return parseDataConfig(text, path, { baseDir: dirname(path) });
  } catch (e) {
    if (e instanceof ConfigError) {
      throw new DataError(e.message, { file: path, key: e.issues[0]?.path }, { cause: e });
    }
    throw e;
  }
}

/** Opens the dataset a data config describes: its folder, seeded shuffle and token width. */
export function openConfiguredDataset(
  config: DataServerConfig,
  options: { vocabSize?: number } = {},
): Promise<LocalDataProvider> {
  return LocalDataProvider.open(config.dir, {
    seqLen: config.seqLen,
    tokenSize: config.tokenSize,
    shuffle: { kind: "Seeded", seed: config.shuffleSeed },
    vocabSize: options.vocabSize,
  });
}

/** A data server started from a config file, with the provider it owns. */
export interface ConfiguredDataServer {
  /** The running server. */
  server: DataServer;
  /** The dataset it serves (closed by `close`). */
  provider: LocalDataProvider;
  /** The parsed data.toml. */
  config: DataServerConfig;
  /** Stops the server, then closes the dataset. */
  close(): Promise<void>;
}

/**
 * Loads `data.toml`, opens its dataset and starts serving it.
 * `authorize` decides every request (the coordinator supplies its epoch's clients).
 */
export async function startDataServerFromConfig(
  configPath: string,
  options: Omit<DataServerOptions, "provider"> & { vocabSize?: number },
): Promise<ConfiguredDataServer> {
  const config = await loadDataServerConfig(configPath);
  const provider = await openConfiguredDataset(config, options);
  const server = startDataServer({ ...options, provider });
  return {
    server,
    provider,
    config,
    async close() {
      await server.close();
      await provider.close();
    },
  };
}
