/**
 * The TCP data server's `data.toml` (Psyche's `DataServerTomlConfig`): which folder of
 * tokenized files to serve, their token width, the sequence length and the shuffle seed.
 *
 * ```toml
 * dir = "../../data/corpus/train"   # relative paths resolve against the data.toml's folder
 * token_size = "TwoBytes"           # or "FourBytes"
 * seq_len = 128
 * shuffle_seed = [1, 2, ..., 32]    # 32 bytes
 * ```
 *
 * Parsing is pure (no file access); the caller reads the file and checks that `dir` exists.
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import {
  ConfigError,
  type ConfigIssue,
  parseTomlText,
  TableReader,
  TOKEN_SIZE_NAMES,
  type TokenSize,
} from "../common/mod.ts";

/** Bytes in a data server's shuffle seed. */
export const SHUFFLE_SEED_BYTES = 32;

/** Bytes per token for each {@link TokenSize}. */
export function tokenSizeBytes(size: TokenSize): 2 | 4 {
  return size === "TwoBytes" ? 2 : 4;
}

/** A validated `data.toml`. */
export interface DataServerConfig {
  /** Folder holding the `.ds`/`.bin`/`.npy` token files (resolved when `baseDir` was given). */
  dir: string;
  /** Width of each token in the files. */
  tokenSize: TokenSize;
  /** Tokens per served sequence; must equal the run's `max_seq_len`. */
  seqLen: number;
  /** 32-byte seed of the sequence-order shuffle. */
  shuffleSeed: Uint8Array;
}

/** Options for {@link parseDataConfig}. */
export interface ParseDataConfigOptions {
  /** Folder that a relative `dir` is resolved against (normally the data.toml's folder). */
  baseDir?: string;
}

/**
 * Parses and validates `data.toml` text. Throws {@link ConfigError} listing every problem
 * (missing, unknown or mistyped keys, `seq_len` of 0, a seed that is not 32 bytes).
 *
 * @example
 * ```ts
 * import { parseDataConfig } from "./data_config.ts";
 * const seed = Array.from({ length: 32 }, (_, i) => i + 1).join(", ");
 * const text = `dir = "corpus"\ntoken_size = "TwoBytes"\nseq_len = 128\nshuffle_seed = [${seed}]`;
 * const config = parseDataConfig(text, "data.toml", { baseDir: "/srv" });
 * if (config.dir !== "/srv/corpus" || config.seqLen !== 128) throw new Error("wrong");
 * ```
 */
export function parseDataConfig(
  text: string,
  source: string,
  options: ParseDataConfigOptions = {},
): DataServerConfig {
  const issues: ConfigIssue[] = [];
  const doc = parseTomlText(text, issues);
  if (doc === undefined) throw new ConfigError(source, issues);
  const root = new TableReader(doc, "", issues);
  const dir = root.string("dir");
  const tokenSize = root.oneOf("token_size", TOKEN_SIZE_NAMES);
  const seqLen = root.integer("seq_len", "u32");
  const shuffleSeed = root.bytes("shuffle_seed", SHUFFLE_SEED_BYTES);
  root.finish();
  if (dir !== undefined && dir.trim() === "") root.report("dir", dir, "must not be empty");
  if (dir !== undefined && dir.includes("\0")) root.report("dir", dir, "must not contain NUL");
  if (seqLen === 0) root.report("seq_len", seqLen, "must be > 0");
  if (
    issues.length > 0 || dir === undefined || tokenSize === undefined || seqLen === undefined ||
    shuffleSeed === undefined
  ) {
    throw new ConfigError(source, issues);
  }
  const resolved = options.baseDir !== undefined && !isAbsolute(dir)
    ? join(options.baseDir, dir)
    : dir;
  return { dir: resolved, tokenSize, seqLen, shuffleSeed };
}
