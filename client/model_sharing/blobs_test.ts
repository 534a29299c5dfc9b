import assert from "node:assert/strict";
import fc from "fast-check";
import {
  CONFIG_BLOB,
  ModelBlobError,
  modelFromBlobs,
  modelToBlobs,
  tensorBlobSizes,
} from "./blobs.ts";
import { tinyModel } from "../../model/testing/fixtures.ts";

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
        const back = modelFromBlobs(new Map(modelToBlobs({ ...model, weights })));
        assert.deepEqual(bits(back.weights), bits(expected));
        assert.deepEqual(back.config, model.config);
      },
    ),
    { numRuns: 20 },
  );
});

Deno.test("blobs at any byte offset decode the same", () => {
  const model = tinyModel(9);
  const shifted = new Map(
    modelToBlobs(model).map(([name, bytes]) => {
      const holder = new Uint8Array(bytes.length + 1);
      holder.set(bytes, 1);
      return [name, holder.subarray(1)] as const;
    }),
  );
  assert.deepEqual(bits(modelFromBlobs(shifted).weights), bits(model.weights));
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
  const good = () => new Map(modelToBlobs(model));
  const name = model.layout.entries[1].name;
  const cases: [string, (m: Map<string, Uint8Array>) => void, RegExp][] = [
    ["no config", (m) => m.delete(CONFIG_BLOB), /has no "config.json" blob/],
    [
      "bad config",
      (m) => m.set(CONFIG_BLOB, new TextEncoder().encode('{"hidden_size": "x"}')),
      /"config.json" is not a valid config/,
    ],
    ["not json", (m) => m.set(CONFIG_BLOB, Uint8Array.of(0x7b)), /not a valid config/],
    [
      "missing",
      (m) => m.delete(name),
      new RegExp(`has no tensor "${name.replaceAll(".", "\\.")}"`),
    ],
    ["short", (m) => m.set(name, m.get(name)!.subarray(4)), /bytes, expected \d+ \(f32, shape \[/],
    ["extra", (m) => m.set("lm_head.bias", new Uint8Array(4)), /"lm_head.bias" is not a tensor/],
  ];
  for (const [what, spoil, message] of cases) {
    const blobs = good();
    spoil(blobs);
    assert.throws(() => modelFromBlobs(blobs), (e) => {
      assert.ok(e instanceof ModelBlobError, what);
      assert.match(e.message, message, what);
      return true;
    });
  }
});

Deno.test("tensorBlobSizes gives every tensor blob's exact size from the config blob alone", () => {
  const blobs = modelToBlobs(tinyModel(3));
  const sizes = tensorBlobSizes(blobs[0][1]);
  assert.deepEqual(
    [...sizes],
    blobs.filter(([name]) => name !== CONFIG_BLOB).map(([name, bytes]) => [name, bytes.length]),
  );
  assert.throws(
    () => tensorBlobSizes(new TextEncoder().encode("{}")),
    (e) => e instanceof ModelBlobError && /not a valid config/.test(e.message),
  );
});
