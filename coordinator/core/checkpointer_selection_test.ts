import assert from "node:assert/strict";
import {
  CHECKPOINTER_SALT,
  checkpointerCount,
  CheckpointerSelection,
} from "./checkpointer_selection.ts";
import { COMMITTEE_SALT, saltedSeed, WITNESS_SALT } from "./committee_selection.ts";
import { computeShuffledIndex } from "./swap_or_not.ts";
import { MAX_CHECKPOINTERS } from "./types.ts";

Deno.test("checkpointerCount: a third of the clients, at least one, at most 16", () => {
  const table: [number, number][] = [
    [0, 0],
    [1, 1],
    [2, 1],
    [3, 1],
    [5, 1],
    [6, 2],
    [9, 3],
    [47, 15],
    [48, 16],
    [49, 16],
    [65_535, MAX_CHECKPOINTERS],
  ];
  for (const [clients, count] of table) {
    assert.equal(checkpointerCount(clients), count, `${clients}`);
  }
  assert.throws(() => checkpointerCount(-1), RangeError);
  assert.throws(() => checkpointerCount(1.5), RangeError);
});

Deno.test("CheckpointerSelection: the salted swap-or-not positions below the count", () => {
  const sel = CheckpointerSelection.create({ clients: 30, randomSeed: 77n });
  const seed = saltedSeed(77n, CHECKPOINTER_SALT);
  const expected: number[] = [];
  for (let i = 0; i < 30; i++) if (computeShuffledIndex(i, 30, seed) < 10) expected.push(i);
  assert.deepEqual(sel.indices(), expected);
  assert.equal(sel.count, 10);
  for (let i = 0; i < 30; i++) {
    assert.equal(sel.isCheckpointer(i), expected.includes(i));
    assert.equal(sel.position(i), computeShuffledIndex(i, 30, seed));
  }
  // Peer input never throws: out-of-range indices are simply not elected.
  for (const bad of [-1, 30, 0.5, NaN]) assert.equal(sel.isCheckpointer(bad), false);
});

Deno.test("CheckpointerSelection: its own salt, and another seed elects others", () => {
  assert.notDeepEqual(saltedSeed(5n, CHECKPOINTER_SALT), saltedSeed(5n, WITNESS_SALT));
  assert.notDeepEqual(saltedSeed(5n, CHECKPOINTER_SALT), saltedSeed(5n, COMMITTEE_SALT));
  const elected = new Set<string>();
  for (let seed = 0n; seed < 20n; seed++) {
    elected.add(CheckpointerSelection.create({ clients: 12, randomSeed: seed }).indices().join());
  }
  assert.ok(elected.size > 10, `only ${elected.size} distinct elections over 20 seeds`);
  const none = CheckpointerSelection.create({ clients: 0, randomSeed: 1n });
  assert.deepEqual(none.indices(), []);
  assert.equal(none.isCheckpointer(0), false);
  assert.throws(() => CheckpointerSelection.create({ clients: 3, randomSeed: -1n }), RangeError);
  assert.throws(
    () => CheckpointerSelection.create({ clients: 3, randomSeed: 1n << 64n }),
    RangeError,
  );
});
