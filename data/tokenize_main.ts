/**
 * `deno task tokenize --input DIR --output DIR`: every `.txt` file in DIR becomes a
 * `.ds` file of LLaMA-2 tokens (see tokenize_folder.ts).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { DataError } from "./errors.ts";
import { tokenizeFolder } from "./tokenize_folder.ts";

async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { input: { type: "string" }, output: { type: "string" }, help: { type: "boolean" } },
  });
  if (values.help || values.input === undefined || values.output === undefined) {
    console.error("usage: deno task tokenize --input DIR --output DIR");
    return values.help ? 0 : 2;
  }
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
