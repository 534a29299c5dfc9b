import assert from "node:assert/strict";
import { chunkBlocks, entryWindow } from "./chunk_blocks.ts";
import { packAggregate } from "./aggregate_blocks.ts";
import { chunkLayout } from "./layout.ts";

const LIMITS = { maxBytes: 128 * 2 ** 20, alignBytes: 256 };

Deno.test("a parameter that fits one binding is one block, itself", () => {
  const l = chunkLayout("w", [2048, 8192], { chunk: 64, topk: 4 });
  assert.deepEqual(chunkBlocks(l, LIMITS), [{ offset: 0, firstChunk: 0, layout: l }]);
});

Deno.test("the Llama-1B embedding on lavapipe: 8 blocks of whole chunk rows, a ragged last", () => {
  const l = chunkLayout("embed", [128256, 2048], { chunk: 64, topk: 4 });
  const blocks = chunkBlocks(l, LIMITS);
  // A chunk row is 64 × 2048 floats (512 KiB): 256 of them fill 128 MiB.
  assert.deepEqual(blocks.map((b) => b.layout.shape[0]), [...Array(7).fill(16384), 13568]);
  let rows = 0, chunks = 0;
  for (const b of blocks) {
    assert.equal(b.offset, rows * 2048);
    assert.equal(b.firstChunk, chunks);
    assert.equal(b.offset % 64, 0);
    assert.ok(b.layout.size * 4 <= LIMITS.maxBytes);
    assert.equal(b.layout.chunks, (b.layout.shape[0] / 64) * 32);
    assert.equal(b.layout.size, b.layout.chunks * l.totalk);
    assert.deepEqual(b.layout.encodedShape, [b.layout.shape[0] / 64, 32, 64, 64]);
    rows += b.layout.shape[0];
    chunks += b.layout.chunks;
  }
  assert.equal(rows, 128256);
  assert.equal(chunks, l.chunks);
});

Deno.test("blocks leave room for the result entries' aligned window", () => {
  // k = totalk: a chunk row has as many entries as elements; the entry window may start 63
  // words early, so a block holds one chunk row less than the elements alone would allow.
  const l = chunkLayout("norm", [4096], { chunk: 16, topk: 16 });
  const blocks = chunkBlocks(l, { maxBytes: 1024, alignBytes: 256 });
  assert.deepEqual(blocks[0].layout.shape, [192]);
  for (const b of blocks) assert.ok((63 + b.layout.chunks * l.k) * 4 <= 1024);
});

Deno.test("a binding too small for one aligned chunk row is refused by name", () => {
  const l = chunkLayout("model.embed_tokens.weight", [512, 64], { chunk: 32, topk: 8 });
  assert.throws(
    () => chunkBlocks(l, { maxBytes: 4096, alignBytes: 256 }),
    /parameter "model\.embed_tokens\.weight" cannot be cut into blocks of whole 32-row chunk rows \(8192 bytes each\) that fit storage bindings of 4096 bytes/,
  );
});

Deno.test("entry windows start aligned at or below the first entry and are never empty", () => {
  assert.deepEqual(entryWindow(0, 10, 64), { start: 0, size: 10, first: 0 });
  assert.deepEqual(entryWindow(128, 3, 64), { start: 128, size: 3, first: 0 });
  assert.deepEqual(entryWindow(130, 0, 64), { start: 128, size: 2, first: 2 });
  assert.deepEqual(entryWindow(5, 0, 4).size, 1);
});

Deno.test("the aggregate is packed per block into aligned windows with block-relative offsets", () => {
  const l = chunkLayout("w", [8, 4], { chunk: 2, topk: 1 }); // 4 chunk rows of 2 chunks
  const blocks = chunkBlocks(l, { maxBytes: 64, alignBytes: 32 }); // 2 chunk rows each
  assert.equal(blocks.length, 2);
  // Chunks 0..7 hold 1, 0, 2, 1 | 0, 0, 3, 1 entries.
  const offsets = new Uint32Array([0, 1, 1, 3, 4, 4, 4, 7, 8]);
  const indices = Uint32Array.from({ length: 8 }, (_, i) => i % 4);
  const coeffs = Int32Array.from({ length: 8 }, (_, i) => 10 + i);
  const packed = packAggregate(
    [{ offsets, indices, coeffs, scaleExp: new Int32Array(8) }],
    [blocks],
    8,
  );
  assert.deepEqual(packed.windows, [[
    { offsets: [0, 5], entries: [0, 4] },
    { offsets: [8, 5], entries: [8, 4] },
  ]]);
  assert.deepEqual([...packed.offsets.subarray(0, 5)], [0, 1, 1, 3, 4]);
  assert.deepEqual([...packed.offsets.subarray(8, 13)], [0, 0, 0, 3, 4]);
  assert.deepEqual([...packed.q.subarray(0, 4)], [10, 11, 12, 13]);
  assert.deepEqual([...packed.q.subarray(8, 12)], [14, 15, 16, 17]);
  assert.throws(() => packAggregate([], [blocks], 8), /0 aggregates for 1 parameters/);
});
