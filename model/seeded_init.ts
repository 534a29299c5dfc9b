/**
 * The seeded initial weights, made a chunk at a time on worker threads. One thread makes about 25
 * million seeded normals a second (two hashes, a log, a square root and a cosine each), so a 1B
 * model's 1.2 billion took about a minute before its upload could finish; every element depends
 * only on (seed, tensor, index) (model/params.ts `seededNormals`), so chunks can be made on any
 * number of threads and come out with the same bits. Chunks are handed out round-robin and
 * yielded in layout order, at most `workers` of them alive at once.
 *
 * @module
 */
import type { LlamaConfig } from "./hf_config.ts";
import {
  initTensorSlice,
  type ParamEntry,
  type ParamLayout,
  SEEDED_CHUNK_FLOATS,
} from "./params.ts";
import type { SliceReply, SliceRequest } from "./seeded_init_worker.ts";
import { PendingReplies } from "../common/mod.ts";

/** One chunk of the plan: `length` floats of `entry` from element `start`. */
export interface SeededSlice {
  readonly entry: ParamEntry;
  readonly start: number;
  readonly length: number;
}

/** A chunk and its floats. */
export interface SeededChunk extends SeededSlice {
  /** The floats; the generator may reuse this array once the next chunk is asked for. */
  readonly values: Float32Array;
}

/** How {@link seededChunks} makes the weights. */
export interface SeededInitOptions {
  readonly config: Pick<LlamaConfig, "initializerRange">;
  readonly seed: number;
  /** Floats per chunk (default {@link SEEDED_CHUNK_FLOATS}). */
  readonly chunkFloats?: number;
  /**
   * Worker threads (0: this thread). Default: {@link defaultSeededWorkers} when the model has
   * at least {@link PARALLEL_MIN_FLOATS} seeded floats, else 0 (a worker costs a module load,
   * more than a small model's whole init).
   */
  readonly workers?: number;
  readonly signal?: AbortSignal;
}

/** Seeded floats below which the default is this thread: a small model is made in well under a second. */
export const PARALLEL_MIN_FLOATS = 4 * SEEDED_CHUNK_FLOATS;

/** Most workers by default: past this the upload, not the generation, bounds a seeded start. */
const MAX_DEFAULT_WORKERS = 16;

/**
 * Workers for a machine with `cores` hardware threads: one per core, at most 16, and none on a
 * single core. The main thread mostly waits for chunks and for the device, so it takes no core of
 * its own; one worker alone is slower than this thread (its start and the chunks' transfer:
 * docs/benchmarks.md, "Seeded init on worker threads").
 *
 * @example
 * ```ts
 * import { defaultSeededWorkers } from "./seeded_init.ts";
 * if (defaultSeededWorkers(2) !== 2 || defaultSeededWorkers(64) !== 16) throw new Error();
 * ```
 */
export function defaultSeededWorkers(cores: number = navigator.hardwareConcurrency): number {
  const whole = Math.floor(cores);
  return whole < 2 ? 0 : Math.min(MAX_DEFAULT_WORKERS, whole);
}

/**
 * The workers a seeded init of `layout` uses: `workers` when given (checked), else
 * {@link defaultSeededWorkers} for a model of at least {@link PARALLEL_MIN_FLOATS} seeded floats
 * and 0 (this thread) for a smaller one.
 */
export function seededWorkerCount(layout: ParamLayout, workers?: number): number {
  if (workers === undefined) {
    const seeded = layout.entries.reduce((n, e) => n + (e.init === "normal" ? e.size : 0), 0);
    return seeded >= PARALLEL_MIN_FLOATS ? defaultSeededWorkers() : 0;
  }
  if (!Number.isInteger(workers) || workers < 0) {
    throw new RangeError(`workers must be a non-negative integer, got ${workers}`);
  }
  return workers;
}

/** The chunks of `layout`'s seeded init, in layout order: each tensor cut every `chunkFloats`. Pure. */
export function seededSlices(layout: ParamLayout, chunkFloats: number): SeededSlice[] {
  if (!Number.isInteger(chunkFloats) || chunkFloats < 1) {
    throw new RangeError(`chunkFloats must be a positive integer, got ${chunkFloats}`);
  }
  const slices: SeededSlice[] = [];
  for (const entry of layout.entries) {
    for (let start = 0; start < entry.size; start += chunkFloats) {
      slices.push({ entry, start, length: Math.min(chunkFloats, entry.size - start) });
    }
  }
  return slices;
}

/**
 * The seeded initial value of every tensor of `layout`, a chunk at a time in layout order, with
 * the bits of `initParams`. With workers, the next `workers - 1` chunks are made while the caller
 * handles one; the workers end when the generator does (finished, broken off, aborted or failed).
 */
export async function* seededChunks(
  layout: ParamLayout,
  options: SeededInitOptions,
): AsyncGenerator<SeededChunk> {
  const chunkFloats = options.chunkFloats ?? SEEDED_CHUNK_FLOATS;
  const slices = seededSlices(layout, chunkFloats);
  const workers = seededWorkerCount(layout, options.workers);
  if (workers === 0) {
    yield* chunksHere(slices, options, chunkFloats);
    return;
  }
  using pool = new SlicePool(workers, options);
  const ahead: Promise<Float32Array>[] = [];
  for (let i = 0; i < slices.length; i++) {
    options.signal?.throwIfAborted();
    for (let j = ahead.length; j < Math.min(slices.length, i + workers); j++) {
      ahead.push(pool.make(j % workers, slices[j]));
    }
    const values = await ahead[i];
    delete ahead[i];
    yield { ...slices[i], values };
  }
}

/** Makes every chunk on this thread, into one reused array. */
function* chunksHere(
  slices: readonly SeededSlice[],
  options: SeededInitOptions,
  chunkFloats: number,
): Generator<SeededChunk> {
  const largest = slices.reduce((m, s) => Math.max(m, s.length), 0);
  const buffer = new Float32Array(Math.min(chunkFloats, largest));
  for (const slice of slices) {
    options.signal?.throwIfAborted();
    const values = buffer.subarray(0, slice.length);
    initTensorSlice(
      slice.entry,
      { config: options.config, seed: options.seed, start: slice.start },
      values,
    );
    yield { ...slice, values };
  }
}

/** Worker threads that make slices; each answers its requests in the order it got them. */
class SlicePool {
  readonly #workers: Worker[] = [];
  readonly #replies = new PendingReplies<Float32Array>();
  readonly #options: SeededInitOptions;

  constructor(count: number, options: SeededInitOptions) {
    this.#options = options;
    const url = new URL("./seeded_init_worker.ts", import.meta.url).href;
    for (let w = 0; w < count; w++) {
      const worker = new Worker(url, { type: "module" });
      worker.onmessage = ({ data }: MessageEvent<SliceReply>) =>
        this.#replies.settle(
          data.id,
          "error" in data
            ? { error: new Error(`seeded init: ${data.error}`) }
            : { value: data.values },
        );
      worker.onerror = (event) => {
        // Handled here: an error in a worker must not end the process, only this init.
        event.preventDefault();
        this.#replies.failWorker(w, new Error(`seeded init worker ${w} failed: ${event.message}`));
      };
      this.#workers.push(worker);
    }
  }

  /** The floats of `slice`, made by worker `w`. */
  make(w: number, slice: SeededSlice): Promise<Float32Array> {
    const { id, reply } = this.#replies.open(w);
    // A chunk still ahead when an earlier one fails is never awaited: mark it handled.
    reply.catch(() => {});
    const request: SliceRequest = {
      id,
      entry: slice.entry,
      start: slice.start,
      length: slice.length,
      seed: this.#options.seed,
      initializerRange: this.#options.config.initializerRange,
    };
    this.#workers[w].postMessage(request);
    return reply;
  }

  [Symbol.dispose](): void {
    for (const worker of this.#workers) worker.terminate();
    this.#replies.failAll(new Error("seeded init: the worker pool was closed"));
  }
}

/**
 * `initParams` made on worker threads (model/params.ts): the whole flat layout, the same bits.
 * For callers that need the model in host memory (a client's seeded start); a seeded upload
 * streams {@link seededChunks} instead.
 */
export async function initParamsParallel(
  layout: ParamLayout,
  options: SeededInitOptions & {
    /**
     * Hears after every chunk the bytes made so far and the total (4 per parameter, alignment
     * padding left out): a 1B model's init takes a minute on a few cores, and a person must see
     * it move.
     */
    readonly onProgress?: (doneBytes: number, totalBytes: number) => void;
  },
): Promise<Float32Array> {
  const flat = new Float32Array(layout.totalSize);
  let done = 0;
  for await (const chunk of seededChunks(layout, options)) {
    flat.set(chunk.values, chunk.entry.offset + chunk.start);
    done += chunk.length;
    options.onProgress?.(4 * done, 4 * layout.paramCount);
  }
  return flat;
}
