/**
 * The files both sides of the PyTorch comparison read: a seeded model folder (our init, written
 * as an HF folder by model/checkpoint.ts) and one batch of token ids from a token folder (the
 * bundled corpus), stored as little-endian uint32 for `llama_step.py`.
 *
 * @module
 */
import type { TokenSize } from "../../common/mod.ts";
import { initParams, type LlamaConfig, llamaParamLayout, writeModelDir } from "../../model/mod.ts";
import { LocalDataProvider } from "../../data/mod.ts";

/**
 * Writes `DIR/config.json` and an F32 `DIR/model.safetensors` with the seeded init every client
 * derives from `seed` (model/params.ts), so both sides start from the same bits.
 */
export async function writeSeededModel(
  dir: string,
  config: LlamaConfig,
  seed: number,
): Promise<void> {
  const layout = llamaParamLayout(config);
  await writeModelDir(dir, { config, layout, weights: initParams(layout, config, seed) });
}

/**
 * Token ids folded into `[0, vocabSize)` by `id mod vocabSize`, so a model with a smaller
 * vocabulary than the corpus's tokenizer (the tiny config's 512) can read the same text. Ids
 * already inside the vocabulary are unchanged.
 */
export function foldTokens(tokens: Uint32Array, vocabSize: number): Uint32Array {
  if (!Number.isInteger(vocabSize) || vocabSize < 1) {
    throw new RangeError(`vocabSize must be a positive integer, got ${vocabSize}`);
  }
  return tokens.map((t) => t % vocabSize);
}

/**
 * The first `batch` sequences of `seqLen` tokens of the token folder `dataDir`, in file order
 * (no shuffle), folded into the model's vocabulary: `[batch, seqLen]` ids.
 */
export async function corpusBatch(
  dataDir: string,
  options: { batch: number; seqLen: number; vocabSize: number; tokenSize?: TokenSize },
): Promise<Uint32Array> {
  const { batch, seqLen, vocabSize } = options;
  const data = await LocalDataProvider.open(dataDir, {
    seqLen,
    tokenSize: options.tokenSize ?? "TwoBytes",
  });
  try {
    if (data.numSequences < batch) {
      throw new RangeError(
        `"${dataDir}" holds ${data.numSequences} sequences of ${seqLen} tokens, the batch needs ${batch}`,
      );
    }
    const { tokens } = await data.getSamples({ start: 0, end: batch - 1 });
    return foldTokens(tokens, vocabSize);
  } finally {
    await data.close();
  }
}

/** Token ids as the bytes `llama_step.py --tokens` reads: little-endian uint32, in order. */
export function encodeTokenFile(tokens: Uint32Array): Uint8Array {
  const out = new Uint8Array(tokens.length * 4);
  const view = new DataView(out.buffer);
  tokens.forEach((t, i) => view.setUint32(i * 4, t, true));
  return out;
}

/**
 * Reverse of {@link encodeTokenFile}: `[batch, seqLen]` ids. Throws a RangeError naming the
 * expected and found byte counts when the file does not hold exactly that many ids.
 */
export function decodeTokenFile(
  bytes: Uint8Array,
  shape: { batch: number; seqLen: number },
): Uint32Array {
  const n = shape.batch * shape.seqLen;
  if (bytes.length !== n * 4) {
    throw new RangeError(
      `token file has ${bytes.length} bytes, expected ${n * 4} ` +
        `(${shape.batch} x ${shape.seqLen} uint32 ids)`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Uint32Array.from({ length: n }, (_, i) => view.getUint32(i * 4, true));
}
