/**
 * `deno task generate`'s greedy tokens against Hugging Face `transformers`' greedy tokens on the
 * same checkpoint, from an expectation produced once with tools/transformers_greedy.py and
 * committed (generate/testdata/transformers_greedy.json). `transformers` cannot be installed
 * where this project is developed, so until someone produces that file this test is ignored,
 * and its name says how to produce it; the project's own stand-in meanwhile is the greedy check
 * against the f64 reference model (generate/generator_test.ts).
 */
import assert from "node:assert/strict";
import { generateTokens } from "./generator.ts";
import { TokenSampler } from "./sampler.ts";
import { GREEDY } from "./sampling.ts";
import {
  PARITY_EXPECTATION,
  sha256File,
  writeParityCheckpoint,
} from "./testing/parity_checkpoint.ts";
import { readModelDir } from "../model/mod.ts";
import { LlamaDecoder } from "../model/inference/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

/** What tools/transformers_greedy.py writes. */
interface Expectation {
  prompt_ids: number[];
  max_new_tokens: number;
  generated_ids: number[];
  files: Record<string, string>;
  versions: Record<string, string>;
}

async function readExpectation(): Promise<Expectation | null> {
  try {
    return JSON.parse(await Deno.readTextFile(PARITY_EXPECTATION));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

const expected = await readExpectation();

Deno.test({
  name: expected === null
    ? "greedy tokens equal transformers' (ignored: generate/testdata/transformers_greedy.json " +
      "has not been produced yet; write the checkpoint with generate/testing/parity_checkpoint.ts " +
      "and run tools/transformers_greedy.py where transformers is installed)"
    : `greedy tokens equal transformers' (${JSON.stringify(expected.versions)})`,
  ignore: expected === null,
  fn: async () => {
    const want = expected!;
    const dir = await Deno.makeTempDir({ prefix: "generate-parity-" });
    try {
      await writeParityCheckpoint(dir);
      for (const [file, sha] of Object.entries(want.files)) {
        assert.equal(
          await sha256File(`${dir}/${file}`),
          sha,
          `${file} is not the file the expectation was produced from: produce it again`,
        );
      }
      const { config, layout, weights } = await readModelDir(dir);
      using rt = await GpuRuntime.create();
      using decoder = new LlamaDecoder(rt, {
        config,
        layout,
        weights: weights!,
        contextLength: want.prompt_ids.length + want.max_new_tokens,
      });
      const r = await generateTokens(decoder, want.prompt_ids, {
        maxNewTokens: want.max_new_tokens,
        sampler: new TokenSampler(GREEDY, 0),
      });
      assert.deepEqual(r.tokens, want.generated_ids);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
