import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ed25519 } from "@noble/curves/ed25519.js";
import fc from "fast-check";
import { commit, COMMITMENT_DOMAIN, commitmentHash, verifyCommitment } from "./commitment.ts";
import {
  forgeWithSmallOrderKey,
  signWithSmallOrderR,
  WEAK_POINTS,
} from "../net/testing/weak_keys.ts";

const secret = new Uint8Array(32).fill(7);
const publicKey = ed25519.getPublicKey(secret);
const what = { step: 12, batch: { start: 256, end: 511 }, payload: new Uint8Array([1, 2, 3, 4]) };

Deno.test("the hash covers domain, step, batch range and payload, big-endian", () => {
  const pre = new Uint8Array([
    ...COMMITMENT_DOMAIN,
    0,
    0,
    0,
    12,
    0,
    0,
    0,
    0,
    0,
    0,
    1,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    1,
    255,
    1,
    2,
    3,
    4,
  ]); // deno-fmt-ignore
  assert.deepEqual(commitmentHash(what), new Uint8Array(createHash("sha256").update(pre).digest()));
  assert.throws(() => commitmentHash({ ...what, step: 2 ** 32 }), /u32/);
});

Deno.test("a signed commitment verifies, and any change breaks it", () => {
  const c = commit(what, secret);
  assert.equal(c.signature.length, 64);
  assert.equal(verifyCommitment(c, publicKey, what), true);
  assert.equal(verifyCommitment(c, publicKey, { ...what, step: 13 }), false);
  assert.equal(verifyCommitment(c, publicKey, { ...what, batch: { start: 256, end: 512 } }), false);
  const other = ed25519.getPublicKey(new Uint8Array(32).fill(8));
  assert.equal(verifyCommitment(c, other, what), false);
  assert.equal(verifyCommitment(c, new Uint8Array(3), what), false);
  assert.equal(verifyCommitment({ ...c, signature: new Uint8Array(64) }, publicKey, what), false);
  fc.assert(
    fc.property(fc.nat(), fc.integer({ min: 1, max: 255 }), (pos, xor) => {
      const payload = what.payload.slice();
      payload[pos % payload.length] ^= xor;
      return !verifyCommitment(c, publicKey, { ...what, payload });
    }),
    { numRuns: 50 },
  );
});

Deno.test("commitments from small-order or non-canonical keys, or with such an R, never verify", () => {
  const honest = commit(what, secret);
  assert.equal(verifyCommitment(honest, publicKey, what), true);
  for (const weak of WEAK_POINTS) {
    const forged = { dataHash: honest.dataHash, signature: forgeWithSmallOrderKey() };
    assert.equal(verifyCommitment(forged, weak.bytes, what), false, `${weak.name} as key`);
    const badR = {
      dataHash: honest.dataHash,
      signature: signWithSmallOrderR(secret, honest.dataHash, weak.bytes),
    };
    assert.equal(verifyCommitment(badR, publicKey, what), false, `${weak.name} as R`);
  }
});
