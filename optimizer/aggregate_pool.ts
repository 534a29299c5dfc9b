/**
 * The exact aggregate of a round's results (exact.ts `aggregateFixed`, one per parameter) on
 * worker threads. A 1B model's aggregate of 4 peers' results takes 160-240 ms on one thread of the
 * development machine, in which the main thread serves no peer, no coordinator message and no
 * timer; 16 peers take four times that. Parameters are independent, so each worker takes a share
 * of them, balanced by their entries, and the output has the bits of the serial aggregate.
 *
 * @module
 */
import type { SparseParam } from "./compress.ts";
import { type AggregatedParam, aggregateFixed } from "./exact.ts";
import type { ChunkLayout } from "./layout.ts";
import { PendingReplies } from "../common/mod.ts";
import type { AggregateItem, AggregateReply, AggregateRequest } from "./aggregate_worker.ts";

/**
 * Peers' entries (chunks · k · results, over all parameters) below which an {@link Aggregator}
 * stays on the calling thread: about 40 ms of aggregation there, where handing the parameters to
 * workers and back costs a few. The 20M model's 4-peer aggregate (160 thousand entries) is under
 * it, a 1B model's (9.4 million) far over.
 */
export const PARALLEL_MIN_ENTRIES = 1 << 20;

/** Most workers by default: the largest of a 1B model's parameters is a twentieth of its entries. */
const MAX_DEFAULT_WORKERS = 8;

/**
 * Workers for a machine with `cores` hardware threads: one per core, at most 8, and none on a
 * single core (the main thread only waits while they work).
 *
 * @example
 * ```ts
 * import { defaultAggregateWorkers } from "./aggregate_pool.ts";
 * if (defaultAggregateWorkers(1) !== 0 || defaultAggregateWorkers(64) !== 8) throw new Error();
 * ```
 */
export function defaultAggregateWorkers(cores: number = navigator.hardwareConcurrency): number {
  const whole = Math.floor(cores);
  return whole < 2 ? 0 : Math.min(MAX_DEFAULT_WORKERS, whole);
}

/**
 * Shares of `sizes` for `workers`: the largest first, each to the share with the least so far
 * (ties to the lowest share), so no share exceeds the ideal by more than its largest item. Shares
 * list item indices ascending; empty shares are dropped.
 *
 * @example
 * ```ts
 * import { balancedShares } from "./aggregate_pool.ts";
 * const shares = balancedShares([5, 1, 4, 2], 2); // [[0, 1], [2, 3]]: 6 and 6
 * if (JSON.stringify(shares) !== "[[0,1],[2,3]]") throw new Error();
 * ```
 */
export function balancedShares(sizes: readonly number[], workers: number): number[][] {
  if (!Number.isInteger(workers) || workers < 1) {
    throw new RangeError(`balancedShares: workers must be a positive integer, found ${workers}`);
  }
  const shares: number[][] = Array.from({ length: workers }, () => []);
  const load = new Array<number>(workers).fill(0);
  const order = sizes.map((_, i) => i).sort((a, b) => sizes[b] - sizes[a] || a - b);
  for (const i of order) {
    let least = 0;
    for (let w = 1; w < workers; w++) if (load[w] < load[least]) least = w;
    shares[least].push(i);
    load[least] += sizes[i];
  }
  return shares.filter((s) => s.length > 0).map((s) => s.sort((a, b) => a - b));
}

/** Bytes of shared memory {@link sharedItems} needs for `peers` results over `layouts`. */
export function sharedBytes(layouts: readonly ChunkLayout[], peers: number): number {
  return 8 * peers * layouts.reduce((sum, l) => sum + l.chunks * l.k, 0);
}

/**
 * Every peer's part of each share's parameters, copied into `memory` (at least
 * {@link sharedBytes}): a message to a worker then shares that memory instead of copying each
 * array. Structured cloning 4 peers' results of a 1B model held the main thread 48 ms of a 147 ms
 * aggregate on two workers; a plain `set` per array into memory written before takes 5 ms for
 * those 75 MB.
 */
export function sharedItems(
  layouts: readonly ChunkLayout[],
  results: readonly (readonly SparseParam[])[],
  shares: readonly (readonly number[])[],
  memory: SharedArrayBuffer,
): AggregateItem[][] {
  let at = 0;
  const place = <T extends Uint32Array | Float32Array>(from: T, view: (at: number) => T): T => {
    const to = view(at);
    to.set(from);
    at += to.byteLength;
    return to;
  };
  return shares.map((share) =>
    share.map((n) => ({
      n,
      layout: layouts[n],
      results: results.map((r) => ({
        indices: place(r[n].indices, (o) => new Uint32Array(memory, o, r[n].indices.length)),
        values: place(r[n].values, (o) => new Float32Array(memory, o, r[n].values.length)),
      })),
    }))
  );
}

/** Worker threads that aggregate parameters; a request's reply carries its aggregates. */
export class AggregatePool implements Disposable {
  readonly #workers: Worker[] = [];
  readonly #replies = new PendingReplies<readonly AggregatedParam[]>();
  #shared: SharedArrayBuffer | undefined;

  constructor(workers: number = defaultAggregateWorkers()) {
    if (!Number.isInteger(workers) || workers < 1) {
      throw new RangeError(`aggregate pool: workers must be a positive integer, found ${workers}`);
    }
    const url = new URL("./aggregate_worker.ts", import.meta.url).href;
    for (let w = 0; w < workers; w++) {
      const worker = new Worker(url, { type: "module" });
      worker.onmessage = ({ data }: MessageEvent<AggregateReply>) =>
        this.#replies.settle(
          data.id,
          "aggregates" in data ? { value: data.aggregates } : {
            // The serial aggregate's own error: a malformed result is a RangeError on either path.
            error: data.error.name === "RangeError"
              ? new RangeError(data.error.message)
              : new Error(data.error.message),
          },
        );
      worker.onerror = (event) => {
        // Handled here: a failed worker must fail this aggregate, not end the process.
        event.preventDefault();
        this.#replies.failWorker(w, new Error(`aggregate worker ${w} failed: ${event.message}`));
      };
      this.#workers.push(worker);
    }
  }

  /** Worker threads in the pool. */
  get size(): number {
    return this.#workers.length;
  }

  /**
   * `layouts.map((l, n) => aggregateFixed(l, results.map((r) => r[n])))` on the pool's workers:
   * the same aggregates, bit for bit, and the same `RangeError` for a malformed result. `results`
   * holds each peer's parameters in the order to sum them (canonical order); they are copied into
   * memory the workers share, never changed.
   */
  async aggregate(
    layouts: readonly ChunkLayout[],
    results: readonly (readonly SparseParam[])[],
  ): Promise<AggregatedParam[]> {
    const sizes = layouts.map((l) => l.chunks * l.k);
    const shares = balancedShares(sizes, this.#workers.length);
    const items = sharedItems(layouts, results, shares, this.#memory(layouts, results.length));
    const replies = await Promise.all(items.map((share, w) => this.#ask(w, share)));
    const out = new Array<AggregatedParam>(layouts.length);
    shares.forEach((share, w) => share.forEach((n, i) => out[n] = replies[w][i]));
    return out;
  }

  /**
   * Shared memory for a round's results: the last round's when large enough and no aggregate is
   * in flight (whose workers may still read it). Reused because the first write to new pages
   * costs about 7x a copy into written ones (35-42 against 5 ms for 75 MB here).
   */
  #memory(layouts: readonly ChunkLayout[], peers: number): SharedArrayBuffer {
    const bytes = sharedBytes(layouts, peers);
    if (this.#replies.size > 0) return new SharedArrayBuffer(bytes);
    if (this.#shared === undefined || this.#shared.byteLength < bytes) {
      this.#shared = new SharedArrayBuffer(bytes);
    }
    return this.#shared;
  }

  #ask(w: number, items: AggregateItem[]): Promise<readonly AggregatedParam[]> {
    const { id, reply } = this.#replies.open(w);
    this.#workers[w].postMessage({ id, items } satisfies AggregateRequest);
    return reply;
  }

  [Symbol.dispose](): void {
    for (const worker of this.#workers) worker.terminate();
    this.#shared = undefined;
    this.#replies.failAll(new Error("aggregate pool disposed"));
  }
}

/** Where an {@link Aggregator} works. */
export interface AggregatorOptions {
  /** Worker threads (0: this thread). Default {@link defaultAggregateWorkers}. */
  readonly workers?: number;
  /** Entries from which a round goes to the workers. Default {@link PARALLEL_MIN_ENTRIES}. */
  readonly minEntries?: number;
}

/**
 * The exact aggregate of every parameter of a round, on worker threads when the round is large:
 * rounds of at least `minEntries` entries go to an {@link AggregatePool} of `workers` threads,
 * started at the first such round; smaller ones, and every round with 0 workers, run on this
 * thread. The same bits either way. Dispose to end the workers.
 */
export class Aggregator implements Disposable {
  readonly #workers: number;
  readonly #minEntries: number;
  #pool: AggregatePool | undefined;

  constructor(options: AggregatorOptions = {}) {
    const { workers = defaultAggregateWorkers(), minEntries = PARALLEL_MIN_ENTRIES } = options;
    if (!Number.isInteger(workers) || workers < 0) {
      throw new RangeError(`aggregator: workers must be an integer >= 0, found ${workers}`);
    }
    if (!(minEntries >= 0)) {
      throw new RangeError(`aggregator: minEntries must be >= 0, found ${minEntries}`);
    }
    this.#workers = workers;
    this.#minEntries = minEntries;
  }

  /** Whether the workers were started (by a round of at least `minEntries` entries). */
  get started(): boolean {
    return this.#pool !== undefined;
  }

  /**
   * `layouts.map((l, n) => aggregateFixed(l, results.map((r) => r[n])))`, with `results` each
   * peer's parameters in canonical order.
   */
  async aggregate(
    layouts: readonly ChunkLayout[],
    results: readonly (readonly SparseParam[])[],
  ): Promise<AggregatedParam[]> {
    const entries = results.length * layouts.reduce((sum, l) => sum + l.chunks * l.k, 0);
    if (this.#workers > 0 && entries >= this.#minEntries) {
      this.#pool ??= new AggregatePool(this.#workers);
      return await this.#pool.aggregate(layouts, results);
    }
    return layouts.map((layout, n) => aggregateFixed(layout, results.map((r) => r[n])));
  }

  [Symbol.dispose](): void {
    this.#pool?.[Symbol.dispose]();
    this.#pool = undefined;
  }
}
