import assert from "node:assert/strict";
import { BodyTooLargeError, obeyingSignal, readBody } from "./fetch_body.ts";

/** A response whose body sends `chunks`, then nothing ever again unless `end`. */
function responseOf(chunks: number[][], end: boolean, onCancel?: (reason: unknown) => void) {
  return new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const c of chunks) controller.enqueue(new Uint8Array(c));
        if (end) controller.close();
      },
      cancel: onCancel,
    }),
  );
}

Deno.test("readBody joins every chunk of a body that ends", async () => {
  const bytes = await readBody(
    responseOf([[1, 2], [3], [4, 5, 6]], true),
    new AbortController().signal,
  );
  assert.deepEqual([...bytes], [1, 2, 3, 4, 5, 6]);
  assert.deepEqual([...await readBody(new Response(null), AbortSignal.timeout(1000))], []);
});

Deno.test("readBody ends a read that nothing else ends when its signal aborts, and cancels", async () => {
  let cancelled: unknown;
  const stop = new AbortController();
  const reading = readBody(responseOf([[1]], false, (r) => cancelled = r), stop.signal);
  setTimeout(() => stop.abort(new Error("timed out")), 30);
  await assert.rejects(() => reading, /timed out/);
  assert.match(String(cancelled), /timed out/);
});

Deno.test("readBody refuses a body over its limit at the chunk that passes it", async () => {
  let cancelled: unknown;
  const reading = readBody(
    responseOf([[1, 2, 3], [4, 5, 6]], false, (r) => cancelled = r),
    new AbortController().signal,
    4,
  );
  await assert.rejects(() => reading, (e) => e instanceof BodyTooLargeError && e.received === 6);
  assert.ok(cancelled instanceof BodyTooLargeError);
  assert.deepEqual([
    ...await readBody(responseOf([[1, 2], [3, 4]], true), AbortSignal.timeout(1000), 4),
  ], [1, 2, 3, 4]);
});

Deno.test("obeyingSignal: a library's own read of the body ends at the abort; hooks bracket reads", async () => {
  let cancelled: unknown;
  const calls: string[] = [];
  const stop = new AbortController();
  const response = obeyingSignal(responseOf([[1, 2]], false, (r) => cancelled = r), stop.signal, {
    beforeRead: () => calls.push("before"),
    afterRead: () => calls.push("after"),
  });
  setTimeout(() => stop.abort(new Error("upload aborted")), 30);
  await assert.rejects(() => response.arrayBuffer(), /upload aborted/);
  assert.match(String(cancelled), /upload aborted/);
  assert.deepEqual(calls, ["before", "after", "before", "after"]);

  const whole = obeyingSignal(responseOf([[7], [8]], true), new AbortController().signal);
  assert.deepEqual([...new Uint8Array(await whole.arrayBuffer())], [7, 8]);
});
