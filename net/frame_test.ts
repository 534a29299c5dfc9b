import assert from "node:assert/strict";
import fc from "fast-check";
import { FrameError } from "./errors.ts";
import { type ByteReader, encodeFrame, FrameReader } from "./frame.ts";
import { concatBytes } from "../common/mod.ts";

/** Serves `bytes` in reads of the given sizes (cycled), like a slow socket. */
function chunkedReader(bytes: Uint8Array, sizes: number[]): ByteReader & { reads: number } {
  let pos = 0;
  let i = 0;
  return {
    reads: 0,
    read(p: Uint8Array): Promise<number | null> {
      this.reads++;
      if (pos >= bytes.length) return Promise.resolve(null);
      const n = Math.min(p.length, sizes[i++ % sizes.length], bytes.length - pos);
      p.set(bytes.subarray(pos, pos + n));
      pos += n;
      return Promise.resolve(n);
    },
  };
}

Deno.test("encodeFrame writes a big-endian length prefix", () => {
  const payload = new Uint8Array(300).fill(9);
  const frame = encodeFrame(payload);
  assert.deepEqual(Array.from(frame.subarray(0, 4)), [0, 0, 1, 44]);
  assert.deepEqual(frame.subarray(4), payload);
});

Deno.test("FrameReader reassembles frames delivered one byte at a time", async () => {
  const frames = [new Uint8Array([1, 2, 3]), new Uint8Array(0), new Uint8Array([4])];
  const reader = new FrameReader(chunkedReader(concatBytes(frames.map(encodeFrame)), [1]), {
    maxFrameBytes: 16,
  });
  for (const f of frames) assert.deepEqual(await reader.next(), f);
  assert.equal(await reader.next(), null);
});

Deno.test("FrameReader splits several frames arriving in one read", async () => {
  const frames = [new Uint8Array([5, 6]), new Uint8Array([7, 8, 9])];
  const reader = new FrameReader(chunkedReader(concatBytes(frames.map(encodeFrame)), [1000]), {
    maxFrameBytes: 16,
  });
  assert.deepEqual(await reader.next(), frames[0]);
  assert.deepEqual(await reader.next(), frames[1]);
  assert.equal(await reader.next(), null);
});

Deno.test("peekBuffered shows a whole frame already read, and only a whole one", async () => {
  const frames = [new Uint8Array([1]), new Uint8Array([2, 3]), new Uint8Array([4, 5, 6])];
  const bytes = concatBytes(frames.map(encodeFrame));
  // The first read takes the first two frames and half of the third.
  const reader = new FrameReader(chunkedReader(bytes, [5 + 6 + 3, 100]), { maxFrameBytes: 16 });
  assert.equal(reader.peekBuffered(), null, "nothing read yet");
  assert.deepEqual(await reader.next(), frames[0]);
  assert.deepEqual(reader.peekBuffered(), frames[1]);
  assert.deepEqual(reader.peekBuffered(), frames[1], "peeking reads nothing");
  assert.deepEqual(await reader.next(), frames[1]);
  assert.equal(reader.peekBuffered(), null, "the third frame is only partly here");
  assert.deepEqual(await reader.next(), frames[2]);
  assert.equal(reader.peekBuffered(), null);
  assert.equal(await reader.next(), null);
});

Deno.test("peekBuffered leaves an oversize frame to next(), which refuses it", async () => {
  const bytes = concatBytes([encodeFrame(new Uint8Array([1])), encodeFrame(new Uint8Array(20))]);
  const reader = new FrameReader(chunkedReader(bytes, [1000]), { maxFrameBytes: 16 });
  assert.deepEqual(await reader.next(), new Uint8Array([1]));
  assert.equal(reader.peekBuffered(), null);
  await assert.rejects(reader.next(), FrameError);
});

Deno.test("FrameReader rejects an oversize length before reading the payload", async () => {
  const header = new Uint8Array([0xff, 0xff, 0xff, 0xf0]);
  const source = chunkedReader(header, [4]);
  const reader = new FrameReader(source, { maxFrameBytes: 1024 });
  await assert.rejects(reader.next(), (e: unknown) => {
    assert.ok(e instanceof FrameError);
    assert.match(e.message, /4294967280 bytes exceeds the maximum of 1024/);
    return true;
  });
  assert.equal(source.reads, 1);
});

Deno.test("FrameReader reports a stream that ends inside a frame", async () => {
  const truncated = encodeFrame(new Uint8Array(10)).subarray(0, 9);
  const reader = new FrameReader(chunkedReader(truncated, [3]), { maxFrameBytes: 64 });
  await assert.rejects(reader.next(), /expected 10 bytes, received 5/);
  const halfHeader = new FrameReader(chunkedReader(new Uint8Array([0, 0]), [3]), {
    maxFrameBytes: 64,
  });
  await assert.rejects(halfHeader.next(), FrameError);
});

Deno.test("FrameReader round-trips any frames under any read chunking", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 8 }),
      fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 5 }),
      fc.integer({ min: 1, max: 64 }),
      async (frames, sizes, chunkBytes) => {
        const reader = new FrameReader(chunkedReader(concatBytes(frames.map(encodeFrame)), sizes), {
          maxFrameBytes: 200,
          chunkBytes,
        });
        for (const f of frames) assert.deepEqual(await reader.next(), f);
        assert.equal(await reader.next(), null);
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("FrameReader refuses a frame too long for its kind after its first byte", async () => {
  const big = new Uint8Array(500).fill(3); // kind 3, limited to 100 bytes
  const small = new Uint8Array(50).fill(3);
  const other = new Uint8Array(400).fill(1); // kind 1: only maxFrameBytes applies
  const limitFor = (tag: number) => tag === 3 ? { maxBytes: 100, name: "Kind3" } : null;
  const ok = new FrameReader(chunkedReader(concatBytes([small, other].map(encodeFrame)), [7]), {
    maxFrameBytes: 1000,
  });
  assert.deepEqual(await ok.next({ limitFor }), small);
  assert.deepEqual(await ok.next({ limitFor }), other);
  assert.equal(await ok.next({ limitFor }), null);

  const source = chunkedReader(encodeFrame(big), [4, 8]);
  const reader = new FrameReader(source, { maxFrameBytes: 1000 });
  await assert.rejects(reader.next({ limitFor }), (e: unknown) => {
    assert.ok(e instanceof FrameError);
    assert.equal(e.message, "Kind3 frame of 500 bytes exceeds the maximum of 100 bytes");
    return true;
  });
  assert.equal(source.reads, 2, "the header and one chunk, not the payload");
});

Deno.test("FrameReader with per-kind limits round-trips frames under any chunking", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.uint8Array({ maxLength: 100 }), { maxLength: 8 }),
      fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 5 }),
      async (frames, sizes) => {
        const reader = new FrameReader(chunkedReader(concatBytes(frames.map(encodeFrame)), sizes), {
          maxFrameBytes: 200,
          chunkBytes: 16,
        });
        const limitFor = () => ({ maxBytes: 100, name: "any" });
        for (const f of frames) assert.deepEqual(await reader.next({ limitFor }), f);
        assert.equal(await reader.next({ limitFor }), null);
      },
    ),
    { numRuns: 200 },
  );
});
