import assert from "node:assert/strict";
import { generateKeyPairSigner } from "@solana/kit";
import { loadProgramBytes } from "./ledger.ts";
import { Ledger } from "./ledger.ts";
import { RpcError } from "./rpc.ts";
import { Subscriptions } from "./subscriptions.ts";

async function setup() {
  const ledger = await Ledger.create({ programBytes: await loadProgramBytes() });
  const subs = new Subscriptions(ledger);
  const sent: { method: string; subscription: number; value: Record<string, unknown> }[] = [];
  const send = (text: string) => {
    const msg = JSON.parse(text);
    sent.push({
      method: msg.method,
      subscription: msg.params.subscription,
      value: msg.params.result.value,
    });
  };
  return { ledger, subs, sent, send };
}

Deno.test("accountSubscribe notifies on every change until unsubscribed", async () => {
  const { ledger, subs, sent, send } = await setup();
  const who = (await generateKeyPairSigner()).address;
  const id = subs.call("accountSubscribe", [who, { encoding: "base64" }], send) as number;
  const SOL = 1_000_000_000n;
  ledger.airdrop(who, SOL);
  ledger.airdrop((await generateKeyPairSigner()).address, SOL); // another account: no notification
  ledger.airdrop(who, SOL);
  assert.deepEqual(sent.map((s) => [s.method, s.subscription, s.value.lamports]), [
    ["accountNotification", id, 1e9],
    ["accountNotification", id, 2e9],
  ]);
  assert.equal(subs.call("accountUnsubscribe", [id], send), true);
  ledger.airdrop(who, SOL);
  assert.equal(sent.length, 2);
  assert.throws(() => subs.call("accountUnsubscribe", [id], send), RpcError);
  assert.throws(() => subs.call("accountSubscribe", ["not-a-key"], send), /"not-a-key"/);
  subs.close();
});

Deno.test("signatureSubscribe fires once, also for an already executed signature", async () => {
  const { ledger, subs, sent, send } = await setup();
  const done = ledger.airdrop((await generateKeyPairSigner()).address, 1_000_000_000n);
  subs.call("signatureSubscribe", [done.signature], send);
  await Promise.resolve();
  assert.deepEqual(sent.map((s) => [s.method, s.value.err]), [["signatureNotification", null]]);
  // Too little for a new account's rent: the status carries the runtime's error.
  const poor = ledger.airdrop((await generateKeyPairSigner()).address, 1n);
  subs.call("signatureSubscribe", [poor.signature], send);
  await Promise.resolve();
  assert.deepEqual(sent[1].value.err, { InsufficientFundsForRent: { account_index: 1 } });
  subs.call("signatureSubscribe", ["unknown"], send);
  subs.call("accountSubscribe", [(await generateKeyPairSigner()).address], send);
  assert.equal(subs.size, 2);
  subs.dropSocket(send);
  assert.equal(subs.size, 0, "a closed socket's subscriptions go with it");
  assert.throws(() => subs.call("slotSubscribe", [], send), /Method not found: slotSubscribe/);
  subs.close();
});
