/**
 * Maps the run config's `data_location` to a provider, so the client needs one call
 * whatever the run uses: `Local`, `Http`, `Server` (TCP data server), `WeightedHttp` (a
 * weighted mix of HTTP datasets, listed by a JSON file), `Preprocessed` (a folder of parquet
 * files) or `Dummy`. HTTP `Gcp` locations, and `Preprocessed` Hub repositories, are refused
 * with a clear error.
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import { DummyDataProvider } from "./dummy.ts";
import { DataError } from "./errors.ts";
import { HttpDataProvider } from "./http.ts";
import { type HttpFetchOptions, HttpRangeClient } from "./http_range.ts";
import { LocalDataProvider } from "./local.ts";
import { PreprocessedDataProvider } from "./preprocessed.ts";
import type { DataProvider } from "./provider.ts";
import { TcpDataProvider } from "./tcp_client.ts";
import { WeightedDataProvider, type WeightedSource } from "./weighted.ts";
import { type HttpDataLocation, parseWeightedHttpConfig } from "./weighted_config.ts";
import { ConfigError, type DataLocation, type Shuffle, type TokenSize } from "../common/mod.ts";

/** What a provider needs beyond the location itself. */
export interface ProviderForLocationOptions {
  /** The run's `max_seq_len`; a data server serving another length is an error. */
  seqLen: number;
  /** Token width of `Local` folders (the location does not say; default `TwoBytes`). */
  tokenSize?: TokenSize;
  /** Shuffle of `Local` folders (default `DontShuffle`). */
  shuffle?: Shuffle;
  /** When given, tokens `>= vocabSize` are rejected (every location but `Server` and `Dummy`). */
  vocabSize?: number;
  /** Folder a relative `Local` or `Preprocessed` path resolves against (default: the cwd). */
  baseDir?: string;
  /** The client's ed25519 secret key, required for `Server`. */
  secretKey?: Uint8Array;
  /** Timeouts and retries for `Http` and `WeightedHttp`. */
  http?: HttpFetchOptions;
  /** Milliseconds per request for `Server` (default 30000). */
  serverTimeoutMs?: number;
  /** Aborts opening the provider. */
  signal?: AbortSignal;
}

/** Opens the provider a run's `data_location` describes. */
export async function providerForLocation(
  location: DataLocation,
  options: ProviderForLocationOptions,
): Promise<DataProvider> {
  switch (location.kind) {
    case "Dummy":
      return new DummyDataProvider(options.seqLen);
    case "Local": {
      const dir = resolve(location.path, options.baseDir);
      return await LocalDataProvider.open(dir, {
        seqLen: options.seqLen,
        tokenSize: options.tokenSize ?? "TwoBytes",
        shuffle: options.shuffle,
        vocabSize: options.vocabSize,
      });
    }
    case "Http":
      return await openHttp(location, options);
    case "WeightedHttp":
      return await openWeightedHttp(location.url, options);
    case "Preprocessed":
      return await openPreprocessed(location.source, options);
    case "Server": {
      if (options.secretKey === undefined) {
        throw new TypeError("A Server data location needs the client's secretKey");
      }
      const provider = await TcpDataProvider.connect(location.address, {
        secretKey: options.secretKey,
        timeoutMs: options.serverTimeoutMs,
        signal: options.signal,
      });
      if (provider.seqLen !== options.seqLen) {
        await provider.close();
        throw new DataError(
          `Data server ${location.address} serves sequences of ${provider.seqLen} tokens, ` +
            `but the run's max_seq_len is ${options.seqLen}`,
          { file: location.address, key: "max_seq_len" },
        );
      }
      return provider;
    }
    default: {
      const never: never = location;
      throw new TypeError(`Unknown data location ${JSON.stringify(never)}`);
    }
  }
}

function resolve(path: string, baseDir: string | undefined): string {
  return baseDir !== undefined && !isAbsolute(path) ? join(baseDir, path) : path;
}

function openHttp(
  location: HttpDataLocation,
  options: ProviderForLocationOptions,
): Promise<HttpDataProvider> {
  return HttpDataProvider.open(location.location, {
    ...options.http,
    seqLen: options.seqLen,
    tokenSize: location.tokenSizeInBytes,
    shuffle: location.shuffle,
    vocabSize: options.vocabSize,
    signal: options.signal,
  });
}

/**
 * Fetches the mix's JSON, opens each of its HTTP datasets (in order, so a failure names the
 * first bad one), and mixes them. A malformed file is a {@linkcode DataError} listing every
 * problem with its JSON path.
 */
async function openWeightedHttp(
  url: string,
  options: ProviderForLocationOptions,
): Promise<WeightedDataProvider> {
  const text = await new HttpRangeClient(options.http).text(url, { signal: options.signal });
  let config;
  try {
    config = parseWeightedHttpConfig(text, url);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new DataError(`WeightedHttp mix ${e.message}`, { file: url, key: "WeightedHttp" }, {
      cause: e,
    });
  }
  const sources: WeightedSource[] = [];
  try {
    for (const [i, entry] of config.providers.entries()) {
      const provider = await openHttp(entry.location, options).catch((cause) => {
        throw new DataError(
          `${url}: providers[${i}] cannot be opened: ${(cause as Error).message}`,
          { file: url, key: "WeightedHttp" },
          { cause },
        );
      });
      sources.push({ provider, weight: entry.weight ?? undefined, name: `${url} providers[${i}]` });
    }
  } catch (e) {
    await Promise.allSettled(sources.map((s) => s.provider.close()));
    throw e;
  }
  return await WeightedDataProvider.create(sources, { shuffle: config.shuffle });
}

/**
 * A `Preprocessed` source that is a folder (absolute, or relative to `baseDir`) is opened as
 * parquet files; anything else is taken for a Hugging Face dataset repository, which this
 * project cannot download yet.
 */
async function openPreprocessed(
  source: string,
  options: ProviderForLocationOptions,
): Promise<PreprocessedDataProvider> {
  const dir = resolve(source, options.baseDir);
  let isDir = false;
  try {
    isDir = (await Deno.stat(dir)).isDirectory;
  } catch { /* not a local path: a Hub repository id */ }
  if (!isDir) {
    throw new DataError(
      `Preprocessed "${source}" is not a folder here (looked for ${dir}). Downloading ` +
        "datasets from the Hugging Face Hub is not supported yet: download the repository's " +
        "parquet files (e.g. `huggingface-cli download --repo-type dataset " +
        `${source} --local-dir DIR\`) and set Preprocessed to the folder that holds them`,
      { file: dir, key: "Preprocessed" },
    );
  }
  return await PreprocessedDataProvider.open(dir, {
    seqLen: options.seqLen,
    vocabSize: options.vocabSize,
  });
}
