import assert from "node:assert/strict";
import {
  decodeSafetensors,
  encodeSafetensors,
  readSafetensors,
  SafetensorsError,
  type StoredTensor,
  tensorFromFloat32,
  tensorToFloat32,
  writeSafetensors,
} from "./safetensors.ts";

/** Builds a file by hand: header JSON + raw body, exactly as another writer could lay it out. */
function handmade(header: unknown, body: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + body.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(body, 8 + json.length);
  return out;
}

function sample(): Map<string, StoredTensor> {
  const values = Float32Array.from({ length: 24 }, (_, i) => Math.sin(i * 1.7) * 10 ** (i % 7 - 3));
  values[3] = NaN;
  values[4] = -Infinity;
  values[5] = 1e-42; // f32 subnormal
  values[6] = -0;
  return new Map([
    ["a.f32", tensorFromFloat32(values, [2, 3, 4], "F32")],
    ["b.bf16", tensorFromFloat32(values, [24], "BF16")],
    ["c.f16", tensorFromFloat32(values, [4, 6], "F16")],
    ["d.empty", tensorFromFloat32(new Float32Array(0), [0, 5], "F32")],
  ]);
}

Deno.test("encode → decode → encode is bit-exact for F32, BF16 and F16", () => {
  const tensors = sample();
  const bytes = encodeSafetensors({ tensors, metadata: { format: "pt" } });
  assert.equal((Number(new DataView(bytes.buffer).getBigUint64(0, true)) + 8) % 8, 0);
  const back = decodeSafetensors(bytes);
  assert.deepEqual(back.metadata, { format: "pt" });
  assert.deepEqual([...back.tensors.keys()], [...tensors.keys()]);
  for (const [name, t] of tensors) {
    const b = back.tensors.get(name)!;
    assert.equal(b.dtype, t.dtype);
    assert.deepEqual(b.shape, t.shape);
    assert.deepEqual(b.bytes, t.bytes, name);
  }
  assert.deepEqual(encodeSafetensors(back), bytes);
});

Deno.test("a file laid out by another writer re-encodes to the same tensors", () => {
  // bf16 bits for [1, -2, 0.5] and f16 bits for [1, 65504] written by hand.
  const body = new Uint8Array([0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x00, 0x3c, 0xff, 0x7b]);
  const file = handmade({
    "w.h": { dtype: "F16", shape: [2], data_offsets: [6, 10] },
    "w.b": { dtype: "BF16", shape: [3], data_offsets: [0, 6] },
  }, body);
  const parsed = decodeSafetensors(file);
  assert.deepEqual([...tensorToFloat32("w.b", parsed.tensors.get("w.b")!)], [1, -2, 0.5]);
  assert.deepEqual([...tensorToFloat32("w.h", parsed.tensors.get("w.h")!)], [1, 65504]);
  const again = decodeSafetensors(encodeSafetensors(parsed));
  for (const [name, t] of parsed.tensors) assert.deepEqual(again.tensors.get(name)!.bytes, t.bytes);
});

Deno.test("f32 values convert with round-to-nearest-even", () => {
  const v = new Float32Array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1e6, 70000, 2 ** -20]);
  assert.deepEqual([...tensorToFloat32("x", tensorFromFloat32(v, [5], "BF16"))], [
    1,
    1 + 2 ** -6,
    999424,
    70144,
    2 ** -20,
  ]);
  const h = new Float32Array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504, 65520, 2 ** -25, 2 ** -20]);
  assert.deepEqual([...tensorToFloat32("x", tensorFromFloat32(h, [6], "F16"))], [
    1,
    1 + 2 ** -9,
    65504,
    Infinity,
    0,
    2 ** -20,
  ]);
});

Deno.test("decodeSafetensors rejects corrupt files naming the tensor", () => {
  const f32 = (offsets: number[], shape = [2]) => ({ dtype: "F32", shape, data_offsets: offsets });
  const cases: [Uint8Array, RegExp, string | null][] = [
    [new Uint8Array(4), /shorter than the 8-byte header/, null],
    [handmade({ x: f32([0, 8]) }, new Uint8Array(8)).subarray(0, 20), /header length/, null],
    [
      handmade({ x: f32([0, 12]) }, new Uint8Array(8)),
      /"x" data_offsets \[0, 12\] lie outside/,
      "x",
    ],
    [
      handmade({ x: f32([0, 4]) }, new Uint8Array(4)),
      /"x" of dtype F32 and shape \[2\] needs 8/,
      "x",
    ],
    [
      handmade({ x: f32([0, 8]), y: f32([4, 12]) }, new Uint8Array(12)),
      /"y" overlaps the previous tensor/,
      "y",
    ],
    [handmade({ x: f32([4, 12]) }, new Uint8Array(12)), /4 unused bytes before tensor "x"/, "x"],
    [handmade({ x: f32([0, 8]) }, new Uint8Array(9)), /1 unused bytes after the last tensor/, null],
    [
      handmade({ x: { dtype: "Q4", shape: [1], data_offsets: [0, 1] } }, new Uint8Array(1)),
      /"x" has unknown dtype "Q4"/,
      "x",
    ],
    [handmade({ x: f32([0, 8], [-2]) }, new Uint8Array(8)), /"x" has invalid shape/, "x"],
    [handmade({ x: f32([8, 0]) }, new Uint8Array(8)), /"x" data_offsets \[8, 0\]/, "x"],
    [handmade([1, 2], new Uint8Array(0)), /not a JSON object/, null],
    [handmade({ __metadata__: { a: 1 } }, new Uint8Array(0)), /__metadata__ value for "a"/, null],
  ];
  for (const [bytes, pattern, tensor] of cases) {
    assert.throws(
      () => decodeSafetensors(bytes, { file: "m.safetensors" }),
      (e: unknown) =>
        e instanceof SafetensorsError && pattern.test(e.message) &&
        e.message.startsWith('Cannot load "m.safetensors"') && e.tensor === tensor,
      pattern.source,
    );
  }
  const ints = decodeSafetensors(
    handmade({ i: { dtype: "I64", shape: [1], data_offsets: [0, 8] } }, new Uint8Array(8)),
  );
  assert.throws(() => tensorToFloat32("i", ints.tensors.get("i")!), /"i" has dtype I64/);
});

Deno.test("writeSafetensors and readSafetensors round-trip a file on disk", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/model.safetensors`;
    const tensors = sample();
    await writeSafetensors(path, { tensors, metadata: null });
    const back = await readSafetensors(path);
    assert.equal(back.metadata, null);
    for (const [name, t] of tensors) assert.deepEqual(back.tensors.get(name)!.bytes, t.bytes);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
