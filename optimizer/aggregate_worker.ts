/**
 * A worker of optimizer/aggregate_pool.ts: the exact aggregate (exact.ts `aggregateFixed`) of the
 * parameters one request names, posted back with their buffers transferred. The aggregate is
 * integer arithmetic on the values it is given, so a worker's output has the bits the main thread's
 * would.
 *
 * @module
 */
import type { SparseParam } from "./compress.ts";
import { type AggregatedParam, aggregateFixed } from "./exact.ts";
import type { ChunkLayout } from "./layout.ts";

/** One parameter to aggregate: its index in the caller's list, its layout and each peer's part. */
export interface AggregateItem {
  readonly n: number;
  readonly layout: ChunkLayout;
  readonly results: readonly SparseParam[];
}

/** What the pool asks for: the aggregates of `items`. */
export interface AggregateRequest {
  readonly id: number;
  readonly items: readonly AggregateItem[];
}

/** The answer: each item's aggregate in the request's order, or the first error met. */
export type AggregateReply =
  | { readonly id: number; readonly aggregates: readonly AggregatedParam[] }
  | { readonly id: number; readonly error: { readonly name: string; readonly message: string } };

/** The worker's global scope, typed without the worker lib (which would retype the project's `self`). */
const scope = self as unknown as {
  onmessage: (event: MessageEvent<AggregateRequest>) => void;
  postMessage(message: AggregateReply, transfer?: Transferable[]): void;
};

scope.onmessage = (event) => {
  const { id, items } = event.data;
  try {
    const aggregates = items.map((item) => aggregateFixed(item.layout, item.results));
    const buffers = aggregates.flatMap((a) => [a.offsets, a.indices, a.coeffs, a.scaleExp])
      .map((array) => array.buffer as ArrayBuffer);
    scope.postMessage({ id, aggregates } satisfies AggregateReply, buffers);
  } catch (e) {
    const { name, message } = e instanceof Error ? e : new Error(String(e));
    scope.postMessage({ id, error: { name, message } } satisfies AggregateReply);
  }
};
