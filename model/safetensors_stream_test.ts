import assert from "node:assert/strict";
import { encodeSafetensors, type StoredTensor } from "./safetensors.ts";
import { type StreamedTensor, writeSafetensorsStreamed } from "./safetensors_stream.ts";

/** A tensor's bytes yielded in pieces of `piece` bytes. */
function streamed(name: string, t: StoredTensor, piece: number): StreamedTensor {
  return {
    name,
    dtype: t.dtype,
    shape: t.shape,
    async *chunks() {
      for (let i = 0; i < t.bytes.length; i += piece) yield t.bytes.slice(i, i + piece);
    },
  };
}

const tensors = new Map<string, StoredTensor>([
  ["b", { dtype: "F32", shape: [3, 5], bytes: Uint8Array.from({ length: 60 }, (_, i) => i) }],
  ["a", { dtype: "U32", shape: [7], bytes: Uint8Array.from({ length: 28 }, (_, i) => 255 - i) }],
  ["c", { dtype: "BF16", shape: [0], bytes: new Uint8Array(0) }],
]);

Deno.test("a streamed file has encodeSafetensors' bytes, whatever the piece size", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const metadata = { format: "pt" };
    const expected = encodeSafetensors({ tensors, metadata });
    for (const piece of [1, 7, 16, 1000]) {
      const path = `${dir}/x.safetensors`;
      await writeSafetensorsStreamed(path, {
        tensors: [...tensors].map(([n, t]) => streamed(n, t, piece)),
        metadata,
      });
      assert.deepEqual(await Deno.readFile(path), expected, `pieces of ${piece}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a source that yields too few or too many bytes is refused by name, leaving no file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/x.safetensors`;
    const b = tensors.get("b")!;
    for (const [bytes, found] of [[b.bytes.subarray(0, 59), "59"], [new Uint8Array(61), "more"]]) {
      await assert.rejects(
        writeSafetensorsStreamed(path, {
          tensors: [streamed("b", { ...b, bytes: bytes as Uint8Array }, 16)],
          metadata: null,
        }),
        new RegExp(
          `tensor "b" of dtype F32 and shape \\[3, 5\\] needs 60 bytes, its source gave ${found}`,
        ),
      );
      await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
