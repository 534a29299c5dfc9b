/**
 * The cost of strict verification (net/ed25519_strict.ts) against noble's default ZIP-215
 * `ed25519.verify`, which the project called before, on the same honest handshake signature;
 * and a whole handshake's verification step as the coordinator and data server run it.
 *
 * @module
 */
import { ed25519 } from "@noble/curves/ed25519.js";
import { verifySignature } from "./ed25519_strict.ts";
import { answerChallenge, verifyChallengeAnswer } from "./handshake.ts";

const secret = new Uint8Array(32).fill(11);
const nonce = new Uint8Array(32).fill(5);
const context = "psyche-ts coordinator v1";
const message = new Uint8Array(96).fill(3);
const publicKey = ed25519.getPublicKey(secret);
const signature = ed25519.sign(message, secret);
const answer = answerChallenge(secret, context, nonce);

Deno.bench("ed25519.verify (ZIP-215 default, the previous check)", {
  group: "verify",
  baseline: true,
}, () => {
  if (!ed25519.verify(signature, message, publicKey)) throw new Error("must verify");
});

Deno.bench(
  "verifySignature (strict: canonical, no small-order A or R)",
  { group: "verify" },
  () => {
    if (!verifySignature(signature, message, publicKey)) throw new Error("must verify");
  },
);

Deno.bench("verifyChallengeAnswer (strict, whole handshake check)", { group: "verify" }, () => {
  if (!verifyChallengeAnswer(answer.publicKey, answer.signature, context, nonce)) {
    throw new Error("must verify");
  }
});
