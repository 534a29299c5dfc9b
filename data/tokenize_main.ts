/**
 * `deno task tokenize --input DIR --output DIR`: every `.txt` file in DIR becomes a
 * `.ds` file of LLaMA-2 tokens (see tokenize_folder.ts).
 *
 * @module
 */
import { parseOrExit } from "../cli/entry.ts";
import { UsageError } from "../common/mod.ts";
import { DataError } from "./errors.ts";
import { tokenizeFolder } from "./tokenize_folder.ts";

/** The flags of `deno task tokenize`. */
export const TOKENIZE_SPEC = {
  usage: "deno task tokenize --input DIR --output DIR",
  summary: "Tokenizes every .txt file in the input folder with the LLaMA-2 tokenizer into a " +
    ".ds file of two-byte tokens in the output folder.",
  flags: {
    input: { type: "string", value: "DIR", description: "folder of .txt files", required: true },
    output: {
      type: "string",
      value: "DIR",
      description: "folder for the .ds files (created)",
      required: true,
    },
  },
  footer: "Exit status: 0 done, 1 unreadable input, 2 bad arguments.",
} as const;

async function main(args: string[]): Promise<number> {
  const values = parseOrExit(TOKENIZE_SPEC, ({ values }) => {
    if (values.input === undefined) throw new UsageError("--input DIR is required");
    if (values.output === undefined) throw new UsageError("--output DIR is required");
    return { input: values.input, output: values.output };
  }, { argv: args });
  try {
    const files = await tokenizeFolder(values.input, values.output);
    for (const f of files) console.log(`${f.input} -> ${f.output}: ${f.tokens} tokens`);
    console.log(`${files.length} files, ${files.reduce((n, f) => n + f.tokens, 0)} tokens`);
    return 0;
  } catch (e) {
    if (e instanceof DataError) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
