import assert from "node:assert/strict";
import { documentOrder, fewshotIndices } from "./sample.ts";

Deno.test("the document sample is seeded, per task, and a limit keeps its prefix", () => {
  const a = documentOrder(100, 42, "hellaswag");
  assert.deepEqual(a, documentOrder(100, 42, "hellaswag"));
  assert.deepEqual([...a].sort((x, y) => x - y), Array.from({ length: 100 }, (_, i) => i));
  assert.notDeepEqual(a, documentOrder(100, 43, "hellaswag"));
  assert.notDeepEqual(a, documentOrder(100, 42, "piqa"));
  assert.deepEqual(documentOrder(100, 42, "hellaswag", 10), a.slice(0, 10));
});

Deno.test("few-shot picks are distinct, seeded per document, and refuse a small pool", () => {
  const picks = fewshotIndices(10, 5, 42, "arc_easy", 3);
  assert.equal(new Set(picks).size, 5);
  assert.ok(picks.every((i) => i >= 0 && i < 10));
  assert.deepEqual(picks, fewshotIndices(10, 5, 42, "arc_easy", 3));
  assert.notDeepEqual(picks, fewshotIndices(10, 5, 42, "arc_easy", 4));
  assert.deepEqual(fewshotIndices(10, 0, 42, "arc_easy", 3), []);
  assert.deepEqual(new Set(fewshotIndices(3, 3, 1, "t", 0)), new Set([0, 1, 2]));
  assert.throws(
    () => fewshotIndices(2, 3, 42, "boolq", 0),
    /3 few-shot examples asked for task "boolq", its few-shot split holds 2/,
  );
});
