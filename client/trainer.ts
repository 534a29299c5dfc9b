/**
 * The networked client's model and optimizer on the GPU: train an assigned batch into a
 * DisTrO result, apply the round's consensus results, hash and save the parameters.
 *
 * It builds on the single-node trainer's gradient pass (train/trainer.ts `encodeGradients`):
 * per round `h`,
 * 1. `apply(results of h−2)`: `θ −= lr·sign(exact aggregate)` (optimizer/exact.ts), results in
 *    canonical order, so every honest client computes bit-identical parameters; queued, not
 *    waited for;
 * 2. `train(batch of h)`, one GPU step (on GPUs its layers are submitted as they are encoded):
 *    the lookahead `P = θ − lr_{t−1}·sign(δ)` into a buffer of its own, with θ's weight decay for
 *    this step in the same pass; forward/backward of the batch's micro-batches on P; DisTrO
 *    generate, which folds the gradient into δ and selects the top-k coefficients. The loss and the result are read back together (one
 *    completion wait, not one per stage) and the result is encoded (optimizer/wire.ts).
 *
 * θ holds only applied updates and weight decay, never the lookahead, so
 * {@link NetworkTrainer.paramsHash} compares across clients at any time.
 *
 * @module
 */
import { checkTokens } from "./data_check.ts";
import type { BatchId } from "../common/mod.ts";
import {
  bindingRanges,
  concatRows,
  type LlamaConfig,
  LlamaModel,
  type ParamLayout,
  SAVE_CHUNK_FLOATS,
  sliceRows,
  type TrainingRows,
  uploadParams,
  type UploadProgress,
  writeDirAtomically,
  writeModelDir,
} from "../model/mod.ts";
import {
  canonicalOrder,
  decodePayload,
  type DistroConfig,
  DistroOptimizer,
  type DistroResult,
  encodePayload,
  HostCodec,
  type HostCodecOptions,
  type PayloadExpectation,
} from "../optimizer/mod.ts";
import { GpuDigest, type GpuRuntime, RoundBf16 } from "../shaders/mod.ts";
import type { DataProvider } from "../data/mod.ts";
import { encodeGradients, meanLoss } from "../train/mod.ts";

/** What {@link NetworkTrainer} is built from. */
export interface NetworkTrainerOptions {
  readonly rt: GpuRuntime;
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  /**
   * Initial parameters `[layout.totalSize]` (identical on every client), copied in at
   * construction; absent: zeros, for a caller that puts them there with {@link NetworkTrainer.upload}
   * (a chunk at a time, with progress: what the client does, as a large model needs).
   */
  readonly weights?: Float32Array;
  /** The run's `max_seq_len`. */
  readonly seqLen: number;
  /** Sequences per forward/backward. */
  readonly microBatch: number;
  /** Most sequences one round can assign this client. */
  readonly maxBatch: number;
  readonly distro: DistroConfig;
  /** Recompute activations in the backward (default false): same bits, less memory. */
  readonly recompute?: boolean;
  /**
   * The run verifies results (`verification_percent > 0`): payloads carry the state digests
   * (default false).
   */
  readonly verifying?: boolean;
  /**
   * Where the host's codec runs (optimizer/codec_pool.ts): by default a large round's aggregate
   * and a large payload's decode on worker threads, one per core, at most 8. A 1B model's
   * aggregate of 4 results holds the main thread for 160-240 ms otherwise, and each of its
   * payloads 20 ms.
   */
  readonly codec?: HostCodecOptions;
}

/**
 * The stages of {@link NetworkTrainer.warmUp}: the dry step that builds every pipeline, the one
 * that measures a step, and the apply of its result (on scratch, not θ) with the digest and
 * the optimizer's reset.
 */
export const WARMUP_STAGES = ["first_step", "second_step", "apply"] as const;
/** One of {@link WARMUP_STAGES}. */
export type WarmUpStage = typeof WARMUP_STAGES[number];

/** One trained round. */
export interface TrainedRound {
  readonly result: DistroResult;
  /** Mean cross-entropy over the batch's predictions (before the update). */
  readonly loss: number;
  readonly tokens: number;
  /** Wall time of data read + GPU work, milliseconds. */
  readonly ms: number;
}

/** The inclusive ranges of `batch`, wrapped modulo the dataset size. */
export function wrappedRanges(batch: BatchId, numSequences: number): BatchId[] {
  if (numSequences < 1) throw new RangeError("the dataset has no sequences");
  const out: BatchId[] = [];
  let left = batch.end - batch.start + 1;
  let start = batch.start % numSequences;
  while (left > 0) {
    const n = Math.min(left, numSequences - start);
    out.push({ start, end: start + n - 1 });
    left -= n;
    start = 0;
  }
  return out;
}

/**
 * The micro-batches of `batch`: `[microBatch · seqLen]` ids each with the labels, position ids
 * and document lengths the data serves (model/rows.ts), read from `data` (wrapped
 * modulo its size) and checked against the model's vocabulary. RangeError when the batch is not
 * a whole number of micro-batches or needs more than `slots` of them.
 */
export async function readMicroBatches(args: {
  batch: BatchId;
  data: DataProvider;
  seqLen: number;
  microBatch: number;
  slots: number;
  vocabSize: number;
  signal?: AbortSignal;
}): Promise<TrainingRows[]> {
  const { batch, data, seqLen: T, microBatch } = args;
  const count = batch.end - batch.start + 1;
  if (count % microBatch !== 0) {
    throw new RangeError(
      `batch [${batch.start}, ${batch.end}] has ${count} sequences, not a multiple of the ` +
        `micro-batch size ${microBatch}`,
    );
  }
  const micro = count / microBatch;
  if (micro > args.slots) {
    throw new RangeError(
      `batch of ${count} sequences needs ${micro} micro-batches, the model holds ${args.slots}`,
    );
  }
  const parts = [];
  for (const r of wrappedRanges(batch, data.numSequences)) {
    parts.push(await data.getSamples(r, { signal: args.signal }));
  }
  const all = concatRows(parts, { seqLen: T });
  // A token the model cannot embed would read out of bounds on the GPU: refuse the batch.
  checkTokens(all.tokens, T, args.vocabSize);
  return Array.from(
    { length: micro },
    (_, i) => sliceRows(all, { seqLen: T, from: i * microBatch, to: (i + 1) * microBatch }),
  );
}

/** A client's model + DisTrO state on one GPU runtime. Dispose to free them. */
export class NetworkTrainer implements Disposable {
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  readonly model: LlamaModel;
  readonly distro: DistroOptimizer;
  /** What a payload for this model must look like. */
  readonly expectation: PayloadExpectation;
  /** The GPU runtime the model lives on. */
  readonly rt: GpuRuntime;
  readonly #microBatch: number;
  readonly #digest: GpuDigest;
  readonly #roundBf16: RoundBf16;
  readonly #codec: HostCodec;
  #nonce = 0;

  constructor(options: NetworkTrainerOptions) {
    const { rt, config, layout, weights, seqLen, microBatch, maxBatch, distro } = options;
    if (!Number.isInteger(microBatch) || microBatch < 1) {
      throw new RangeError(`micro-batch size must be a positive integer, found ${microBatch}`);
    }
    this.rt = rt;
    this.config = config;
    this.layout = layout;
    this.#microBatch = microBatch;
    this.model = new LlamaModel(rt, {
      config,
      layout,
      weights,
      microBatch,
      seqLen,
      slots: Math.max(1, Math.ceil(maxBatch / microBatch)),
      recompute: options.recompute ?? false,
    });
    this.distro = new DistroOptimizer(rt, {
      params: layout.entries,
      size: layout.totalSize,
      segments: this.model.params.segments,
      config: distro,
      label: "client distro",
    });
    this.expectation = {
      layouts: this.distro.layouts,
      quantize1bit: distro.quantize1bit,
      stateDigests: options.verifying ?? false,
    };
    this.#digest = new GpuDigest(rt);
    this.#roundBf16 = new RoundBf16(rt);
    this.#codec = new HostCodec(options.codec);
  }

  /**
   * Trains `batch` for `step` and returns the result to publish. The batch's sequence count
   * must be a multiple of the micro-batch size.
   */
  async train(args: {
    step: number;
    batch: BatchId;
    lr: number;
    prevLr: number;
    data: DataProvider;
    signal?: AbortSignal;
    /**
     * An attack a test ordered (client/attacks.ts): fold the gradient into δ times this factor
     * (−1 negates it, at the loss; above 1 scales it past the clip), and read these sequences
     * instead of `batch` (whose result is still published as `batch`'s). Never set in training.
     */
    attack?: { readonly gradientFactor?: number; readonly dataBatch?: BatchId };
    /** A warm-up's dry step ({@link warmUp}): θ is only read, never decayed. */
    dry?: boolean;
  }): Promise<TrainedRound> {
    const t0 = performance.now();
    const { batch } = args;
    const count = batch.end - batch.start + 1;
    const T = this.model.seqLen;
    const factor = args.attack?.gradientFactor ?? 1;
    const microBatches = await this.readMicroBatches(
      args.attack?.dataBatch ?? batch,
      args.data,
      args.signal,
    );
    // Lookahead, forward/backward and generate in one step; the two reads share one wait.
    const step = this.rt.beginStep(`train step ${args.step}`);
    const params = this.model.params;
    this.distro.encodeLookaheadApart(step, {
      params,
      prevLr: args.prevLr,
      lr: args.lr,
      readOnly: args.dry,
    });
    const { predictions, gradSumSq } = encodeGradients(
      this.model,
      step,
      microBatches,
      this.distro.lookaheadWeights,
      { negate: factor < 0 },
    );
    const clip = this.distro.config.clipGradNorm;
    this.distro.encodeGenerate(step, {
      params,
      grads: this.model.grads,
      lr: args.lr * Math.abs(factor),
      gradSumSq: clip !== null && clip > 0 ? gradSumSq : null,
    });
    await step.submit({ wait: false, signal: args.signal });
    const [stats, own] = await Promise.all([
      this.model.readStats(microBatches.length, { signal: args.signal }),
      this.distro.readResult({ signal: args.signal }),
    ]);
    const result: DistroResult = {
      step: args.step,
      batch: { ...batch },
      trainerNonce: this.#nonce++ >>> 0,
      params: own,
    };
    const loss = meanLoss(stats.lossSum, predictions);
    return { result, loss, tokens: count * T, ms: performance.now() - t0 };
  }

  /** The token micro-batches of `batch` for this model ({@link readMicroBatches}). */
  readMicroBatches(
    batch: BatchId,
    data: DataProvider,
    signal?: AbortSignal,
  ): Promise<TrainingRows[]> {
    return readMicroBatches({
      batch,
      data,
      seqLen: this.model.seqLen,
      microBatch: this.#microBatch,
      slots: this.model.slots,
      vocabSize: this.config.vocabSize,
      signal,
    });
  }

  /**
   * A peer's payload decoded (optimizer/wire.ts `decodePayload`, against `expectation`, by
   * default this model's), on a worker thread when it is large; throws what the decode throws.
   */
  decode(bytes: Uint8Array, expectation = this.expectation): Promise<DistroResult> {
    return this.#codec.decode(bytes, expectation);
  }

  /**
   * `θ −= lr·sign(aggregate)` over `results` (any order: they are put in canonical order).
   * Returns false, changing nothing, when there are none.
   */
  async apply(results: readonly DistroResult[], lr: number): Promise<boolean> {
    if (results.length === 0) return false;
    const ordered = canonicalOrder(results);
    const update = await this.#codec.aggregate(this.distro.layouts, ordered.map((r) => r.params));
    const step = this.rt.beginStep("apply results");
    this.distro.encodeApply(step, { params: this.model.params, lr, update });
    await step.submit({ wait: false }); // later steps and reads queue behind it
    return true;
  }

  /**
   * `θ ← θ·(1 − lr·wd)`: the decoupled weight decay a trainer applies in its lookahead pass,
   * for a client with no batch in a training round, so it stays bit-identical with the
   * trainers. On the GPU, in place; queued, not waited for. Nothing happens without weight
   * decay.
   */
  async decayWeights(lr: number): Promise<void> {
    const step = this.rt.beginStep("weight decay");
    this.distro.encodeDecay(step, { params: this.model.params, lr });
    await step.submit({ wait: false });
  }

  /** Writes `weights` into θ a flushed chunk at a time (model/weights_upload.ts). */
  upload(
    weights: Float32Array,
    options: { onProgress?: UploadProgress; signal?: AbortSignal } = {},
  ): Promise<void> {
    return uploadParams(this.rt, this.model.params, weights, options);
  }

  /**
   * Builds every GPU pipeline a round uses and measures a step, without changing θ: two dry
   * training steps (lookahead, forward/backward, DisTrO generate) of `sequences` zero-token
   * sequences at learning rate 0, the apply of the second's result, the digest; then δ is
   * zeroed. The first step pays for the pipeline builds, the second is what a training step
   * costs here. A client does this before it reports ready, so its first real step is not the
   * slow one. For a 1B model each stage takes seconds to minutes: `onStage` hears as each begins.
   *
   * θ is never written, so nothing has to be put back from the host (a 1B model's 4.9 GB took
   * minutes where staging writes are slow). Even at lr 0 the passes that write θ change bits:
   * the apply's `θ − 0·sign(X)` turns −0 into +0 where the sign is negative, and the weight
   * decay's `θ·1` quiets a signalling NaN (and may flush a subnormal where WGSL lets a GPU).
   * So those passes run on scratch targets laid out like θ, with the same pipelines and
   * dispatches: the apply on the lookahead weights and the decay on the gradients, both
   * rewritten before any real step reads them. That costs no memory and no copy, where saving
   * θ on the GPU and copying it back would cost θ's size again (or a segment's) in the memory
   * plan and two passes over θ. The dry steps' timing lacks only the decay's write of θ.
   */
  async warmUp(
    sequences: number,
    signal?: AbortSignal,
    hooks: { onStage?: (stage: WarmUpStage, sequences: number) => void } = {},
  ): Promise<{ firstMs: number; stepMs: number }> {
    const count = Math.max(1, Math.ceil(sequences / this.#microBatch)) * this.#microBatch;
    const seqLen = this.model.seqLen;
    const zeros: DataProvider = {
      seqLen,
      numSequences: count,
      getSamples: (batch) => {
        const rows = batch.end - batch.start + 1;
        return Promise.resolve({ count: rows, seqLen, tokens: new Uint32Array(rows * seqLen) });
      },
      close: () => Promise.resolve(),
    };
    const dry = (step: number) =>
      this.train({
        step,
        batch: { start: 0, end: count - 1 },
        lr: 0,
        prevLr: 0,
        data: zeros,
        signal,
        dry: true,
      });
    hooks.onStage?.("first_step", count);
    const first = await dry(0);
    hooks.onStage?.("second_step", count);
    const second = await dry(1);
    hooks.onStage?.("apply", count);
    // Decoded from its bytes, as a peer's result would be, so the decode path is warm too (a
    // dry step has no state chain: no digests).
    const plain = { ...this.expectation, stateDigests: false };
    const result = decodePayload(encodePayload(second.result, plain), plain);
    // Through the codec, so a large model's workers start here rather than in round one.
    const update = await this.#codec.aggregate(this.distro.layouts, [result.params]);
    // The gradients and the lookahead weights are idle until the next step rewrites them.
    const step = this.rt.beginStep("warm-up decay and apply, on scratch");
    this.distro.encodeDryDecay(step, { scratch: this.model.grads });
    this.distro.encodeApply(step, { params: this.distro.lookaheadWeights, lr: 0, update });
    await step.submit({ wait: false, signal });
    await this.paramsHash();
    await this.resetOptimizer();
    return { firstMs: first.ms, stepMs: second.ms };
  }

  /**
   * Rounds θ in place to the nearest bf16 (shaders/round_bf16.ts: ties to even, the bits
   * model/float_codec.ts gives), every segment: the checkpoint-boundary rounding of
   * `snapshot_dtype = "bf16"`, after which the parameters are bf16-exact and are shared as bf16.
   * δ and the rest of the optimizer state stay f32, untouched. Rounding twice changes nothing.
   * Queued, not waited for: later reads and steps wait behind it.
   */
  async roundParamsToBf16(): Promise<void> {
    const { buffers, segments } = this.model.params;
    const maxBinding = this.rt.limits.maxStorageBufferBindingSize;
    const step = this.rt.beginStep("round params to bf16");
    buffers.forEach((buffer, s) => {
      for (const [start, n] of bindingRanges(segments[s].size, maxBinding)) {
        this.#roundBf16.encode(step.pass, { x: { buffer, offset: start * 4, size: n * 4 }, n });
      }
    });
    await step.submit({ wait: false });
  }

  /**
   * Test hook: changes the first parameter by one unit in the last place, as a flipped bit or
   * a wrong apply would, so tests can watch the run catch a client that left it.
   */
  async flipWeightForTest(): Promise<void> {
    const weights = await this.model.readParams();
    const bits = new Uint32Array(weights.buffer, weights.byteOffset, weights.length);
    bits[0] ^= 1;
    this.model.writeParams(weights);
  }

  /** Zeroes δ and the own previous result (cold-start epochs). */
  async resetOptimizer(): Promise<void> {
    const step = this.rt.beginStep("reset distro");
    this.distro.encodeReset(step);
    await step.submit();
  }

  /**
   * The parameter buffer's digest (shaders/digest.ts `digestBytes` of its bytes), computed on
   * the GPU: only 1/512 of the bytes come back, instead of all of θ for a host sha256. Over the
   * flat layout, whatever its split into segment buffers: every client gets the same value.
   */
  paramsHash(): Promise<string> {
    return this.#digest.digest(this.model.params.buffers);
  }

  /**
   * The parameters (`[layout.totalSize]`, as `model.readParams()`), read off the GPU a chunk at
   * a time so `onProgress` hears how far it got: a 1B model's 4.9 GB take seconds.
   */
  async readParams(
    options: { onProgress?: UploadProgress; chunkFloats?: number; signal?: AbortSignal } = {},
  ): Promise<Float32Array> {
    const { params } = this.model;
    const chunkFloats = options.chunkFloats ?? SAVE_CHUNK_FLOATS;
    const out = new Float32Array(params.layout.totalSize);
    for (const segment of params.segments) {
      const end = segment.start + segment.size;
      for (let start = segment.start; start < end; start += chunkFloats) {
        const count = Math.min(chunkFloats, end - start);
        const bytes = await this.rt.readBytes(params.slice(start, count), options);
        out.set(new Float32Array(bytes), start);
        options.onProgress?.((start + count) * 4, out.byteLength);
      }
    }
    return out;
  }

  /**
   * Writes `config.json` + `model.safetensors` (f32) to `dir` atomically: into a temporary
   * folder beside it, then renamed into place, so `dir` is never half written. The parameters
   * are read off the GPU a chunk at a time as they are written (the host holds one chunk, not a
   * 1B model's 4.9 GB), and `onProgress` hears the bytes written after every chunk.
   */
  async save(
    dir: string,
    options: { onProgress?: UploadProgress; chunkFloats?: number; signal?: AbortSignal } = {},
  ): Promise<void> {
    const { params } = this.model;
    const totalBytes = 4 * this.layout.paramCount;
    let doneBytes = 0;
    const weights = async (start: number, count: number) => {
      // writeModelDir reads inside one tensor, so inside one segment.
      const bytes = await this.rt.readBytes(params.slice(start, count), { signal: options.signal });
      doneBytes += bytes.byteLength;
      options.onProgress?.(doneBytes, totalBytes);
      return new Float32Array(bytes);
    };
    await writeDirAtomically(
      dir,
      (tmp) =>
        writeModelDir(tmp, {
          config: this.config,
          layout: this.layout,
          weights,
          chunkFloats: options.chunkFloats,
        }),
    );
  }

  /** Frees the model and optimizer buffers and ends the codec's workers. */
  [Symbol.dispose](): void {
    this.#codec[Symbol.dispose]();
    this.#digest[Symbol.dispose]();
    this.distro[Symbol.dispose]();
    this.model[Symbol.dispose]();
  }
}
