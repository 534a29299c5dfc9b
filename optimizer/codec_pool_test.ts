import assert from "node:assert/strict";
import fc from "fast-check";
import {
  balancedShares,
  CodecPool,
  defaultCodecWorkers,
  HostCodec,
  PARALLEL_MIN_ENTRIES,
  PARALLEL_MIN_PAYLOAD_BYTES,
  sharedBytes,
  sharedItems,
} from "./codec_pool.ts";
import type { SparseParam } from "./compress.ts";
import { aggregateFixed } from "./exact.ts";
import { type ChunkLayout, chunkLayout } from "./layout.ts";
import { decodePayload, encodePayload, type PayloadExpectation } from "./wire.ts";

Deno.test("balancedShares: every item once, ascending, no share past the ideal by more than its largest", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 60 }),
    fc.integer({ min: 1, max: 9 }),
    (sizes, workers) => {
      const shares = balancedShares(sizes, workers);
      assert.ok(shares.length <= workers);
      assert.deepEqual(shares.flat().sort((a, b) => a - b), sizes.map((_, i) => i));
      const total = sizes.reduce((a, b) => a + b, 0);
      for (const share of shares) {
        assert.ok(share.length > 0);
        assert.deepEqual(share, [...share].sort((a, b) => a - b));
        const load = share.reduce((sum, i) => sum + sizes[i], 0);
        const largest = Math.max(...share.map((i) => sizes[i]));
        assert.ok(load <= total / workers + largest, `${load} of ${total} over ${workers}`);
      }
    },
  ));
  assert.throws(() => balancedShares([1], 0), /positive integer/);
});

Deno.test("defaultCodecWorkers: one per core, none on one core, at most 8", () => {
  assert.deepEqual([1, 2, 3, 16, 128].map(defaultCodecWorkers), [0, 2, 3, 8, 8]);
});

/** Layouts of several shapes and chunkings: 1-D and 2-D, ragged and whole, k clamped. */
const LAYOUTS: ChunkLayout[] = [
  chunkLayout("embed", [96, 40], { chunk: 16, topk: 4 }),
  chunkLayout("norm", [40], { chunk: 16, topk: 3 }),
  chunkLayout("q", [40, 40], { chunk: 8, topk: 8 }),
  chunkLayout("tiny", [3], { chunk: 4, topk: 9 }),
  chunkLayout("up", [120, 40], { chunk: 32, topk: 2 }),
];

/** Each peer's parameters: indices distinct per chunk, overlapping between peers; f32 values. */
function randomResults(peers: number, seed: number): SparseParam[][] {
  let r = seed;
  const next = (n: number) => (r = (Math.imul(r, 1664525) + 1013904223) >>> 0) % n;
  return Array.from({ length: peers }, () =>
    LAYOUTS.map((l) => {
      const indices = new Uint32Array(l.chunks * l.k), values = new Float32Array(l.chunks * l.k);
      for (let c = 0; c < l.chunks; c++) {
        const picked = new Set<number>();
        while (picked.size < l.k) picked.add(next(l.totalk));
        indices.set([...picked], c * l.k);
      }
      for (let e = 0; e < values.length; e++) values[e] = (next(2001) - 1000) / 64;
      return { indices, values };
    }));
}

const serial = (results: readonly (readonly SparseParam[])[]) =>
  LAYOUTS.map((l, n) => aggregateFixed(l, results.map((r) => r[n])));

Deno.test("the pool's aggregate has the serial aggregate's bits, for any peers and workers", async () => {
  for (const workers of [1, 2, 3]) {
    using pool = new CodecPool(workers);
    assert.equal(pool.size, workers);
    for (const peers of [1, 2, 5]) {
      const results = randomResults(peers, 17 * workers + peers);
      assert.deepEqual(await pool.aggregate(LAYOUTS, results), serial(results));
    }
  }
});

Deno.test("the pool aggregates views into a larger buffer by their own elements", async () => {
  using pool = new CodecPool(2);
  const results = randomResults(3, 5);
  // Each array copied into the middle third of a buffer three times its size, as a slice of one
  // read-back: only the view's elements may be summed.
  const middle = <T extends Uint32Array | Float32Array>(a: T, make: (n: number) => T): T => {
    const big = make(3 * a.length);
    big.set(a, a.length);
    return big.subarray(a.length, 2 * a.length) as T;
  };
  const viewed = results.map((peer) =>
    peer.map(({ indices, values }) => ({
      indices: middle(indices, (n) => new Uint32Array(n)),
      values: middle(values, (n) => new Float32Array(n)),
    }))
  );
  assert.deepEqual(await pool.aggregate(LAYOUTS, viewed), serial(results));
});

Deno.test("sharedItems lays every peer's part of each share end to end in the shared memory", () => {
  const results = randomResults(3, 8);
  const shares = balancedShares(LAYOUTS.map((l) => l.chunks * l.k), 2);
  const memory = new SharedArrayBuffer(sharedBytes(LAYOUTS, 3));
  const items = sharedItems(LAYOUTS, results, shares, memory);
  assert.deepEqual(items.map((share) => share.map((item) => item.n)), shares);
  let at = 0;
  for (const item of items.flat()) {
    assert.equal(item.layout, LAYOUTS[item.n]);
    for (const [r, part] of item.results.entries()) {
      for (const array of [part.indices, part.values]) {
        assert.equal(array.buffer, memory);
        assert.equal(array.byteOffset, at);
        at += array.byteLength;
      }
      assert.deepEqual(part, results[r][item.n]);
    }
  }
  assert.equal(at, memory.byteLength, "every byte used, none twice");
});

Deno.test("aggregates in flight together each get their own bits (shared memory is not reused under them)", async () => {
  using pool = new CodecPool(2);
  const rounds = [randomResults(4, 21), randomResults(4, 22), randomResults(2, 23)];
  const answers = await Promise.all(rounds.map((results) => pool.aggregate(LAYOUTS, results)));
  answers.forEach((answer, i) => assert.deepEqual(answer, serial(rounds[i])));
  // One at a time, the memory is reused: still each round's own bits.
  for (const results of rounds) {
    assert.deepEqual(await pool.aggregate(LAYOUTS, results), serial(results));
  }
});

Deno.test("the pool refuses a malformed result with the serial RangeError, then goes on", async () => {
  using pool = new CodecPool(2);
  const bad = randomResults(2, 9);
  bad[1][2].indices[5] = LAYOUTS[2].totalk;
  const expected = (() => {
    try {
      serial(bad);
    } catch (e) {
      return e as Error;
    }
    assert.fail("the serial aggregate must refuse it");
  })();
  assert.match(expected.message, /index 64 >= totalk 64/);
  await assert.rejects(pool.aggregate(LAYOUTS, bad), (e: Error) => {
    assert.ok(e instanceof RangeError);
    assert.equal(e.message, expected.message);
    return true;
  });
  const nan = randomResults(2, 10);
  nan[0][0].values[3] = NaN;
  await assert.rejects(pool.aggregate(LAYOUTS, nan), RangeError);
  // A part of the wrong length, longer or shorter: the serial aggregate's refusal.
  for (const length of [LAYOUTS[1].chunks * LAYOUTS[1].k + 8, 1]) {
    const odd = randomResults(2, 12);
    odd[1][1] = { indices: new Uint32Array(length), values: new Float32Array(length) };
    await assert.rejects(pool.aggregate(LAYOUTS, odd), (e: Error) => {
      assert.ok(e instanceof RangeError);
      assert.match(e.message, /result 1 has \d+ indices and \d+ values, expected \d+ each/);
      return true;
    });
  }
  const good = randomResults(2, 11);
  assert.deepEqual(await pool.aggregate(LAYOUTS, good), serial(good));
});

Deno.test("a disposed pool fails the aggregate it was doing", async () => {
  const pool = new CodecPool(1);
  const pending = pool.aggregate(LAYOUTS, randomResults(2, 3));
  pool[Symbol.dispose]();
  await assert.rejects(pending, /codec pool disposed/);
});

Deno.test("a HostCodec starts its workers only for rounds of PARALLEL_MIN_ENTRIES entries", async () => {
  using aggregator = new HostCodec({ workers: 2 });
  const small = randomResults(3, 4);
  assert.deepEqual(await aggregator.aggregate(LAYOUTS, small), serial(small));
  assert.equal(aggregator.started, false);
  // One layout whose entries times two peers reach the threshold exactly, every value 1: each
  // chosen coefficient's mean is 1, its fixed-point value 2^15.
  const wide = chunkLayout("wide", [PARALLEL_MIN_ENTRIES / 2], { chunk: 4, topk: 4 });
  const peer = () => [{
    indices: new Uint32Array(wide.chunks * wide.k).map((_, e) => e % 4),
    values: new Float32Array(wide.chunks * wide.k).fill(1),
  }];
  const [big] = await aggregator.aggregate([wide], [peer(), peer()]);
  assert.equal(aggregator.started, true);
  assert.deepEqual(big, aggregateFixed(wide, [peer()[0], peer()[0]]));
  assert.ok(big.coeffs.every((q) => q === 2 ** 15));
  using none = new HostCodec({ workers: 0 });
  assert.deepEqual(await none.aggregate([wide], [peer(), peer()]), [big]);
  assert.equal(none.started, false, "no workers: this thread");
  assert.throws(() => new HostCodec({ workers: -1 }), /integer >= 0/);
  assert.throws(() => new HostCodec({ minEntries: NaN }), /minEntries must be >= 0/);
  assert.throws(() => new HostCodec({ minPayloadBytes: -1 }), /minPayloadBytes must be >= 0/);
});

/** Payloads of `randomResults`' first peer in bf16 (any f32 value) and 1-bit (±1) form. */
function payloads(seed: number) {
  const [params] = randomResults(1, seed);
  const signs = params.map((p) => ({ ...p, values: p.values.map((v) => v < 0 ? -1 : 1) }));
  const bf16: PayloadExpectation = { layouts: LAYOUTS, quantize1bit: false };
  const oneBit: PayloadExpectation = { layouts: LAYOUTS, quantize1bit: true };
  const result = (p: SparseParam[]) => ({
    step: 7,
    batch: { start: 4, end: 5 },
    trainerNonce: seed,
    params: p,
  });
  return [
    { bytes: encodePayload(result(params), bf16), expectation: bf16 },
    { bytes: encodePayload(result(signs), oneBit), expectation: oneBit },
  ];
}

Deno.test("the pool decodes payloads as decodePayload does, bit for bit, errors included", async () => {
  using pool = new CodecPool(2);
  for (const { bytes, expectation } of [...payloads(1), ...payloads(2)]) {
    const decoded = await pool.decode(bytes, expectation);
    assert.deepEqual(decoded, decodePayload(bytes, expectation));
    assert.equal(bytes.length > 0 && bytes[0], 0x44, "the bytes are the caller's still ('D')");
  }
  // A payload cut short, and one announced for another step: the serial decode's own errors.
  const [{ bytes, expectation }] = payloads(3);
  for (
    const [bad, expect] of [
      [bytes.subarray(0, bytes.length - 3), expectation],
      [bytes, { ...expectation, step: 8 }],
    ] as const
  ) {
    let serial: Error | undefined;
    try {
      decodePayload(bad, expect);
    } catch (e) {
      serial = e as Error;
    }
    assert.ok(serial !== undefined, "the serial decode refuses it");
    await assert.rejects(pool.decode(bad, expect), (e: Error) => {
      assert.equal(e.name, "PayloadDecodeError");
      assert.equal(e.message, serial!.message);
      return true;
    });
  }
});

Deno.test("a HostCodec decodes payloads of PARALLEL_MIN_PAYLOAD_BYTES on its workers, finishing one cut off by disposal", async () => {
  const [{ bytes, expectation }] = payloads(4);
  assert.ok(bytes.length < PARALLEL_MIN_PAYLOAD_BYTES);
  const expected = decodePayload(bytes, expectation);
  using small = new HostCodec({ workers: 2 });
  assert.deepEqual(await small.decode(bytes, expectation), expected);
  assert.equal(small.started, false, "a small payload stays on this thread");
  const codec = new HostCodec({ workers: 2, minPayloadBytes: 0 });
  assert.deepEqual(await codec.decode(bytes, expectation), expected);
  assert.equal(codec.started, true);
  // Disposed while decoding: the decode finishes here; later ones run here too.
  const cut = codec.decode(bytes, expectation);
  codec[Symbol.dispose]();
  assert.deepEqual(await cut, expected);
  assert.deepEqual(await codec.decode(bytes, expectation), expected);
  assert.equal(codec.started, false);
  // A bad payload is refused either way.
  await assert.rejects(
    new HostCodec({ workers: 0 }).decode(bytes.subarray(1), expectation),
    /Invalid DisTrO payload/,
  );
});
