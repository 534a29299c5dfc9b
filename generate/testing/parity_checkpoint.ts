/**
 * The checkpoint `deno task generate`'s greedy output is held to `transformers`' on
 * (generate/transformers_parity_test.ts): {@link tinyModel} with the byte vocabulary, written
 * deterministically, so the test can write it again and check by SHA-256 that the stored
 * expectation was produced from the same bytes. Run it to write the folder for
 * tools/transformers_greedy.py:
 *
 * ```sh
 * deno run -A generate/testing/parity_checkpoint.ts /tmp/psyche-parity
 * python3 tools/transformers_greedy.py --model /tmp/psyche-parity \
 *   --prompt-ids 10,10,84,104,101 --max-new-tokens 24 --out generate/testdata/transformers_greedy.json
 * ```
 *
 * @module
 */
import { writeTinyCheckpoint } from "./checkpoint.ts";

/** Where the stored expectation lives (absent until someone with `transformers` produces it). */
export const PARITY_EXPECTATION = new URL("../testdata/transformers_greedy.json", import.meta.url);

/** The model of the parity check: 256 tokens (bytes), 2 layers, GQA, seed 1, 64 positions. */
export const PARITY_MODEL = { vocabSize: 256, seed: 1, maxPositions: 64 } as const;

/** Writes the parity checkpoint into `dir` (config.json + model.safetensors). */
export function writeParityCheckpoint(dir: string): Promise<string> {
  return writeTinyCheckpoint(dir, PARITY_MODEL);
}

/** The SHA-256 of a file, in hex. */
export async function sha256File(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

if (import.meta.main) {
  const dir = Deno.args[0];
  if (dir === undefined) {
    console.error("usage: deno run -A generate/testing/parity_checkpoint.ts DIR");
    Deno.exit(2);
  }
  await writeParityCheckpoint(dir);
  console.log(`${dir}/model.safetensors: sha256 ${await sha256File(`${dir}/model.safetensors`)}`);
}
