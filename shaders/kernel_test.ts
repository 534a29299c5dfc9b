import assert from "node:assert/strict";
import fc from "fast-check";
import { granuleStretches, rowBlocks } from "./kernel.ts";

Deno.test("rowBlocks: one block when the tensor fits", () => {
  assert.deepEqual(rowBlocks(100, 64, { maxBytes: 6400, alignBytes: 256 }), [
    { start: 0, rows: 100 },
  ]);
});

Deno.test("rowBlocks: aligned, equal blocks and a ragged last one", () => {
  // 128-byte rows: starts at multiples of 2 rows; 1000 bytes hold 7 rows → 6.
  assert.deepEqual(rowBlocks(15, 128, { maxBytes: 1000, alignBytes: 256 }), [
    { start: 0, rows: 6 },
    { start: 6, rows: 6 },
    { start: 12, rows: 3 },
  ]);
  // multipleOf 4 on top of the alignment: 4 rows per block.
  assert.deepEqual(
    rowBlocks(10, 128, { maxBytes: 1000, alignBytes: 256, multipleOf: 4 }).map((b) => b.rows),
    [4, 4, 2],
  );
  assert.throws(
    () => rowBlocks(10, 96, { maxBytes: 512, alignBytes: 256 }),
    /rows of 96 bytes cannot be split into blocks of at most 512 bytes starting at multiples of 256 bytes \(8 rows at least\)/,
  );
});

Deno.test("rowBlocks property: blocks tile the rows, fit, and start aligned", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5000 }),
      fc.integer({ min: 1, max: 300 }).map((x) => 4 * x),
      fc.integer({ min: 1, max: 1 << 20 }),
      fc.constantFrom(32, 256),
      fc.constantFrom(1, 4),
      (rows, rowBytes, maxBytes, alignBytes, multipleOf) => {
        let blocks;
        try {
          blocks = rowBlocks(rows, rowBytes, { maxBytes, alignBytes, multipleOf });
        } catch (e) {
          // Only when one aligned group of rows is over the cap.
          assert.ok(e instanceof RangeError);
          assert.ok(rows * rowBytes > maxBytes);
          return;
        }
        let next = 0;
        for (const [i, b] of blocks.entries()) {
          assert.equal(b.start, next);
          assert.ok(b.rows >= 1);
          if (blocks.length > 1) {
            assert.ok(b.rows * rowBytes <= maxBytes);
            assert.equal((b.start * rowBytes) % alignBytes, 0);
            if (i < blocks.length - 1) assert.equal(b.rows % multipleOf, 0);
          }
          next += b.rows;
        }
        assert.equal(next, rows);
      },
    ),
  );
});

Deno.test("granuleStretches: one stretch for one segment; straddling granules gathered", () => {
  assert.deepEqual(granuleStretches([{ start: 0, size: 1000 }], 64), [
    { start: 0, size: 1000, parts: [{ segment: 0, start: 0, size: 1000 }] },
  ]);
  assert.deepEqual(
    granuleStretches(
      [{ start: 0, size: 160 }, { start: 160, size: 32 }, { start: 192, size: 100 }],
      64,
    ),
    [
      { start: 0, size: 128, parts: [{ segment: 0, start: 0, size: 128 }] },
      {
        start: 128,
        size: 64,
        parts: [{ segment: 0, start: 128, size: 32 }, { segment: 1, start: 160, size: 32 }],
      },
      { start: 192, size: 100, parts: [{ segment: 2, start: 192, size: 100 }] },
    ],
  );
});

Deno.test("granuleStretches: every stretch but the last is whole granules from a granule boundary", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 8 }),
    fc.integer({ min: 1, max: 100 }),
    (sizes, granule) => {
      let start = 0;
      const segments = sizes.map((size) => ({ start: (start += size) - size, size }));
      const stretches = granuleStretches(segments, granule);
      let pos = 0;
      for (const [i, st] of stretches.entries()) {
        assert.equal(st.start, pos);
        assert.equal(st.start % granule, 0);
        if (i < stretches.length - 1) assert.equal(st.size % granule, 0);
        assert.equal(st.parts.reduce((a, p) => a + p.size, 0), st.size);
        if (st.parts.length > 1) assert.ok(st.size <= granule);
        for (const p of st.parts) {
          const seg = segments[p.segment];
          assert.ok(p.start >= seg.start && p.start + p.size <= seg.start + seg.size);
        }
        pos += st.size;
      }
      assert.equal(pos, start);
    },
  ));
});
