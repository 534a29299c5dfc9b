/**
 * A seeded token sampler: {@link chooseToken} with its uniform numbers drawn from the project's
 * specified random stream (data/shuffle.ts `Sha256CounterStream`, the one the data shuffle uses),
 * so `--seed N` gives the same tokens from the same logits on every machine.
 *
 * @module
 */
import { checkSampling, chooseToken, type SamplingOptions } from "./sampling.ts";
import { Sha256CounterStream, SHUFFLE_SEED_BYTES } from "../data/mod.ts";

/** The stream's 32-byte key for a u32 seed: big-endian in bytes 28..32, as the trainer's shuffle. */
export function samplingSeedBytes(seed: number): Uint8Array {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) {
    throw new RangeError(`seed must be an integer in [0, 2^32), got ${seed}`);
  }
  const out = new Uint8Array(SHUFFLE_SEED_BYTES);
  new DataView(out.buffer).setUint32(SHUFFLE_SEED_BYTES - 4, seed, false);
  return out;
}

/** Chooses tokens from logits with `options`, drawing from the stream of `seed`. */
export class TokenSampler {
  readonly options: SamplingOptions;
  readonly seed: number;
  readonly #stream: Sha256CounterStream;

  constructor(options: SamplingOptions, seed: number) {
    checkSampling(options);
    this.options = options;
    this.seed = seed;
    this.#stream = new Sha256CounterStream(samplingSeedBytes(seed));
  }

  /** The next token for `logits` (one word of the stream per draw; none when greedy). */
  next(logits: ArrayLike<number>): number {
    return chooseToken(logits, this.options, () => this.#stream.nextU32() / 0x1_0000_0000);
  }
}
