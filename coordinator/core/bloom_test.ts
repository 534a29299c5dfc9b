import assert from "node:assert/strict";
import fc from "fast-check";
import {
  bloomAdd,
  bloomClear,
  bloomContains,
  bloomFalsePositiveRate,
  bloomParameters,
  bloomPositions,
  createBloom,
  fnv1a64,
  witnessBloomParameters,
} from "./bloom.ts";
import { sha256, u64le } from "./hash.ts";

const keys = (...k: bigint[]) => BigUint64Array.from(k);
const item = (n: number) => sha256(u64le(BigInt(n)));

Deno.test("FNV-1a-64 with the standard offset basis matches published vectors", () => {
  const basis = 0xcbf29ce484222325n;
  assert.equal(fnv1a64(basis, new Uint8Array(0)), 0xcbf29ce484222325n);
  assert.equal(fnv1a64(basis, new TextEncoder().encode("a")), 0xaf63dc4c8601ec8cn);
  assert.equal(fnv1a64(basis, new TextEncoder().encode("foobar")), 0x85944171f73967e8n);
});

Deno.test("bit positions equal the BigInt FNV reduced mod numBits", () => {
  fc.assert(
    fc.property(
      fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
      fc.uint8Array({ maxLength: 64 }),
      fc.integer({ min: 1, max: 1 << 20 }),
      (key, bytes, words) => {
        const bloom = createBloom(words * 64, keys(key));
        const expected = Number(fnv1a64(key, bytes) % BigInt(words * 64));
        assert.deepEqual(bloomPositions(bloom, bytes), [expected]);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("bits are stored LSB first: bit i in byte i >> 3 at bit i & 7", () => {
  const bloom = createBloom(64, keys(0xcbf29ce484222325n));
  // FNV-1a-64("a") = 0xaf63dc4c8601ec8c; 0x...8c mod 64 = 0x0c = 12 → byte 1, bit 4.
  bloomAdd(bloom, new TextEncoder().encode("a"));
  assert.deepEqual(Array.from(bloom.bits), [0, 16, 0, 0, 0, 0, 0, 0]);
});

Deno.test("parameters: 256 clients at 1% → 2496 bits, 7 keys", () => {
  // m = ceil(256 * -ln(0.01) / ln(2)^2) = ceil(2453.8) = 2454 → next multiple of 64 = 2496.
  // k = round(2496 / 256 * ln 2) = round(6.758) = 7.
  assert.deepEqual(witnessBloomParameters(256), { numBits: 2496, numKeys: 7 });
  // 1 item at 1%: ceil(9.585) = 10 → 64 bits; k = round(64 * 0.693) = 44 → capped at 32.
  assert.deepEqual(bloomParameters(1, 0.01), { numBits: 64, numKeys: 32 });
  assert.equal(bloomParameters(1000, 0.01).numBits % 64, 0);
  assert.throws(() => bloomParameters(0, 0.01), RangeError);
  assert.throws(() => bloomParameters(10, 0), RangeError);
  assert.throws(() => bloomParameters(10, 1), RangeError);
  assert.throws(() => bloomParameters(1e9, 0.01), /more than/);
});

Deno.test("add, contains and clear", () => {
  const bloom = createBloom(2496, keys(1n, 2n, 3n, 4n, 5n, 6n, 7n));
  assert.ok(!bloomContains(bloom, item(1)));
  bloomAdd(bloom, item(1));
  bloomAdd(bloom, item(2));
  assert.ok(bloomContains(bloom, item(1)));
  assert.ok(bloomContains(bloom, item(2)));
  assert.ok(!bloomContains(bloom, item(3)));
  bloomClear(bloom);
  assert.ok(!bloomContains(bloom, item(1)));
  assert.deepEqual(Array.from(bloom.keys), [1n, 2n, 3n, 4n, 5n, 6n, 7n]);
});

Deno.test("createBloom validates size and keys and copies the keys", () => {
  assert.throws(() => createBloom(100, keys(1n)), /multiple of 64/);
  assert.throws(() => createBloom(0, keys(1n)), RangeError);
  assert.throws(() => createBloom(64, keys()), /keys/);
  const k = keys(1n);
  const bloom = createBloom(64, k);
  k[0] = 9n;
  assert.equal(bloom.keys[0], 1n);
  assert.equal(bloom.bits.length, 8);
});

Deno.test("no false negatives (property)", () => {
  fc.assert(
    fc.property(
      fc.array(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { minLength: 1, maxLength: 8 }),
      fc.array(fc.uint8Array({ minLength: 0, maxLength: 40 }), { maxLength: 50 }),
      fc.integer({ min: 1, max: 64 }),
      (ks, items, words) => {
        const bloom = createBloom(words * 64, BigUint64Array.from(ks));
        for (const x of items) bloomAdd(bloom, x);
        for (const x of items) assert.ok(bloomContains(bloom, x));
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("measured false-positive rate at the cap is near 1%", () => {
  const maxClients = 256;
  const { numBits, numKeys } = witnessBloomParameters(maxClients);
  // Fixed, arbitrary keys (the caller picks them at random in production).
  const k = BigUint64Array.from({ length: numKeys }, (_, i) => 0x9e3779b97f4a7c15n * BigInt(i + 1));
  const bloom = createBloom(numBits, k);
  for (let i = 0; i < maxClients; i++) bloomAdd(bloom, item(i));
  const trials = 40_000;
  let hits = 0;
  for (let i = 0; i < trials; i++) if (bloomContains(bloom, item(1_000_000 + i))) hits++;
  const rate = hits / trials;
  const expected = bloomFalsePositiveRate(numBits, numKeys, maxClients);
  assert.ok(expected < 0.01, `theoretical rate ${expected} must be under 1%`);
  // 40k trials at p ≈ 0.0093: standard deviation ≈ 0.0005, so 0.005..0.015 is a wide margin.
  assert.ok(rate > 0.005 && rate < 0.015, `measured false-positive rate ${rate}`);
});
