/**
 * `deno task build-corpus [--tokenizer llama|bytes] [--out DIR] [--check]`: builds the bundled
 * Brown corpus in one tokenization (see corpus.ts). With `--check`, rebuilds in memory and
 * compares with the files in DIR instead of writing, exiting 1 if any byte differs.
 *
 * @module
 */
import { parseOrExit } from "../cli/entry.ts";
import { UsageError } from "../common/mod.ts";
import { join } from "node:path";
import {
  buildBrownCorpus,
  CORPUS_TOKENIZERS,
  readCorpusManifest,
  sha256Hex,
  SPLITS,
  TOKENIZER_NAMES,
  type TokenizerName,
  writeCorpus,
} from "./corpus.ts";

/** The flags of `deno task build-corpus`. */
export const BUILD_CORPUS_SPEC = {
  usage: "deno task build-corpus [--tokenizer llama|bytes] [--out DIR] [--check]",
  summary: "Builds the bundled Brown corpus (train and validation splits) in one tokenization, " +
    "or with --check rebuilds it in memory and compares it with the files in DIR.",
  flags: {
    tokenizer: {
      type: "string",
      value: TOKENIZER_NAMES.join("|"),
      description: "LLaMA-2 tokens (two bytes each) or raw bytes",
      default: "llama",
    },
    out: {
      type: "string",
      value: "DIR",
      description: "where to write the corpus",
      defaultText: "data/corpus/brown (llama), data/corpus/brown-bytes (bytes)",
    },
    check: {
      type: "boolean",
      description: "compare a rebuild with DIR instead of writing; exit 1 if any byte differs",
    },
  },
} as const;

async function main(args: string[]): Promise<number> {
  const values = parseOrExit(BUILD_CORPUS_SPEC, ({ values }) => {
    if (!(TOKENIZER_NAMES as readonly string[]).includes(values.tokenizer ?? "")) {
      throw new UsageError(
        `--tokenizer must be ${TOKENIZER_NAMES.join(" or ")}, found "${values.tokenizer}"`,
      );
    }
    return values;
  }, { argv: args });
  const tokenizer = values.tokenizer as TokenizerName;
  const out = values.out ?? CORPUS_TOKENIZERS[tokenizer].dir;
  const started = performance.now();
  const corpus = await buildBrownCorpus({
    tokenizer,
    onDocument: (name, i, total) => {
      if ((i + 1) % 50 === 0 || i + 1 === total) {
        console.error(`tokenized ${i + 1}/${total} (${name})`);
      }
    },
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  for (const s of SPLITS) {
    const split = corpus.manifest.splits[s];
    console.log(
      `${s}: ${split.documents.length} documents, ${split.tokens} tokens, sha256 ${
        split.files[0].sha256
      }`,
    );
  }
  if (values.check) {
    const committed = await readCorpusManifest(out);
    let ok = JSON.stringify(committed) === JSON.stringify(corpus.manifest);
    for (const s of SPLITS) {
      const bytes = await Deno.readFile(join(out, corpus.manifest.splits[s].files[0].path));
      ok &&= sha256Hex(bytes) === corpus.manifest.splits[s].files[0].sha256;
    }
    console.log(ok ? `rebuild matches ${out} (${seconds} s)` : `rebuild DIFFERS from ${out}`);
    return ok ? 0 : 1;
  }
  await writeCorpus(corpus, out);
  console.log(`wrote ${out} in ${seconds} s`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
