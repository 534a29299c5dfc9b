import assert from "node:assert/strict";
import { generateKeyPairSigner } from "@solana/kit";
import {
  defaultWsUrl,
  followAccount,
  RpcResponseError,
  RpcTransportError,
  SolanaRpcClient,
} from "./rpc_client.ts";
import { loadProgramBytes, startLocalnet } from "../localnet/mod.ts";

Deno.test("the WebSocket endpoint defaults to the RPC's port + 1", () => {
  assert.equal(defaultWsUrl("http://127.0.0.1:8899"), "ws://127.0.0.1:8900");
  assert.equal(defaultWsUrl("https://rpc.example.com"), "wss://rpc.example.com");
});

Deno.test("answers, error answers and no answer are told apart; u64s stay exact", async () => {
  await using net = await startLocalnet({
    port: 0,
    wsPort: 0,
    programBytes: await loadProgramBytes(),
  });
  const rpc = new SolanaRpcClient({ url: net.url, wsUrl: net.wsUrl });
  const who = (await generateKeyPairSigner()).address;
  net.ledger.airdrop(who, 7_000_000_000n);
  assert.equal(await rpc.balance(who), 7_000_000_000n);
  const info = await rpc.call<{ value: { rentEpoch: bigint } }>("getAccountInfo", [
    who,
    { encoding: "base64" },
  ]);
  assert.equal(info.value.rentEpoch, 18_446_744_073_709_551_615n, "u64 max parsed exactly");
  await assert.rejects(
    rpc.call("getBlock"),
    (e) => e instanceof RpcResponseError && e.code === -32601 && /getBlock/.test(e.message),
  );
  const dead = new SolanaRpcClient({ url: "http://127.0.0.1:9", timeoutMs: 1000 });
  await assert.rejects(dead.call("getSlot"), RpcTransportError);

  // The subscription reports the account's data on change and ends with the signal.
  const seen: number[] = [];
  const stop = new AbortController();
  let opened = 0;
  // The first node's WebSocket is down: the subscription moves on to the second.
  const down = new SolanaRpcClient({ url: "http://127.0.0.1:9", wsUrl: "ws://127.0.0.1:9" });
  const lost: string[] = [];
  const following = followAccount([down, rpc], who, (d) => seen.push(d.length), {
    signal: stop.signal,
    onOpen: () => opened++,
    onError: (url) => lost.push(url),
    retryMs: 10,
  });
  while (opened === 0) await new Promise((r) => setTimeout(r, 10));
  net.ledger.airdrop(who, 1_000_000_000n);
  while (seen.length === 0) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(seen, [0]);
  assert.deepEqual(lost, ["ws://127.0.0.1:9"]);
  stop.abort();
  await following;
});
