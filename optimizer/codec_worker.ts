/**
 * A worker of optimizer/codec_pool.ts: the host's DisTrO codec off the main thread. Per request
 * either the exact aggregate (exact.ts `aggregateFixed`) of the parameters it names, or one
 * payload decoded (wire.ts `decodePayload`); the arrays made are posted back with their buffers
 * transferred. Both are deterministic functions of their input, so a worker's output has the bits
 * the main thread's would.
 *
 * @module
 */
import type { SparseParam } from "./compress.ts";
import { type AggregatedParam, aggregateFixed } from "./exact.ts";
import type { ChunkLayout } from "./layout.ts";
import type { DistroResult } from "./result.ts";
import { decodePayload, type PayloadExpectation } from "./wire.ts";

/** One parameter to aggregate: its index in the caller's list, its layout and each peer's part. */
export interface AggregateItem {
  readonly n: number;
  readonly layout: ChunkLayout;
  readonly results: readonly SparseParam[];
}

/** What the pool asks for: the aggregates of `items`, or `bytes` decoded. */
export type CodecRequest =
  | { readonly id: number; readonly kind: "aggregate"; readonly items: readonly AggregateItem[] }
  | {
    readonly id: number;
    readonly kind: "decode";
    readonly bytes: Uint8Array;
    readonly expectation: PayloadExpectation;
  };

/** The answer: each item's aggregate in the request's order, the result, or the error met. */
export type CodecReply =
  | { readonly id: number; readonly aggregates: readonly AggregatedParam[] }
  | { readonly id: number; readonly result: DistroResult }
  | { readonly id: number; readonly error: { readonly name: string; readonly message: string } };

/** The worker's scope, typed without the worker lib (which would retype the project's `self`). */
const scope = self as unknown as {
  onmessage: (event: MessageEvent<CodecRequest>) => void;
  postMessage(message: CodecReply, transfer?: Transferable[]): void;
};

/** The distinct buffers behind `arrays`, to transfer (a buffer listed twice cannot be). */
const buffersOf = (arrays: readonly ArrayBufferView[]): ArrayBuffer[] => [
  ...new Set(arrays.map((a) => a.buffer as ArrayBuffer)),
];

scope.onmessage = ({ data: request }) => {
  const { id } = request;
  try {
    if (request.kind === "aggregate") {
      const aggregates = request.items.map((item) => aggregateFixed(item.layout, item.results));
      const arrays = aggregates.flatMap((a) => [a.offsets, a.indices, a.coeffs, a.scaleExp]);
      scope.postMessage({ id, aggregates } satisfies CodecReply, buffersOf(arrays));
    } else {
      const result = decodePayload(request.bytes, request.expectation);
      const arrays = result.params.flatMap((p) => [p.indices, p.values]);
      scope.postMessage({ id, result } satisfies CodecReply, buffersOf(arrays));
    }
  } catch (e) {
    const { name, message } = e instanceof Error ? e : new Error(String(e));
    scope.postMessage({ id, error: { name, message } } satisfies CodecReply);
  }
};
