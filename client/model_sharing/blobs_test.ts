import assert from "node:assert/strict";
import fc from "fast-check";
import {
  CONFIG_BLOB,
  isBf16Exact,
  ModelBlobError,
  modelFromBlobs,
  modelToBlobs,
  modelToBlobSteps,
  tensorElements,
} from "./blobs.ts";
import { runSteps } from "../../common/mod.ts";
import type { BlobToShare } from "../../net/p2p/mod.ts";
import { tinyModel } from "../../model/testing/fixtures.ts";
import { decodeBf16, encodeBf16 } from "../../model/mod.ts";

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

Deno.test("blobs round-trip any f32 bit pattern exactly", () => {
  const model = tinyModel(1);
  const entries = model.layout.entries;
  fc.assert(
    fc.property(
      fc.uint32Array({ minLength: model.layout.totalSize, maxLength: model.layout.totalSize }),
      (raw) => {
        const weights = new Float32Array(raw.buffer);
        // Padding between tensors is not shared and comes back zero.
        const expected = new Float32Array(weights.length);
        for (const e of entries) {
          expected.set(weights.subarray(e.offset, e.offset + e.size), e.offset);
        }
        const back = modelFromBlobs(modelToBlobs({ ...model, weights }));
        assert.deepEqual(bits(back.weights), bits(expected));
        assert.deepEqual(back.config, model.config);
      },
    ),
    { numRuns: 20 },
  );
});

Deno.test("blobs at any byte offset decode the same", () => {
  const model = tinyModel(9);
  const rounded = { ...model, weights: decodeBf16(encodeBf16(model.weights)) };
  for (const m of [model, rounded]) {
    const shifted = modelToBlobs(m).map(([name, bytes, dtype]): BlobToShare => {
      const holder = new Uint8Array(bytes.length + 1);
      holder.set(bytes, 1);
      return [name, holder.subarray(1), dtype];
    });
    assert.deepEqual(bits(modelFromBlobs(shifted).weights), bits(m.weights));
  }
});

Deno.test("a tensor is shared as bf16 exactly when all its values are bf16, and comes back bit for bit", () => {
  const model = tinyModel(4);
  // Two tensors of random values (norm gains start at 1, which bf16 holds exactly).
  const [first, second] = model.layout.entries.filter((e) => e.init !== "ones");
  const weights = model.weights.slice();
  // First tensor rounded to bf16 (round-to-nearest-even), the second left f32.
  weights.set(
    decodeBf16(encodeBf16(weights.subarray(first.offset, first.offset + first.size))),
    first.offset,
  );
  assert.ok(isBf16Exact(weights.subarray(first.offset, first.offset + first.size)));
  assert.ok(!isBf16Exact(weights.subarray(second.offset, second.offset + second.size)));
  const blobs = modelToBlobs({ ...model, weights });
  const byName = new Map(blobs.map(([name, bytes, dtype]) => [name, { bytes, dtype }]));
  assert.equal(byName.get(CONFIG_BLOB)!.dtype, "raw");
  assert.equal(byName.get(first.name)!.dtype, "bf16");
  assert.equal(byName.get(first.name)!.bytes.length, first.size * 2);
  // The bf16 bytes are what the project's round-to-nearest-even conversion gives.
  const expected = encodeBf16(weights.subarray(first.offset, first.offset + first.size));
  assert.deepEqual(byName.get(first.name)!.bytes, new Uint8Array(expected.buffer));
  assert.equal(byName.get(second.name)!.dtype, "f32");
  assert.equal(byName.get(second.name)!.bytes.length, second.size * 4);
  assert.deepEqual(bits(modelFromBlobs(blobs).weights), bits(weights));
  // A value one ulp off a bf16 value keeps its tensor f32: nothing is ever rounded.
  const off = weights.slice();
  new Uint32Array(off.buffer)[first.offset + 3] ^= 1;
  const offBlobs = modelToBlobs({ ...model, weights: off });
  assert.equal(offBlobs.find(([n]) => n === first.name)![2], "f32");
  assert.deepEqual(bits(modelFromBlobs(offBlobs).weights), bits(off));
});

Deno.test("blobs encoded a few floats at a time are the same, even when a tensor turns f32 late", () => {
  const model = tinyModel(5);
  const weights = decodeBf16(encodeBf16(model.weights));
  const [first, second] = model.layout.entries.filter((e) => e.size > 7);
  // One value off bf16 in the first tensor's last chunk, and in the second's first.
  new Uint32Array(weights.buffer)[first.offset + first.size - 1] ^= 1;
  new Uint32Array(weights.buffer)[second.offset] ^= 1;
  const whole = modelToBlobs({ ...model, weights });
  const dtypes = new Map(whole.map(([name, , dtype]) => [name, dtype]));
  assert.equal(dtypes.get(first.name), "f32");
  assert.equal(dtypes.get(second.name), "f32");
  assert.ok([...dtypes.values()].includes("bf16"));
  for (const chunkFloats of [1, 3, 7, first.size]) {
    const done: number[] = [];
    const steps = modelToBlobSteps({ ...model, weights }, {
      chunkFloats,
      onProgress: (n) => done.push(n),
    });
    assert.deepEqual(runSteps(steps), whole, `chunks of ${chunkFloats} floats`);
    assert.equal(done.at(-1), 4 * model.layout.paramCount);
    assert.ok(done.every((n, i) => i === 0 || n > done[i - 1]), "progress only grows");
  }
});

Deno.test("blobs are config.json then tensors in layout order, copied", () => {
  const model = tinyModel(2);
  const blobs = modelToBlobs(model);
  assert.deepEqual(blobs.map(([n]) => n), [
    CONFIG_BLOB,
    ...model.layout.entries.map((e) => e.name),
  ]);
  const first = model.layout.entries[0];
  const before = blobs[1][1].slice();
  model.weights[first.offset] += 1;
  assert.deepEqual(blobs[1][1], before, "later training does not change a snapshot");
  assert.equal(blobs[1][1].length, first.size * 4);
  assert.throws(
    () => modelToBlobs({ ...model, weights: new Float32Array(3) }),
    /expected \d+ floats, found 3/,
  );
});

Deno.test("bad blob sets are refused naming the blob", () => {
  const model = tinyModel(3);
  const good = () => new Map(modelToBlobs(model).map((b) => [b[0], b]));
  const name = model.layout.entries.find((e) => e.init !== "ones")!.name;
  const cases: [string, (m: Map<string, BlobToShare>) => void, RegExp][] = [
    ["no config", (m) => m.delete(CONFIG_BLOB), /has no "config.json" blob/],
    [
      "bad config",
      (m) => m.set(CONFIG_BLOB, [CONFIG_BLOB, new TextEncoder().encode('{"hidden_size": "x"}')]),
      /"config.json" is not a valid config/,
    ],
    [
      "not json",
      (m) => m.set(CONFIG_BLOB, [CONFIG_BLOB, Uint8Array.of(0x7b)]),
      /not a valid config/,
    ],
    [
      "missing",
      (m) => m.delete(name),
      new RegExp(`has no tensor "${name.replaceAll(".", "\\.")}"`),
    ],
    [
      "short",
      (m) => m.set(name, [name, m.get(name)![1].subarray(4), "f32"]),
      /bytes, expected \d+ \(f32, shape \[/,
    ],
    [
      "f32 bytes called bf16",
      (m) => m.set(name, [name, m.get(name)![1], "bf16"]),
      /bytes, expected \d+ \(bf16, shape \[/,
    ],
    [
      "raw tensor",
      (m) => m.set(name, [name, m.get(name)![1], "raw"]),
      /is raw, expected f32 or bf16/,
    ],
    [
      "extra",
      (m) => m.set("lm_head.bias", ["lm_head.bias", new Uint8Array(4), "f32"]),
      /"lm_head.bias" is not a tensor/,
    ],
  ];
  for (const [what, spoil, message] of cases) {
    const map = good();
    spoil(map);
    const blobs = [...map.values()];
    assert.throws(() => modelFromBlobs(blobs), (e) => {
      assert.ok(e instanceof ModelBlobError, what);
      assert.match(e.message, message, what);
      return true;
    });
  }
});

Deno.test("a blob given twice is refused", () => {
  const blobs = modelToBlobs(tinyModel(3));
  assert.throws(
    () => modelFromBlobs([...blobs, blobs[1]]),
    (e) => e instanceof ModelBlobError && /is given twice/.test(e.message),
  );
});

Deno.test("tensorElements gives every tensor blob's element count from the config blob alone", () => {
  const blobs = modelToBlobs(tinyModel(3));
  const elements = tensorElements(blobs[0][1]);
  assert.deepEqual(
    [...elements],
    blobs.filter(([name]) => name !== CONFIG_BLOB).map(([name, bytes, dtype]) => [
      name,
      bytes.length / (dtype === "bf16" ? 2 : 4),
    ]),
  );
  assert.throws(
    () => tensorElements(new TextEncoder().encode("{}")),
    (e) => e instanceof ModelBlobError && /not a valid config/.test(e.message),
  );
});
