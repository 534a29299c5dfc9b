/**
 * The replies a pool of worker threads owes: each request's promise by its id, with the worker
 * it went to, so a reply settles its own request and a failed worker fails only its own. Pure
 * bookkeeping; the pools that start the workers and post the messages hold one each
 * (model/seeded_init.ts, optimizer/codec_pool.ts).
 *
 * @module
 */

/** One request awaiting its reply. */
interface Pending<T> {
  readonly resolve: (value: T) => void;
  readonly reject: (error: Error) => void;
  readonly worker: number;
}

/**
 * Requests awaiting replies.
 *
 * @example
 * ```ts
 * import { PendingReplies } from "./pending_replies.ts";
 * const book = new PendingReplies<string>();
 * const { id, reply } = book.open(0);
 * book.settle(id, { value: "done" });
 * if ((await reply) !== "done" || book.size !== 0) throw new Error();
 * ```
 */
export class PendingReplies<T> {
  readonly #waiting = new Map<number, Pending<T>>();
  #nextId = 0;

  /** Requests not answered yet. */
  get size(): number {
    return this.#waiting.size;
  }

  /** A new request to `worker`: its id (to send with it) and the promise its reply settles. */
  open(worker: number): { id: number; reply: Promise<T> } {
    const id = this.#nextId++;
    const reply = new Promise<T>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject, worker });
    });
    return { id, reply };
  }

  /** Settles request `id` with its reply; a reply to no open request (one failed) is dropped. */
  settle(id: number, outcome: { readonly value: T } | { readonly error: Error }): void {
    const pending = this.#waiting.get(id);
    if (pending === undefined) return;
    this.#waiting.delete(id);
    if ("error" in outcome) pending.reject(outcome.error);
    else pending.resolve(outcome.value);
  }

  /** Fails every open request sent to `worker` with `error` (the worker died). */
  failWorker(worker: number, error: Error): void {
    for (const [id, pending] of this.#waiting) {
      if (pending.worker !== worker) continue;
      this.#waiting.delete(id);
      pending.reject(error);
    }
  }

  /** Fails every open request with `error` (the pool is closing). */
  failAll(error: Error): void {
    const all = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const pending of all) pending.reject(error);
  }
}
