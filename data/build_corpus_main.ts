/**
 * `deno task build-corpus [--tokenizer llama|bytes] [--out DIR] [--check]`: builds the bundled
 * Brown corpus in one tokenization (see corpus.ts). With `--check`, rebuilds in memory and
 * compares with the files in DIR instead of writing, exiting 1 if any byte differs.
 *
 * @module
 */
import { parseArgs } from "node:util";
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

const USAGE = "usage: deno task build-corpus [--tokenizer llama|bytes] [--out DIR] [--check]";

async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      tokenizer: { type: "string", default: "llama" },
      out: { type: "string" },
      check: { type: "boolean" },
      help: { type: "boolean" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (!(TOKENIZER_NAMES as readonly string[]).includes(values.tokenizer)) {
    console.error(`build-corpus: --tokenizer must be llama or bytes, not "${values.tokenizer}"`);
    console.error(USAGE);
    return 2;
  }
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
