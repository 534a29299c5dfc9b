import assert from "node:assert/strict";
import { type TableBlock, tableGroups } from "./dispatch_table.ts";

const block = (key: string, segment: number, ranges: [number, number][]) =>
  ({ key, segment, ranges }) satisfies TableBlock;

Deno.test("tableGroups: one group per key and segment while the windows fit", () => {
  const blocks = [
    block("a", 0, [[0, 100], [0, 8]]),
    block("b", 0, [[128, 200], [8, 16]]),
    block("a", 0, [[256, 300], [16, 24]]),
    block("a", 1, [[0, 64], [24, 32]]),
  ];
  const groups = tableGroups(blocks, { maxWords: 1024, alignWords: 64, maxRows: 8 });
  assert.deepEqual(groups.map((g) => [g.key, g.segment, g.members]), [
    ["a", 0, [0, 2]],
    ["b", 0, [1]],
    ["a", 1, [3]],
  ]);
  assert.deepEqual(groups[0].windows, [[0, 300], [0, 24]]);
  // Windows start at aligned words below the first block's range.
  assert.deepEqual(groups[1].windows, [[128, 72], [0, 16]]);
});

Deno.test("tableGroups: a window past one binding or a full table starts a new group", () => {
  const blocks = [0, 1, 2, 3].map((i) => block("a", 0, [[i * 512, i * 512 + 500]]));
  const wide = tableGroups(blocks, { maxWords: 1024, alignWords: 64, maxRows: 8 });
  assert.deepEqual(wide.map((g) => g.members), [[0, 1], [2, 3]]);
  assert.deepEqual(wide[1].windows, [[1024, 1012]]);
  const short = tableGroups(blocks, { maxWords: 1 << 20, alignWords: 64, maxRows: 3 });
  assert.deepEqual(short.map((g) => g.members), [[0, 1, 2], [3]]);
  assert.throws(() =>
    tableGroups([block("a", 0, [[0, 2000]])], {
      maxWords: 1024,
      alignWords: 64,
      maxRows: 8,
    }), RangeError);
});
