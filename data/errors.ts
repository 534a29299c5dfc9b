/**
 * The one error class data providers throw for bad data, bad configuration and failed
 * reads, carrying where the problem is so an operator can act on it.
 *
 * @module
 */

/** Where a data problem was found. Every field is optional; messages repeat them. */
export interface DataErrorContext {
  /** File path or URL. */
  file?: string;
  /** Byte offset inside `file`. */
  offset?: number;
  /** Configuration key (e.g. `"seq_len"`). */
  key?: string;
  /** Whether retrying the same request might succeed (timeouts, dropped connections, 5xx). */
  retryable?: boolean;
}

/**
 * A dataset could not be read, or was read and is wrong: a truncated file, a token
 * outside the vocabulary, a missing folder, an HTTP 404, a short read, a batch out of range.
 * Providers never return a short or partial batch; they throw this instead.
 */
export class DataError extends Error {
  /** Always `"DataError"`. */
  override name = "DataError";
  /** File path or URL, if the problem is in one. */
  readonly file?: string;
  /** Byte offset inside {@linkcode DataError.file}, if known. */
  readonly offset?: number;
  /** Configuration key, if the problem is a setting. */
  readonly key?: string;
  /** Whether retrying might succeed. */
  readonly retryable: boolean;

  /** `message` should already name the file/offset/key; `context` makes them machine-readable. */
  constructor(message: string, context: DataErrorContext = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.file = context.file;
    this.offset = context.offset;
    this.key = context.key;
    this.retryable = context.retryable ?? false;
  }
}
