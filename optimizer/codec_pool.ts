/**
 * The host's DisTrO codec for large models on worker threads: the exact aggregate of a round's
 * results (exact.ts `aggregateFixed`, one per parameter) and the decode of peers' payloads
 * (wire.ts `decodePayload`). A 1B model's aggregate of 4 peers' results takes 160-240 ms on one
 * thread of the development machine, in which the main thread serves no peer, no coordinator
 * message and no timer, and each of its payloads takes 20 ms to decode, in a burst as the round's
 * results arrive; 16 peers take four times that. Parameters are independent, so each worker
 * aggregates a share of them, balanced by their entries; payloads go to the workers in turn. The
 * output has the bits of the serial codec.
 *
 * @module
 */
import type { SparseParam } from "./compress.ts";
import { type AggregatedParam, aggregateFixed } from "./exact.ts";
import type { ChunkLayout } from "./layout.ts";
import type { DistroResult } from "./result.ts";
import { decodePayload, type PayloadExpectation } from "./wire.ts";
import { PendingReplies } from "../common/mod.ts";
import type { AggregateItem, CodecReply, CodecRequest } from "./codec_worker.ts";

/**
 * Peers' entries (chunks · k · results, over all parameters) below which a {@link HostCodec}
 * aggregates on the calling thread: about 40 ms of aggregation there, where handing the
 * parameters to workers and back costs a few. The 20M model's 4-peer aggregate (160 thousand
 * entries) is under it, a 1B model's (9.4 million) far over.
 */
export const PARALLEL_MIN_ENTRIES = 1 << 20;

/**
 * Payload bytes below which a {@link HostCodec} decodes on the calling thread: a megabyte decodes
 * in about 6 ms, and its trip to a worker costs one copy. The 20M model's payload (58 KiB) stays,
 * a 1B model's (3.5 MB) goes.
 */
export const PARALLEL_MIN_PAYLOAD_BYTES = 1 << 20;

/**
 * Most workers by default: the largest of a 1B model's parameters is a twentieth of its entries,
 * and a round's payloads arrive a few at a time.
 */
const MAX_DEFAULT_WORKERS = 8;

/**
 * Workers for a machine with `cores` hardware threads: one per core, at most 8, and none on a
 * single core (the main thread only waits while they work).
 *
 * @example
 * ```ts
 * import { defaultCodecWorkers } from "./codec_pool.ts";
 * if (defaultCodecWorkers(1) !== 0 || defaultCodecWorkers(64) !== 8) throw new Error();
 * ```
 */
export function defaultCodecWorkers(cores: number = navigator.hardwareConcurrency): number {
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
 * import { balancedShares } from "./codec_pool.ts";
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

/** Entries of `peers` results over `layouts`: each parameter's chunks · k, per peer. */
export function roundEntries(layouts: readonly ChunkLayout[], peers: number): number {
  return peers * layouts.reduce((sum, l) => sum + l.chunks * l.k, 0);
}

/** Bytes of shared memory {@link sharedItems} needs for `peers` results over `layouts`. */
export function sharedBytes(layouts: readonly ChunkLayout[], peers: number): number {
  return 8 * roundEntries(layouts, peers);
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

/** Worker threads that aggregate parameters and decode payloads; each reply carries its id. */
export class CodecPool implements Disposable {
  readonly #workers: Worker[] = [];
  readonly #replies = new PendingReplies<CodecReply>();
  #shared: SharedArrayBuffer | undefined;
  /** The worker the next payload goes to. */
  #turn = 0;
  /** Aggregates whose workers may still read the shared memory. */
  #aggregating = 0;

  constructor(workers: number = defaultCodecWorkers()) {
    if (!Number.isInteger(workers) || workers < 1) {
      throw new RangeError(`codec pool: workers must be a positive integer, found ${workers}`);
    }
    const url = new URL("./codec_worker.ts", import.meta.url).href;
    for (let w = 0; w < workers; w++) {
      const worker = new Worker(url, { type: "module" });
      worker.onmessage = ({ data }: MessageEvent<CodecReply>) =>
        this.#replies.settle(data.id, { value: data });
      worker.onerror = (event) => {
        // Handled here: a failed worker must fail its requests, not end the process.
        event.preventDefault();
        this.#replies.failWorker(w, new Error(`codec worker ${w} failed: ${event.message}`));
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
   * the same aggregates, bit for bit, and a `RangeError` with the serial aggregate's message for a
   * malformed result (where several are, perhaps another one's than it names first). `results`
   * holds each peer's parameters in the order to sum them (canonical order); they are copied into
   * memory the workers share, never changed.
   */
  async aggregate(
    layouts: readonly ChunkLayout[],
    results: readonly (readonly SparseParam[])[],
  ): Promise<AggregatedParam[]> {
    const sizes = layouts.map((l) => l.chunks * l.k);
    // A part of the wrong length would not fit the shared memory: refused here, as serially.
    for (const [n, size] of sizes.entries()) {
      if (results.some((r) => r[n].indices.length !== size || r[n].values.length !== size)) {
        aggregateFixed(layouts[n], results.map((r) => r[n]));
      }
    }
    const shares = balancedShares(sizes, this.#workers.length);
    const items = sharedItems(layouts, results, shares, this.#memory(layouts, results.length));
    this.#aggregating++;
    const replies = await Promise.all(
      items.map(async (share, w) =>
        aggregatesOf(await this.#ask(w, { kind: "aggregate", items: share }))
      ),
    ).finally(() => this.#aggregating--);
    const out = new Array<AggregatedParam>(layouts.length);
    shares.forEach((share, w) => share.forEach((n, i) => out[n] = replies[w][i]));
    return out;
  }

  /**
   * `decodePayload(bytes, expectation)` on the next worker in turn: the same result, bit for
   * bit, and the same error (name and message) for a bad payload. `bytes` are copied, never
   * changed.
   */
  async decode(bytes: Uint8Array, expectation: PayloadExpectation): Promise<DistroResult> {
    const w = this.#turn;
    this.#turn = (this.#turn + 1) % this.#workers.length;
    return resultOf(await this.#ask(w, { kind: "decode", bytes, expectation }));
  }

  /**
   * Shared memory for a round's results: the last round's when large enough and no aggregate is
   * in flight (whose workers may still read it). Reused because the first write to new pages
   * costs about 7x a copy into written ones (35-42 against 5 ms for 75 MB here).
   */
  #memory(layouts: readonly ChunkLayout[], peers: number): SharedArrayBuffer {
    const bytes = sharedBytes(layouts, peers);
    if (this.#aggregating > 0) return new SharedArrayBuffer(bytes);
    if (this.#shared === undefined || this.#shared.byteLength < bytes) {
      this.#shared = new SharedArrayBuffer(bytes);
    }
    return this.#shared;
  }

  #ask(w: number, request: DistributiveOmit<CodecRequest, "id">): Promise<CodecReply> {
    const { id, reply } = this.#replies.open(w);
    this.#workers[w].postMessage({ id, ...request } satisfies CodecRequest);
    return reply;
  }

  [Symbol.dispose](): void {
    for (const worker of this.#workers) worker.terminate();
    this.#shared = undefined;
    this.#replies.failAll(new Error("codec pool disposed"));
  }
}

/** `Omit` over each member of a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The aggregates an aggregate request's reply carries, or its error thrown. */
function aggregatesOf(reply: CodecReply): readonly AggregatedParam[] {
  if ("aggregates" in reply) return reply.aggregates;
  throw replyError(reply);
}

/** The result a decode request's reply carries, or its error thrown. */
function resultOf(reply: CodecReply): DistroResult {
  if ("result" in reply) return reply.result;
  throw replyError(reply);
}

/**
 * A worker's error as the serial codec throws it: the same name (a malformed result's
 * `RangeError`, a bad payload's `PayloadDecodeError`) and message.
 */
function replyError(reply: CodecReply): Error {
  if (!("error" in reply)) return new Error(`codec worker: reply ${reply.id} of the wrong kind`);
  const { name, message } = reply.error;
  const error = name === "RangeError" ? new RangeError(message) : new Error(message);
  error.name = name;
  return error;
}

/** Where a {@link HostCodec} works. */
export interface HostCodecOptions {
  /** Worker threads (0: this thread). Default {@link defaultCodecWorkers}. */
  readonly workers?: number;
  /** Entries from which a round's aggregate goes to the workers ({@link PARALLEL_MIN_ENTRIES}). */
  readonly minEntries?: number;
  /** Payload bytes from which a decode goes to the workers ({@link PARALLEL_MIN_PAYLOAD_BYTES}). */
  readonly minPayloadBytes?: number;
}

/**
 * A client's DisTrO codec on the host, on worker threads when the work is large: rounds of at
 * least `minEntries` entries and payloads of at least `minPayloadBytes` go to a
 * {@link CodecPool} of `workers` threads, started at the first such piece of work; smaller work,
 * all work with 0 workers and all work after disposal run on this thread. The same bits either
 * way. Dispose to end the workers.
 */
export class HostCodec implements Disposable {
  readonly #workers: number;
  readonly #minEntries: number;
  readonly #minPayloadBytes: number;
  #pool: CodecPool | undefined;
  #closed = false;

  constructor(options: HostCodecOptions = {}) {
    const {
      workers = defaultCodecWorkers(),
      minEntries = PARALLEL_MIN_ENTRIES,
      minPayloadBytes = PARALLEL_MIN_PAYLOAD_BYTES,
    } = options;
    if (!Number.isInteger(workers) || workers < 0) {
      throw new RangeError(`host codec: workers must be an integer >= 0, found ${workers}`);
    }
    for (const [name, v] of [["minEntries", minEntries], ["minPayloadBytes", minPayloadBytes]]) {
      if (!((v as number) >= 0)) {
        throw new RangeError(`host codec: ${name} must be >= 0, found ${v}`);
      }
    }
    this.#workers = workers;
    this.#minEntries = minEntries;
    this.#minPayloadBytes = minPayloadBytes;
  }

  /** Whether the workers were started (by work over a threshold). */
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
    const entries = roundEntries(layouts, results.length);
    if (this.#workers > 0 && !this.#closed && entries >= this.#minEntries) {
      return await this.#started().aggregate(layouts, results);
    }
    return layouts.map((layout, n) => aggregateFixed(layout, results.map((r) => r[n])));
  }

  /**
   * `decodePayload(bytes, expectation)`: throws what it throws for a bad payload. A decode the
   * codec's disposal cut off (its trainer replaced while a peer's payload was in hand) finishes
   * on this thread.
   */
  async decode(bytes: Uint8Array, expectation: PayloadExpectation): Promise<DistroResult> {
    if (this.#workers > 0 && !this.#closed && bytes.length >= this.#minPayloadBytes) {
      try {
        return await this.#started().decode(bytes, expectation);
      } catch (e) {
        if (!this.#closed) throw e;
      }
    }
    return decodePayload(bytes, expectation);
  }

  #started(): CodecPool {
    return this.#pool ??= new CodecPool(this.#workers);
  }

  /** Ends the workers; later work runs on this thread. */
  [Symbol.dispose](): void {
    this.#closed = true;
    this.#pool?.[Symbol.dispose]();
    this.#pool = undefined;
  }
}
