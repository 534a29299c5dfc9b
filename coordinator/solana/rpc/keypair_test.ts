import assert from "node:assert/strict";
import { KeypairFileError, keypairJson, loadWallet, parseKeypairJson } from "./keypair.ts";
import { generateIdentity } from "../../../net/mod.ts";

Deno.test("a keypair file round-trips into a signer and the same identity", async () => {
  const id = generateIdentity();
  const path = await Deno.makeTempFile({ suffix: ".json" });
  try {
    await Deno.writeTextFile(path, keypairJson(id));
    const wallet = await loadWallet(path);
    assert.deepEqual(wallet.identity, id);
    const { getAddressEncoder } = await import("@solana/kit");
    assert.deepEqual(getAddressEncoder().encode(wallet.signer.address), id.publicKey);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("malformed keypair files are refused naming the file and the problem", async () => {
  const id = generateIdentity();
  const good = JSON.parse(keypairJson(id)) as number[];
  const cases: [string, RegExp][] = [
    ["{", /"k.json" is not JSON/],
    ["[1,2,3]", /64 byte values, found 3 numbers/],
    ['"abc"', /found string/],
    [JSON.stringify([...good.slice(0, 63), 256]), /entry 63 is 256, expected 0..255/],
    [
      JSON.stringify([...good.slice(0, 32), ...good.slice(32).map((b) => b ^ 1)]),
      /not the public key of the first 32/,
    ],
  ];
  for (const [text, message] of cases) {
    assert.throws(() => parseKeypairJson(text, "k.json"), (e) => {
      assert.ok(e instanceof KeypairFileError);
      assert.match(e.message, message);
      return true;
    });
  }
  await assert.rejects(loadWallet("/nonexistent/k.json"), /Cannot read keypair file/);
});
