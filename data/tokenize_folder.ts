/**
 * Tokenizes a folder of `.txt` files into `.ds` files (LLaMA-2 tokens, u16): each
 * `name.txt` becomes `name.ds` holding `<s> text </s>`. Used by `deno task tokenize`
 * to turn any plain-text collection into a dataset the providers can serve.
 *
 * @module
 */
import { basename, join } from "node:path";
import { encodeU16Tokens } from "./corpus.ts";
import { DataError } from "./errors.ts";
import { encodeDocument } from "./llama_tokenizer.ts";
import { sortByteWise } from "./token_file.ts";

/** One written file. */
export interface TokenizedFile {
  /** The `.txt` file read. */
  input: string;
  /** The `.ds` file written. */
  output: string;
  /** Tokens written, BOS and EOS included. */
  tokens: number;
}

/**
 * Tokenizes every `.txt` file directly in `inputDir` (byte-wise sorted) into
 * `outputDir` (created if needed). Throws {@linkcode DataError} if `inputDir` is
 * missing, has no `.txt` files, or a file is not valid UTF-8.
 */
export async function tokenizeFolder(
  inputDir: string,
  outputDir: string,
): Promise<TokenizedFile[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(inputDir)) {
      if (e.isFile && e.name.endsWith(".txt")) names.push(e.name);
    }
  } catch (cause) {
    throw new DataError(`Cannot read input folder "${inputDir}": ${(cause as Error).message}`, {
      file: inputDir,
    }, { cause });
  }
  if (names.length === 0) {
    throw new DataError(`Input folder "${inputDir}" has no .txt files`, { file: inputDir });
  }
  await Deno.mkdir(outputDir, { recursive: true });
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const written: TokenizedFile[] = [];
  for (const name of sortByteWise(names)) {
    const input = join(inputDir, name);
    let text: string;
    try {
      text = decoder.decode(await Deno.readFile(input));
    } catch (cause) {
      throw new DataError(`${input}: not valid UTF-8 text`, { file: input }, { cause });
    }
    const ids = encodeDocument(text);
    const output = join(outputDir, `${basename(name, ".txt")}.ds`);
    await Deno.writeFile(output, encodeU16Tokens(ids));
    written.push({ input, output, tokens: ids.length });
  }
  return written;
}
