import assert from "node:assert/strict";
import { generateKeyPairSigner, getBase58Decoder, getBase58Encoder } from "@solana/kit";
import { Ledger, loadProgramBytes } from "./ledger.ts";
import { RPC_ERRORS, RpcError, RpcMethods, sliceData } from "./rpc.ts";
import { decodeBase64 } from "./base64.ts";
import { putAccount } from "../testing/litesvm_accounts.ts";

Deno.test("sliceData: Solana's clipping (offset past the end: empty; length past it: the rest)", () => {
  const data = Uint8Array.of(1, 2, 3, 4, 5);
  assert.deepEqual([...sliceData(data, null)], [1, 2, 3, 4, 5]);
  assert.deepEqual([...sliceData(data, { offset: 1, length: 2 })], [2, 3]);
  assert.deepEqual([...sliceData(data, { offset: 3, length: 10 })], [4, 5]);
  assert.deepEqual([...sliceData(data, { offset: 5, length: 1 })], []);
  assert.deepEqual([...sliceData(data, { offset: 9, length: 1 })], []);
  assert.deepEqual([...sliceData(data, { offset: 0, length: 0 })], []);
});

Deno.test("dataSlice: the filters see the whole account, the answer holds the slice", async () => {
  const ledger = await Ledger.create({ programBytes: await loadProgramBytes() });
  const rpc = new RpcMethods(ledger);
  const owner = (await generateKeyPairSigner()).address;
  const at = (await generateKeyPairSigner()).address;
  const data = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
  putAccount(ledger.svm, at, owner, data);
  const base64 = (d: unknown) => [...decodeBase64((d as [string, string])[0])];
  type Listed = { pubkey: string; account: { data: [string, string]; space: number } }[];

  const listed = rpc.call("getProgramAccounts", [owner, {
    encoding: "base64",
    // Byte 250 lies outside the slice: the filter still sees it.
    filters: [{ dataSize: 300 }, {
      memcmp: { offset: 250, bytes: getBase58Decoder().decode(Uint8Array.of(250)) },
    }],
    dataSlice: { offset: 10, length: 4 },
  }]) as Listed;
  assert.equal(listed.length, 1);
  assert.deepEqual(base64(listed[0].account.data), [10, 11, 12, 13]);
  assert.equal(listed[0].account.space, 300, "space stays the account's size");
  const other = rpc.call("getProgramAccounts", [owner, {
    encoding: "base64",
    filters: [{ memcmp: { offset: 250, bytes: getBase58Decoder().decode(Uint8Array.of(251)) } }],
    dataSlice: { offset: 10, length: 4 },
  }]) as Listed;
  assert.equal(other.length, 0);

  const multiple = rpc.call("getMultipleAccounts", [[at, owner], {
    encoding: "base64",
    dataSlice: { offset: 298, length: 10 },
  }]) as { value: ({ data: [string, string] } | null)[] };
  assert.deepEqual(base64(multiple.value[0]!.data), [42, 43]);
  assert.equal(multiple.value[1], null);

  const past = rpc.call("getAccountInfo", [at, {
    encoding: "base64",
    dataSlice: { offset: 1000, length: 10 },
  }]) as { value: { data: [string, string] } };
  assert.deepEqual(base64(past.value.data), []);

  // base58's 128-byte limit applies to what is returned: a short slice of a long account is fine.
  const b58 = rpc.call("getAccountInfo", [at, { dataSlice: { offset: 0, length: 3 } }]) as {
    value: { data: [string, string] };
  };
  assert.deepEqual([...getBase58Encoder().encode(b58.value.data[0])], [0, 1, 2]);
  assert.throws(() => rpc.call("getAccountInfo", [at, {}]), /less than 128 bytes/);

  const refused = (cfg: Record<string, unknown>, code: number, message: RegExp) =>
    assert.throws(
      () => rpc.call("getProgramAccounts", [owner, cfg]),
      (e) => e instanceof RpcError && e.code === code && message.test(e.message),
    );
  refused(
    { encoding: "jsonParsed", dataSlice: { offset: 0, length: 4 } },
    RPC_ERRORS.InvalidRequest,
    /Sliced account data can only be encoded using binary \(base 58\) or base64/,
  );
  refused(
    { encoding: "base64", dataSlice: { offset: -1, length: 4 } },
    RPC_ERRORS.InvalidParams,
    /dataSlice needs a non-negative integer offset and length/,
  );
  refused({ encoding: "base64", dataSlice: { offset: 0 } }, RPC_ERRORS.InvalidParams, /dataSlice/);
});
