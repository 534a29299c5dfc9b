/**
 * A bench for NetworkTrainer tests (not part of the public surface): llama-tiny from
 * config/models, a temporary data set of seeded sequences, and trainers built on a runtime with
 * the DisTrO options a test names. Disposing it closes the data and removes its folder.
 *
 * @module
 */
import { type LoadedModel, loadModel } from "../model_source.ts";
import { NetworkTrainer } from "../trainer.ts";
import { LocalDataProvider } from "../../data/mod.ts";
import type { GpuRuntime } from "../../shaders/mod.ts";
import type { HostCodecOptions } from "../../optimizer/mod.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** Tokens per sequence of the bench's data set, and the trainers' sequence length. */
export const TINY_SEQ_LEN = 16;

/** The DisTrO options a {@link NetworkTrainer} takes. */
export type DistroOptions = ConstructorParameters<typeof NetworkTrainer>[0]["distro"];

/** DisTrO without weight decay or gradient clipping: θ changes only by what is applied. */
export const PLAIN_DISTRO: DistroOptions = {
  chunk: 64,
  topk: 4,
  decay: 0.999,
  weightDecay: null,
  clipGradNorm: null,
  quantize1bit: true,
};

/** {@link PLAIN_DISTRO} with weight decay 0.1 and the gradient norm clipped at 1. */
export const CLIPPED_DISTRO: DistroOptions = { ...PLAIN_DISTRO, weightDecay: 0.1, clipGradNorm: 1 };

/** What {@link tinyTrainerBench} opens; `await using` closes the data and removes `dir`. */
export interface TinyTrainerBench extends AsyncDisposable {
  /** The temporary folder holding `train.bin`; tests may write beside it. */
  readonly dir: string;
  readonly data: LocalDataProvider;
  readonly model: LoadedModel;
  /**
   * A trainer of llama-tiny on `rt`: micro-batches of 1 sequence, at most 2 per batch, holding
   * `weights` (the loaded model's unless given), its codec where `codec` says (the trainer's
   * default unless given).
   */
  trainer(
    rt: GpuRuntime,
    distro?: DistroOptions,
    weights?: Float32Array,
    codec?: HostCodecOptions,
  ): NetworkTrainer;
}

/**
 * `sequences` sequences of {@link TINY_SEQ_LEN} seeded tokens (below 512) in a new temporary
 * folder, opened, and llama-tiny loaded for run `runId`.
 */
export async function tinyTrainerBench(
  sequences: number,
  runId = "trainer-test",
): Promise<TinyTrainerBench> {
  const dir = await Deno.makeTempDir();
  const remove = () => Deno.remove(dir, { recursive: true });
  try {
    const tokens = Uint16Array.from(
      { length: sequences * TINY_SEQ_LEN },
      (_, i) => (i * 37 + 11) % 512,
    );
    await Deno.writeFile(`${dir}/train.bin`, new Uint8Array(tokens.buffer));
    const data = await LocalDataProvider.open(dir, {
      seqLen: TINY_SEQ_LEN,
      tokenSize: "TwoBytes",
      vocabSize: 512,
    });
    const model = await loadModel(`${ROOT}config/models/llama-tiny`, runId).catch(async (e) => {
      await data.close();
      throw e;
    });
    return {
      dir,
      data,
      model,
      trainer: (rt, distro = PLAIN_DISTRO, weights = model.weights, codec) =>
        new NetworkTrainer({
          rt,
          config: model.config,
          layout: model.layout,
          weights,
          seqLen: TINY_SEQ_LEN,
          microBatch: 1,
          maxBatch: 2,
          distro,
          codec,
        }),
      async [Symbol.asyncDispose]() {
        await data.close();
        await remove();
      },
    };
  } catch (e) {
    await remove();
    throw e;
  }
}
