/**
 * Helpers for this folder's tests: deterministic keys and polling for network conditions.
 * Not part of the public surface.
 *
 * @module
 */
import { publicKeyOf } from "./identity.ts";

/** A deterministic 32-byte secret key for test participant `n`. */
export function testSecret(n: number): Uint8Array {
  return new Uint8Array(32).map((_, i) => (n * 31 + i * 7 + 1) & 0xff);
}

/** The public key of `testSecret(n)`. */
export function testPublic(n: number): Uint8Array {
  return publicKeyOf(testSecret(n));
}

/** Polls `cond` every 10 ms until it holds; throws naming `what` after `ms`. */
export async function waitFor(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
