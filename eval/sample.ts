/**
 * Which documents an eval scores, and which few-shot examples each one sees: both seeded, so
 * every run with the same `--eval-seed` scores the same documents with the same prompts (Psyche
 * shuffles the documents with its seed, then keeps the first `--eval-task-max-docs`).
 *
 * The generator is the data room's SHA-256 counter stream, keyed by the seed, the task and the
 * purpose, so changing one task's limit never changes another task's sample.
 *
 * Pure.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { Sha256CounterStream, shufflePermutation } from "../data/mod.ts";
import { EvalDataError } from "./errors.ts";

function streamKey(seed: number, task: string, purpose: string): Uint8Array {
  return createHash("sha256").update(`psyche-eval\0${seed}\0${task}\0${purpose}`).digest();
}

/** The indices of the documents scored: a seeded shuffle of `count`, cut to `limit`. */
export function documentOrder(
  count: number,
  seed: number,
  task: string,
  limit?: number,
): number[] {
  const order = Array.from(shufflePermutation(count, streamKey(seed, task, "documents")));
  return limit === undefined ? order : order.slice(0, limit);
}

/**
 * `count` distinct indices into a pool of `poolSize` few-shot examples for document `doc`,
 * drawn uniformly without replacement.
 */
export function fewshotIndices(
  poolSize: number,
  count: number,
  seed: number,
  task: string,
  doc: number,
): number[] {
  if (count === 0) return [];
  if (count > poolSize) {
    throw new EvalDataError(
      `${count} few-shot examples asked for task "${task}", its few-shot split holds ${poolSize}`,
    );
  }
  const stream = new Sha256CounterStream(streamKey(seed, task, `fewshot ${doc}`));
  const picked: number[] = [];
  while (picked.length < count) {
    const i = stream.uniformBelow(poolSize);
    if (!picked.includes(i)) picked.push(i);
  }
  return picked;
}
