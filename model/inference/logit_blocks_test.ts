import assert from "node:assert/strict";
import { gatherLogits, logitBlockLayout } from "./logit_blocks.ts";

Deno.test("logits of several vocabulary blocks are gathered into rows", () => {
  // V = 5 in blocks of 3 and 2, two rows, blocks aligned to 32 bytes (8 floats).
  const { blocks, bytes } = logitBlockLayout([{ start: 0, rows: 3 }, { start: 3, rows: 2 }], 2, 32);
  assert.deepEqual(blocks.map((b) => b.offset), [0, 32]);
  assert.equal(bytes, 64);
  const data = new Float32Array(16).fill(NaN);
  data.set([0, 1, 2, 10, 11, 12], 0); // block 0: [2, 3]
  data.set([3, 4, 13, 14], 8); // block 1: [2, 2]
  assert.deepEqual([...gatherLogits(data, blocks, 2, 5)], [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]);
  // Fewer rows than the buffer holds: each block's first rows.
  assert.deepEqual([...gatherLogits(data, blocks, 1, 5)], [0, 1, 2, 3, 4]);
});

Deno.test("gathering refuses blocks that do not tile the vocabulary or a short readback", () => {
  const { blocks } = logitBlockLayout([{ start: 0, rows: 3 }], 1, 16);
  assert.throws(() => gatherLogits(new Float32Array(4), blocks, 1, 5), /cover 3 .* expected 5/);
  assert.throws(() => gatherLogits(new Float32Array(2), blocks, 1, 3), /the readback holds 2/);
});
