/**
 * Maps the run config's `data_location` to a provider, so the client needs one call
 * whatever the run uses: `Local`, `Http`, `Server` (TCP data server) or `Dummy`.
 * `WeightedHttp`, `Preprocessed` and HTTP `Gcp` are refused with a clear error.
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import { DummyDataProvider } from "./dummy.ts";
import { DataError } from "./errors.ts";
import { HttpDataProvider } from "./http.ts";
import type { HttpFetchOptions } from "./http_range.ts";
import { LocalDataProvider } from "./local.ts";
import type { DataProvider } from "./provider.ts";
import { TcpDataProvider } from "./tcp_client.ts";
import type { DataLocation, Shuffle, TokenSize } from "../common/mod.ts";

/** What a provider needs beyond the location itself. */
export interface ProviderForLocationOptions {
  /** The run's `max_seq_len`; a data server serving another length is an error. */
  seqLen: number;
  /** Token width of `Local` folders (the location does not say; default `TwoBytes`). */
  tokenSize?: TokenSize;
  /** Shuffle of `Local` folders (default `DontShuffle`). */
  shuffle?: Shuffle;
  /** When given, tokens `>= vocabSize` are rejected (`Local` and `Http`). */
  vocabSize?: number;
  /** Folder a relative `Local` path resolves against (default: the working directory). */
  baseDir?: string;
  /** The client's ed25519 secret key, required for `Server`. */
  secretKey?: Uint8Array;
  /** Timeouts and retries for `Http`. */
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
      const dir = options.baseDir !== undefined && !isAbsolute(location.path)
        ? join(options.baseDir, location.path)
        : location.path;
      return await LocalDataProvider.open(dir, {
        seqLen: options.seqLen,
        tokenSize: options.tokenSize ?? "TwoBytes",
        shuffle: options.shuffle,
        vocabSize: options.vocabSize,
      });
    }
    case "Http":
      return await HttpDataProvider.open(location.location, {
        ...options.http,
        seqLen: options.seqLen,
        tokenSize: location.tokenSizeInBytes,
        shuffle: location.shuffle,
        vocabSize: options.vocabSize,
        signal: options.signal,
      });
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
    case "WeightedHttp":
    case "Preprocessed":
      throw new DataError(
        `data_location ${location.kind} is not supported; use Local, Http or Server`,
        { key: location.kind },
      );
    default: {
      const never: never = location;
      throw new TypeError(`Unknown data location ${JSON.stringify(never)}`);
    }
  }
}
