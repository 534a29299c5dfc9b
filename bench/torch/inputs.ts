/**
 * The files both sides of the PyTorch comparison read: a seeded model folder (our init, written
 * as an HF folder by model/checkpoint.ts) and one batch of token ids from a token folder (the
 * bundled corpus), stored as little-endian uint32 for `llama_step.py`.
 *
 * @module
 */
import type { TokenSize } from "../../common/mod.ts";
import {
  type FloatRangeReader,
  initTensorSlice,
  type LlamaConfig,
  llamaParamLayout,
  type ParamLayout,
  SAVE_CHUNK_FLOATS,
  writeModelDir,
} from "../../model/mod.ts";
import { LocalDataProvider } from "../../data/mod.ts";

/**
 * A reader of the seeded init's flat floats (model/params.ts `initTensorSlice`, the bits of
 * `initParams`) for `writeModelDir`: each range, which lies inside one tensor, is generated into
 * one reused chunk of at most `chunkFloats`, so the whole model is never on the host.
 */
export function seededRangeReader(
  layout: ParamLayout,
  config: Pick<LlamaConfig, "initializerRange">,
  seed: number,
  chunkFloats: number = SAVE_CHUNK_FLOATS,
): FloatRangeReader {
  const largest = layout.entries.reduce((m, e) => Math.max(m, e.size), 0);
  const chunk = new Float32Array(Math.min(chunkFloats, largest));
  const entries = layout.entries;
  // deno-lint-ignore require-await -- a FloatRangeReader's errors are rejections
  return async (start, count) => {
    // Entries are in flat order: the last one starting at or before `start` holds it.
    let lo = 0, hi = entries.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (entries[mid].offset <= start) lo = mid;
      else hi = mid - 1;
    }
    const e = entries[lo];
    if (count > chunk.length) {
      throw new RangeError(`a range of ${count} floats is over the chunk of ${chunk.length}`);
    }
    const out = chunk.subarray(0, count);
    initTensorSlice(e, { config, seed, start: start - e.offset }, out);
    return out;
  };
}

/**
 * Writes `DIR/config.json` and F32 weights with the seeded init every client derives from
 * `seed` (model/params.ts), so both sides start from the same bits: `model.safetensors`, or the
 * HF shards and their index once the weights are over model/shards.ts's shard size (a 1B model).
 * Streamed a chunk at a time: the host never holds the model (4.9 GB at 1B).
 */
export async function writeSeededModel(
  dir: string,
  config: LlamaConfig,
  seed: number,
  options?: { chunkFloats?: number },
): Promise<void> {
  const layout = llamaParamLayout(config);
  const chunkFloats = options?.chunkFloats ?? SAVE_CHUNK_FLOATS;
  await writeModelDir(dir, {
    config,
    layout,
    weights: seededRangeReader(layout, config, seed, chunkFloats),
    chunkFloats,
  });
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
