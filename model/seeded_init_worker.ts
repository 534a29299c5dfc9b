/**
 * A worker of model/seeded_init.ts: generates one slice of a tensor's seeded initial value per
 * request and posts it back, its buffer transferred. V8 computes `Math.log` and `Math.cos` the
 * same way on every thread, so a worker's slice has the bits of the same slice made on the main
 * thread.
 *
 * @module
 */
import { initTensorSlice, type ParamEntry } from "./params.ts";

/** What the pool asks for: `length` floats of `entry` from `start`. */
export interface SliceRequest {
  readonly id: number;
  readonly entry: ParamEntry;
  readonly start: number;
  readonly length: number;
  readonly seed: number;
  readonly initializerRange: number;
}

/** The answer: the slice's floats, or why it could not be made. */
export type SliceReply =
  | { readonly id: number; readonly values: Float32Array }
  | { readonly id: number; readonly error: string };

/** The worker's global scope, typed without the worker lib (which would retype the project's `self`). */
const scope = self as unknown as {
  onmessage: (event: MessageEvent<SliceRequest>) => void;
  postMessage(message: SliceReply, transfer?: Transferable[]): void;
};

scope.onmessage = (event) => {
  const { id, entry, start, length, seed, initializerRange } = event.data;
  try {
    const values = new Float32Array(length);
    initTensorSlice(entry, { config: { initializerRange }, seed, start }, values);
    scope.postMessage({ id, values } satisfies SliceReply, [values.buffer]);
  } catch (e) {
    scope.postMessage({ id, error: (e as Error).message } satisfies SliceReply);
  }
};
