/**
 * The HTTP data provider: token files on a web server, listed by the run config's
 * `HttpLocation` (`SingleUrl` or `NumberedFiles`), sized with `HEAD`, and read with
 * one `Range` request per contiguous run of a batch.
 *
 * Sequences are cut exactly as the local provider cuts them (non-overlapping windows
 * from each file's first token), so local, HTTP and TCP providers serving the same
 * files return the same sequence for the same index. (Psyche's HTTP provider stops one
 * token earlier per file; we do not copy that.)
 *
 * @module
 */
import { readBatch } from "./batch_reader.ts";
import { forEachLimited } from "./concurrency.ts";
import { DataError } from "./errors.ts";
import { type HttpFetchOptions, HttpRangeClient } from "./http_range.ts";
import type { DatasetOptions } from "./dataset_options.ts";
import { NPY_PREAMBLE_BYTES, npyHeaderLength, parseNpyHeader } from "./npy.ts";
import type { DataProvider, TokenBatch } from "./provider.ts";
import { buildSequenceIndex, type SequenceIndex } from "./sequence_index.ts";
import { isNpyFileName, npyLayout, rawLayout, type TokenFileLayout } from "./token_file.ts";
import type { BatchId, HttpLocation } from "../common/mod.ts";

/**
 * The URLs an `HttpLocation` names. `NumberedFiles` fills the template's single `{}`
 * with `startIndex + i` for `i < numFiles`, zero-padded to `nLeftPadZeros` digits.
 *
 * @example
 * ```ts
 * import { httpLocationUrls } from "./http.ts";
 * const urls = httpLocationUrls({
 *   kind: "NumberedFiles",
 *   urlTemplate: "http://host/{}.ds",
 *   startIndex: 9,
 *   nLeftPadZeros: 3,
 *   numFiles: 2,
 * });
 * if (urls.join() !== "http://host/009.ds,http://host/010.ds") throw new Error(urls.join());
 * ```
 */
export function httpLocationUrls(location: HttpLocation): string[] {
  switch (location.kind) {
    case "SingleUrl":
      return [location.url];
    case "NumberedFiles": {
      const { urlTemplate, startIndex, nLeftPadZeros, numFiles } = location;
      const holes = urlTemplate.split("{}").length - 1;
      if (holes !== 1) {
        throw new DataError(
          `url_template "${urlTemplate}" must contain exactly one "{}", found ${holes}`,
          { key: "url_template" },
        );
      }
      for (
        const [key, value] of [["start_index", startIndex], ["n_left_pad_zeros", nLeftPadZeros], [
          "num_files",
          numFiles,
        ]] as const
      ) {
        if (!Number.isSafeInteger(value) || value < 0) {
          throw new DataError(`${key} must be a non-negative integer, found ${value}`, { key });
        }
      }
      if (numFiles === 0) throw new DataError("num_files must be > 0", { key: "num_files" });
      return Array.from(
        { length: numFiles },
        (_, i) => urlTemplate.replace("{}", String(startIndex + i).padStart(nLeftPadZeros, "0")),
      );
    }
    case "Gcp":
      throw new DataError(
        `Gcp data locations (bucket "${location.bucketName}") are not supported; ` +
          "serve the files over plain HTTP (SingleUrl or NumberedFiles) instead",
        { key: "Gcp" },
      );
    default: {
      const never: never = location;
      throw new TypeError(`Unknown HTTP location ${JSON.stringify(never)}`);
    }
  }
}

/** Options of {@linkcode HttpDataProvider.open}. */
export interface HttpProviderOptions extends DatasetOptions, HttpFetchOptions {
  /** Requests in flight at once, when sizing files and per batch (default 4). */
  concurrency?: number;
  /** Aborts sizing the files. */
  signal?: AbortSignal;
}

/** A dataset served over HTTP. */
export class HttpDataProvider implements DataProvider {
  readonly seqLen: number;
  readonly numSequences: number;
  /** The sample table. */
  readonly index: SequenceIndex;
  readonly #client: HttpRangeClient;
  readonly #vocabSize?: number;
  readonly #concurrency: number;

  private constructor(index: SequenceIndex, client: HttpRangeClient, options: HttpProviderOptions) {
    this.index = index;
    this.seqLen = index.seqLen;
    this.numSequences = index.numSequences;
    this.#client = client;
    this.#vocabSize = options.vocabSize;
    this.#concurrency = options.concurrency ?? 4;
  }

  /** Sizes every file (and reads `.npy` headers), then builds the sample table. */
  static async open(
    location: HttpLocation | string[],
    options: HttpProviderOptions,
  ): Promise<HttpDataProvider> {
    const urls = Array.isArray(location) ? location : httpLocationUrls(location);
    const client = new HttpRangeClient(options);
    // Size the files a few at a time (a NumberedFiles location may list hundreds).
    const layouts: TokenFileLayout[] = new Array(urls.length);
    await forEachLimited(urls.length, options.concurrency ?? 4, async (i, signal) => {
      layouts[i] = await remoteLayout(client, urls[i], { ...options, signal });
    }, options.signal);
    return new HttpDataProvider(buildSequenceIndex(layouts, options), client, options);
  }

  /** The sequences `batch.start..batch.end`, one range request per contiguous run. */
  getSamples(batch: BatchId, options: { signal?: AbortSignal } = {}): Promise<TokenBatch> {
    return readBatch(
      this.index,
      batch,
      (run, signal) =>
        this.#client.range(this.index.files[run.file].name, run.byteOffset, run.byteLength, signal),
      { vocabSize: this.#vocabSize, concurrency: this.#concurrency, signal: options.signal },
    );
  }

  /** Nothing to release: requests are not pooled beyond fetch's own pool. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

async function remoteLayout(
  client: HttpRangeClient,
  url: string,
  options: HttpProviderOptions,
): Promise<TokenFileLayout> {
  const size = await client.size(url, options.signal);
  if (!isNpyFileName(url)) return rawLayout(url, size, options.tokenSize);
  const preamble = await client.range(url, 0, Math.min(NPY_PREAMBLE_BYTES, size), options.signal);
  const headerBytes = Math.min(npyHeaderLength(preamble, url), size);
  const header = parseNpyHeader(await client.range(url, 0, headerBytes, options.signal), url);
  return npyLayout(url, size, header, options.tokenSize);
}
