import assert from "node:assert/strict";
import fc from "fast-check";
import { getBase58Decoder } from "@solana/kit";
import {
  AuthorizedKeysError,
  decodeBase58,
  parseAuthorizedKeys,
  parsePublicKey,
} from "./authorized_keys.ts";
import { toHex } from "../../common/mod.ts";

const base58 = (bytes: Uint8Array) => getBase58Decoder().decode(bytes);

Deno.test("base58 keys decode to the bytes Solana's codec encoded, leading zeros included", () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.nat({ max: 3 }), (key, z) => {
      key.fill(0, 0, z);
      assert.deepEqual(decodeBase58(base58(key)), key);
      assert.deepEqual(parsePublicKey(base58(key)), key);
    }),
    { numRuns: 300 },
  );
  assert.equal(decodeBase58("0OIl"), null, "letters outside the alphabet");
});

Deno.test("a key is 64 hex digits or base58 of exactly 32 bytes", () => {
  const key = new Uint8Array(32).map((_, i) => i * 7);
  assert.deepEqual(parsePublicKey(toHex(key)), key);
  assert.deepEqual(parsePublicKey(toHex(key).toUpperCase()), key);
  assert.equal(parsePublicKey(toHex(key).slice(2)), null, "62 hex digits");
  assert.equal(parsePublicKey(base58(new Uint8Array(31).fill(9))), null, "31 bytes");
  assert.equal(parsePublicKey(base58(new Uint8Array(33).fill(9))), null, "33 bytes");
});

Deno.test("an authorized-keys file: keys in either spelling, comments and blank lines", () => {
  const a = new Uint8Array(32).fill(1);
  const b = new Uint8Array(32).fill(200);
  const text = [
    "# permissioned run",
    "",
    `${toHex(a)}   # alice, hex`,
    `  ${base58(b)}`,
    `${toHex(b)}`,
    "\t# end",
  ].join("\r\n");
  assert.deepEqual(parseAuthorizedKeys(text, "keys.txt"), new Set([toHex(a), toHex(b)]));
});

Deno.test("an authorized-keys file with a bad line or no key is refused naming the line", () => {
  const good = toHex(new Uint8Array(32).fill(3));
  assert.throws(
    () => parseAuthorizedKeys(`${good}\n# ok\nnot-a-key # oops\n`, "keys.txt"),
    (e: unknown) => {
      assert.ok(e instanceof AuthorizedKeysError);
      assert.equal(
        e.message,
        'keys.txt, line 3: "not-a-key" is not a public key ' +
          "(expected 64 hex digits or a base58 key of 32 bytes)",
      );
      return true;
    },
  );
  assert.throws(
    () => parseAuthorizedKeys("# nobody\n\n", "empty.txt"),
    /empty.txt lists no keys: nobody could join the run/,
  );
});
