import assert from "node:assert/strict";
import { ed25519 } from "@noble/curves/ed25519.js";
import {
  generateIdentity,
  IdentityError,
  identityFromHex,
  loadIdentity,
  publicKeyFromHex,
  publicKeyHex,
  saveIdentity,
} from "./identity.ts";
import { WEAK_POINTS } from "./testing/weak_keys.ts";
import { toHex } from "../common/mod.ts";

Deno.test("identity files round-trip 32 raw bytes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const id = generateIdentity();
    const path = `${dir}/id.key`;
    await saveIdentity(path, id);
    assert.equal((await Deno.readFile(path)).length, 32);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    const loaded = await loadIdentity(path);
    assert.deepEqual(loaded, id);
    assert.deepEqual(loaded.publicKey, ed25519.getPublicKey(id.secretKey));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadIdentity names a file of the wrong size or a missing file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/short.key`, new Uint8Array(31));
    await assert.rejects(
      loadIdentity(`${dir}/short.key`),
      /short.key" is 31 bytes, expected 32 raw bytes/,
    );
    await assert.rejects(loadIdentity(`${dir}/missing.key`), IdentityError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hex identities: whitespace ignored, bad digits refused as IdentityError", () => {
  const id = identityFromHex("07".repeat(32));
  assert.equal(publicKeyHex(id), toHex(ed25519.getPublicKey(new Uint8Array(32).fill(7))));
  assert.deepEqual(identityFromHex(` ${"07".repeat(32)}\n`), id);
  assert.throws(() => identityFromHex("07".repeat(31)), /must be 32 bytes, found 31/);
  assert.throws(
    () => identityFromHex("abc"),
    (e) => e instanceof IdentityError && /odd length 3/.test(e.message),
  );
  assert.throws(
    () => identityFromHex("zz" + "07".repeat(31)),
    (e) => e instanceof IdentityError && /non-hex character at offset 0: "zz"/.test(e.message),
  );
});

Deno.test("publicKeyFromHex takes an honest key and refuses bad hex, lengths and weak keys", () => {
  const key = ed25519.getPublicKey(new Uint8Array(32).fill(7));
  assert.deepEqual(publicKeyFromHex(toHex(key)), key);
  assert.throws(() => publicKeyFromHex("abc"), /odd length/);
  assert.throws(() => publicKeyFromHex("00".repeat(31)), /is 31 bytes, expected 32/);
  for (const weak of WEAK_POINTS) {
    assert.throws(
      () => publicKeyFromHex(toHex(weak.bytes)),
      (e) =>
        e instanceof IdentityError &&
        /small-order point|not a canonical encoding/.test(e.message),
      weak.name,
    );
  }
});
