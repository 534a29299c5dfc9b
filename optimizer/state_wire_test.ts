import assert from "node:assert/strict";
import { chunkLayout } from "./layout.ts";
import {
  decodeState,
  encodeState,
  stateBytes,
  StateDecodeError,
  stateDigest,
  stateEntries,
  zeroStateDigest,
} from "./state_wire.ts";
import type { DistroState } from "./optimizer.ts";

const layouts = [
  chunkLayout("w", [8, 16], { chunk: 8, topk: 2 }),
  chunkLayout("b", [16], { chunk: 8, topk: 3 }),
];
// 128 + 16 floats, with 64-float padding after the second parameter.
const shape = { size: 192, layouts };
const E = stateEntries(layouts);

function state(seed: number, own = true): DistroState {
  const delta = Float32Array.from({ length: shape.size }, (_, i) => Math.sin(seed + i));
  if (!own) return { kind: "distro", delta, own: null };
  const indices = new Uint32Array(E);
  let e = 0;
  for (const l of layouts) for (let i = 0; i < l.chunks * l.k; i++) indices[e++] = i % l.totalk;
  const values = Float32Array.from({ length: E }, (_, i) => i - 3.5);
  return { kind: "distro", delta, own: { indices, values } };
}

Deno.test("a state round trips, with and without an own result, at its exact size", () => {
  assert.equal(E, 2 * 2 + 2 * 3);
  const sizes = stateBytes(shape);
  assert.deepEqual(sizes, { withoutOwn: 16 + 4 * 192, withOwn: 16 + 4 * 192 + 8 * E });
  for (const s of [state(1), state(2, false)]) {
    const bytes = encodeState(s, shape);
    assert.equal(bytes.length, s.own === null ? sizes.withoutOwn : sizes.withOwn);
    assert.deepEqual(decodeState(bytes, shape), s);
  }
});

Deno.test("state digests: any changed byte changes them; the zero state's is memoized", () => {
  const a = encodeState(state(1), shape);
  const b = a.slice();
  b[100] ^= 1;
  assert.notDeepEqual(stateDigest(a), stateDigest(b));
  const zero = encodeState({ kind: "distro", delta: new Float32Array(192), own: null }, shape);
  assert.deepEqual(zeroStateDigest(shape), stateDigest(zero));
  assert.equal(zeroStateDigest(shape), zeroStateDigest({ ...shape }));
});

Deno.test("untrusted state bytes are refused with the spot named", () => {
  const good = encodeState(state(1), shape);
  const refused = (bytes: Uint8Array, where: RegExp) =>
    assert.throws(
      () => decodeState(bytes, shape),
      (e: unknown) => e instanceof StateDecodeError && where.test(e.message),
    );
  refused(good.subarray(0, good.length - 1), /at size: .* expected 784 or 864/);
  const magic = good.slice();
  magic[0] = 0;
  refused(magic, /at magic/);
  const version = good.slice();
  version[4] = 2;
  refused(version, /at version/);
  const flags = good.slice();
  flags[5] = 3;
  refused(flags, /at flags/);
  const noOwn = good.slice();
  noOwn[5] = 0;
  refused(noOwn, /do not match the own-result flag/);
  const sizes = good.slice();
  new DataView(sizes.buffer).setUint32(8, 191, true);
  refused(sizes, /at sizes: P 191/);
  const nan = good.slice();
  new DataView(nan.buffer).setFloat32(16 + 4 * 7, NaN, true);
  refused(nan, /at δ\[7\]: NaN is not finite/);
  const index = good.slice();
  // The first own index of "b" (chunk size 8): entries 4.. of E.
  new DataView(index.buffer).setUint32(16 + 4 * 192 + 4 * 4, 8, true);
  refused(index, /own index 4 \("b"\).*8 is not below the chunk size 8/);
  assert.throws(() => encodeState({ ...state(1), delta: new Float32Array(3) }, shape), RangeError);
});
