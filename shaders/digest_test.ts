import assert from "node:assert/strict";
import {
  blockDigests,
  DIGEST_BLOCK_WORDS,
  digestBytes,
  digestBytesYielding,
  digestOfBlocks,
  GpuDigest,
} from "./digest.ts";
import { GpuRuntime } from "./gpu.ts";
import { randomInts } from "./testing/kernels.ts";

const bytesOf = (w: Uint32Array) => new Uint8Array(w.buffer, w.byteOffset, w.byteLength);

Deno.test("GPU digest equals the host reference for whole, partial and many blocks", async () => {
  using rt = await GpuRuntime.create();
  for (const workgroupSize of [64, 256]) {
    using digest = new GpuDigest(rt, workgroupSize);
    for (const words of [4, 1020, DIGEST_BLOCK_WORDS, 1028, 5000, 70004]) {
      const data = randomInts(words, words, 2 ** 32);
      const gpu = await digest.digest(rt.buffer(`d${words}`, data));
      assert.equal(gpu, digestBytes(bytesOf(data)), `${words} words, wg ${workgroupSize}`);
    }
  }
});

Deno.test("GPU digest covers a buffer in windows and digests an offset view", async () => {
  const words = 100 * DIGEST_BLOCK_WORDS + 8;
  const data = randomInts(7, words, 2 ** 32);
  const want = digestBytes(bytesOf(data));
  {
    // Bindings capped at 32 blocks: the 101 blocks go through 4 windows.
    using capped = await GpuRuntime.create({ maxBindingBytes: 32 * 4 * DIGEST_BLOCK_WORDS });
    using windowed = new GpuDigest(capped);
    assert.equal(await windowed.digest(capped.buffer("windowed", data)), want);
  }
  using rt = await GpuRuntime.create();
  const buffer = rt.buffer("whole", data);
  using whole = new GpuDigest(rt);
  assert.equal(await whole.digest(buffer), want);
  const from = 3 * DIGEST_BLOCK_WORDS; // a 256-byte aligned offset
  const view = { buffer, offset: from * 4, size: 4096 * 4 };
  assert.equal(await whole.digest(view), digestBytes(bytesOf(data.subarray(from, from + 4096))));
});

Deno.test("every changed word, swapped pair and length changes the digest", async () => {
  using rt = await GpuRuntime.create();
  using digest = new GpuDigest(rt);
  const words = 3 * DIGEST_BLOCK_WORDS + 16;
  const data = randomInts(11, words, 2 ** 32);
  const base = await digest.digest(rt.buffer("base", data));
  const seen = new Set([base]);
  const variants: [string, Uint32Array][] = [];
  for (const at of [0, 3, DIGEST_BLOCK_WORDS - 1, DIGEST_BLOCK_WORDS, 2500, words - 1]) {
    for (const bit of [0, 31]) {
      const changed = data.slice();
      changed[at] ^= 1 << bit;
      variants.push([`bit ${bit} of word ${at}`, changed]);
    }
  }
  const swapped = data.slice();
  [swapped[5], swapped[9]] = [data[9], data[5]]; // the same lane, different positions
  variants.push(["two words of one lane swapped", swapped]);
  const blocksSwapped = data.slice();
  blocksSwapped.set(data.subarray(0, DIGEST_BLOCK_WORDS), DIGEST_BLOCK_WORDS);
  blocksSwapped.set(data.subarray(DIGEST_BLOCK_WORDS, 2 * DIGEST_BLOCK_WORDS), 0);
  variants.push(["first two blocks swapped", blocksSwapped]);
  variants.push(["four zero words appended", new Uint32Array([...data, 0, 0, 0, 0])]);
  for (const [what, changed] of variants) {
    const d = await digest.digest(rt.buffer(what, changed));
    assert.equal(d, digestBytes(bytesOf(changed)), what);
    assert.ok(!seen.has(d), `${what} left the digest unchanged`);
    seen.add(d);
  }
});

Deno.test("the digest's definition is pinned (logs compare across client versions)", () => {
  const words = Uint32Array.from({ length: 2 * DIGEST_BLOCK_WORDS + 4 }, (_, i) => i * 2654435761);
  assert.deepEqual([...blockDigests(words.subarray(0, 8))], [PINNED_BLOCK[0], PINNED_BLOCK[1]]);
  assert.equal(digestBytes(bytesOf(words)), PINNED_DIGEST);
});

Deno.test("a digest made a chunk at a time has the same bits and reports each chunk", async () => {
  const words = Uint32Array.from({ length: 5 * DIGEST_BLOCK_WORDS + 12 }, (_, i) => i * 40503);
  const whole = digestOfBlocks(words.length, blockDigests(words));
  const reports: number[] = [];
  // 2 blocks a chunk: 3 chunks, the last a short one.
  const chunked = digestBytes(bytesOf(words), {
    chunkBytes: 2 * 4 * DIGEST_BLOCK_WORDS + 100,
    onProgress: (done, total) => {
      assert.equal(total, words.byteLength);
      reports.push(done);
    },
  });
  assert.equal(chunked, whole);
  const chunk = 2 * 4 * DIGEST_BLOCK_WORDS;
  assert.deepEqual(reports, [chunk, 2 * chunk, words.byteLength]);
  // The yielding variant: the same digest, and a timer set before it runs between its chunks.
  let timerRan = false;
  setTimeout(() => timerRan = true, 0);
  const seen: boolean[] = [];
  const yielded = await digestBytesYielding(bytesOf(words), {
    chunkBytes: chunk,
    onProgress: () => seen.push(timerRan),
  });
  assert.equal(yielded, whole);
  assert.deepEqual(seen, [false, true, true]);
});

Deno.test("digest inputs that are not whole words or vec4 are refused", async () => {
  assert.throws(() => digestBytes(new Uint8Array(6)), /not a whole number of words/);
  assert.throws(() => digestOfBlocks(2048, new Uint32Array(2)), /2 block words for 2048 words/);
  using rt = await GpuRuntime.create();
  using digest = new GpuDigest(rt);
  const buffer = rt.buffer("odd", 64);
  await assert.rejects(
    () => digest.digest({ buffer, offset: 0, size: 40 }),
    /"odd" is 40 bytes, not a multiple of 16/,
  );
  await assert.rejects(
    () => digest.digest({ buffer, offset: 16, size: 48 }),
    /a view of "odd" at offset 16 is not \d+-byte aligned/,
  );
  // A binding cap below one 4 KB block leaves no window to digest through.
  using tiny = await GpuRuntime.create({ maxBindingBytes: 256 });
  using cramped = new GpuDigest(tiny);
  await assert.rejects(
    () => cramped.digest(tiny.buffer("big", 8192)),
    /rows of 4096 bytes cannot be split into blocks of at most 256 bytes/,
  );
});

const PINNED_BLOCK = [0x0f54dd4c, 0x004b8141];
const PINNED_DIGEST = "4ecbb27d03f16cab72992244813c25164f4d1ae84092ee120c4c95667a8c16a7";
