import assert from "node:assert/strict";
import { ed25519 } from "@noble/curves/ed25519.js";
import {
  isAcceptablePublicKey,
  isSmallOrderEncoding,
  pointProblem,
  verifySignature,
} from "./ed25519_strict.ts";
import {
  forgeWithSmallOrderKey,
  IDENTITY_POINT,
  signWithSmallOrderR,
  WEAK_POINTS,
  ZERO_KEY,
} from "./testing/weak_keys.ts";

const secret = new Uint8Array(32).fill(3);
const publicKey = ed25519.getPublicKey(secret);
const message = new TextEncoder().encode("psyche-ts strict verification");

Deno.test("an honest signature verifies; a changed message, key or signature does not", () => {
  const signature = ed25519.sign(message, secret);
  assert.equal(verifySignature(signature, message, publicKey), true);
  assert.equal(isAcceptablePublicKey(publicKey), true);
  assert.equal(verifySignature(signature, message.subarray(1), publicKey), false);
  assert.equal(
    verifySignature(signature, message, ed25519.getPublicKey(secret.map(() => 4))),
    false,
  );
  const flipped = signature.slice();
  flipped[40] ^= 1;
  assert.equal(verifySignature(flipped, message, publicKey), false);
  assert.equal(verifySignature(signature.subarray(0, 63), message, publicKey), false);
  assert.equal(verifySignature(signature, message, publicKey.subarray(1)), false);
});

Deno.test("the table's forgeries are real: ZIP-215 verification (noble's default) accepts them", () => {
  for (const weak of WEAK_POINTS) {
    assert.ok(
      ed25519.verify(forgeWithSmallOrderKey(), message, weak.bytes),
      `${weak.name} as public key`,
    );
    assert.ok(
      ed25519.verify(signWithSmallOrderR(secret, message, weak.bytes), message, publicKey),
      `${weak.name} as R`,
    );
  }
});

Deno.test("every small-order encoding is refused as a public key, whatever R", () => {
  for (const weak of WEAK_POINTS) {
    for (const r of [IDENTITY_POINT, ZERO_KEY, weak.bytes]) {
      assert.equal(
        verifySignature(forgeWithSmallOrderKey(r), message, weak.bytes),
        false,
        `${weak.name}`,
      );
    }
    assert.equal(isAcceptablePublicKey(weak.bytes), false, weak.name);
    assert.equal(
      pointProblem(weak.bytes),
      weak.canonical ? "is a small-order point" : "is not a canonical encoding of a curve point",
      weak.name,
    );
  }
});

Deno.test("every small-order encoding is refused as R, under an honest key", () => {
  for (const weak of WEAK_POINTS) {
    const signature = signWithSmallOrderR(secret, message, weak.bytes);
    assert.equal(verifySignature(signature, message, publicKey), false, weak.name);
  }
});

Deno.test("S at or above the group order and points off the curve are refused", () => {
  const signature = ed25519.sign(message, secret);
  const L = 2n ** 252n + 27742317777372353535851937790883648493n;
  let s = 0n;
  for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(signature[i]);
  const malleable = signature.slice();
  let high = s + L;
  for (let i = 32; i < 64; i++, high >>= 8n) malleable[i] = Number(high & 0xffn);
  assert.equal(ed25519.verify(malleable, message, publicKey, { zip215: true }), false);
  assert.equal(verifySignature(malleable, message, publicKey), false);
  // y = 2 has no x on the curve.
  const offCurve = new Uint8Array(32);
  offCurve[0] = 2;
  assert.equal(pointProblem(offCurve), "is not a canonical encoding of a curve point");
  assert.equal(pointProblem(new Uint8Array(31)), "is 31 bytes, expected 32");
});

Deno.test("isSmallOrderEncoding finds all fourteen small-order encodings and nothing else", () => {
  for (const weak of WEAK_POINTS) assert.equal(isSmallOrderEncoding(weak.bytes), true, weak.name);
  assert.equal(isSmallOrderEncoding(publicKey), false);
  const offCurve = new Uint8Array(32);
  offCurve[0] = 2;
  assert.equal(isSmallOrderEncoding(offCurve), false);
  assert.equal(isSmallOrderEncoding(new Uint8Array(31)), false);
});
