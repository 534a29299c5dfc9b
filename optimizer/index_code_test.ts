import assert from "node:assert/strict";
import { BitReader, BitStreamEndError, BitWriter } from "./bits.ts";
import { indexCodeBits, indexCodeShape, readIndices, writeIndices } from "./index_code.ts";

function* subsets(n: number, k: number, from = 0, acc: number[] = []): Generator<number[]> {
  if (acc.length === k) {
    yield acc;
    return;
  }
  for (let i = from; i <= n - (k - acc.length); i++) yield* subsets(n, k, i + 1, [...acc, i]);
}

Deno.test("every k-subset of small chunks round-trips in exactly indexCodeBits bits", () => {
  for (let totalk = 1; totalk <= 9; totalk++) {
    for (let k = 1; k <= totalk; k++) {
      for (const set of subsets(totalk, k)) {
        const w = new BitWriter();
        writeIndices(w, { sorted: set, totalk });
        assert.equal(w.bitLength, indexCodeBits(k, totalk), `k=${k} totalk=${totalk}`);
        const out = new Uint32Array(k);
        assert.equal(readIndices(w.finish(), { into: out, chunks: 1, k, totalk }), null);
        assert.deepEqual([...out], set);
      }
    }
  }
});

Deno.test("index code shape: low bits and high vector", () => {
  assert.deepEqual(indexCodeShape(8, 4096), { low: 8, high: 23 });
  assert.deepEqual(indexCodeShape(2, 4), { low: 0, high: 4 });
  assert.deepEqual(indexCodeShape(1, 256), { low: 8, high: 1 });
});

Deno.test("readIndices reports a wrong count of ones, out-of-range and unordered indices", () => {
  // k = 2, totalk = 4: U = 3, L = 0, high vector of 4 bits.
  const read = (bits: number[]) => {
    const w = new BitWriter();
    for (const b of bits) w.bit(b === 1);
    return readIndices(w.finish(), { into: new Uint32Array(2), chunks: 1, k: 2, totalk: 4 })
      ?.problem ?? null;
  };
  assert.equal(read([1, 1, 0, 0]), null);
  assert.equal(read([1, 0, 0, 0]), "ones");
  assert.equal(read([1, 1, 1, 0]), "ones");
  assert.equal(read([1, 0, 0, 1]), null); // y = [0, 2] → x = [0, 3]
  // k = 2, totalk = 8: U = 7, L = 1, high vector of 5 bits.
  const read8 = (lows: number[], high: number[]) => {
    const w = new BitWriter();
    for (const l of lows) w.write(l, 1);
    for (const b of high) w.bit(b === 1);
    return readIndices(w.finish(), { into: new Uint32Array(2), chunks: 1, k: 2, totalk: 8 })
      ?.problem ?? null;
  };
  assert.equal(read8([1, 0], [1, 1, 0, 0, 0]), "order"); // equal highs, lows fall: x = [1, 1]
  assert.equal(read8([0, 1], [1, 0, 0, 0, 1]), "range"); // y1 = 3·2 + 1 = 7 → x1 = 8
  assert.equal(read8([0, 0], [1, 0, 0, 0, 1]), null); // y1 = 6 → x1 = 7
  assert.throws(() => new BitReader(new Uint8Array(1)).read(9), BitStreamEndError);
});

Deno.test("readIndices reads consecutive chunks and names the first bad one", () => {
  // k = 2, totalk = 8 (L = 1, 7 bits a chunk): chunks {1, 6}, {0, 7}, then a chunk with 3 ones.
  const w = new BitWriter();
  writeIndices(w, { sorted: [1, 6], totalk: 8 });
  writeIndices(w, { sorted: [0, 7], totalk: 8 });
  const good = w.finish();
  const into = new Uint32Array(6);
  assert.equal(readIndices(good, { into, chunks: 2, k: 2, totalk: 8 }), null);
  assert.deepEqual([...into.subarray(0, 4)], [1, 6, 0, 7]);
  for (const b of [0, 0, 1, 1, 1, 0, 0]) w.bit(b === 1);
  assert.deepEqual(readIndices(w.finish(), { into, chunks: 3, k: 2, totalk: 8 }), {
    chunk: 2,
    problem: "ones",
  });
  assert.throws(() => readIndices(good, { into, chunks: 3, k: 2, totalk: 8 }), RangeError);
});

Deno.test("index code shape: the constant-time low width is the largest L with k·2^L <= U", () => {
  // The definition, as a loop, against the formula over every k <= totalk up to 300, and chunk
  // sizes up to 256 x 256 at the k a run uses.
  const byLoop = (k: number, totalk: number) => {
    const universe = totalk - k + 1;
    let low = 0;
    while (k * 2 ** (low + 1) <= universe) low++;
    return { low, high: k + Math.floor((universe - 1) / 2 ** low) };
  };
  for (let totalk = 1; totalk <= 300; totalk++) {
    for (let k = 1; k <= totalk; k++) {
      assert.deepEqual(indexCodeShape(k, totalk), byLoop(k, totalk), `k=${k} totalk=${totalk}`);
    }
  }
  for (const side of [8, 16, 32, 64, 128, 256]) {
    for (const k of [1, 2, 3, 4, 8, 16, 32, 64, 100]) {
      const totalk = side * side;
      if (k <= totalk) assert.deepEqual(indexCodeShape(k, totalk), byLoop(k, totalk));
    }
  }
});
