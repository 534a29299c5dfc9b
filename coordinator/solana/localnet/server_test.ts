import assert from "node:assert/strict";
import {
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createSolanaRpcSubscriptions,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Instruction,
  isSolanaError,
  type KeyPairSigner,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  SOLANA_ERROR__INSTRUCTION_ERROR__CUSTOM,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
} from "@solana/kit";
import { Ledger } from "./ledger.ts";
import { startLocalnet } from "./server.ts";
import {
  ACCOUNT_SIZE,
  coordinatorInstruction,
  createRunInstructions,
  decodeCoordinatorAccount,
  decodeCoordinatorInstruction,
} from "../abi/mod.ts";
import { buildProgramOnce } from "../toolchain/mod.ts";

type Rpc = ReturnType<typeof createSolanaRpc>;

async function signed(rpc: Rpc, payer: KeyPairSigner, ixs: Instruction[]) {
  const { value } = await rpc.getLatestBlockhash().send();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(value, m),
    (m) => appendTransactionMessageInstructions(ixs, m),
  );
  return getBase64EncodedWireTransaction(await signTransactionMessageWithSigners(message));
}

async function until<T>(what: string, f: () => Promise<T | null>, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== null) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("an unmodified @solana/kit client creates a run, follows it and reads errors", async () => {
  const program = await buildProgramOnce();
  await using net = await startLocalnet({ port: 0, wsPort: 0, programBytes: program.bytes });
  const rpc = createSolanaRpc(net.url);
  assert.equal(await rpc.getHealth().send(), "ok");
  assert.match((await rpc.getVersion().send())["solana-core"], /^\d+\.\d+\.\d+$/);

  const authority = await generateKeyPairSigner();
  const airdrop = await rpc.requestAirdrop(authority.address, lamports(5_000_000_000n)).send();
  const [airdropStatus] = (await rpc.getSignatureStatuses([airdrop]).send()).value;
  assert.equal(airdropStatus?.err, null);
  assert.equal((await rpc.getBalance(authority.address).send()).value, 5_000_000_000n);

  const rent = await rpc.getMinimumBalanceForRentExemption(BigInt(ACCOUNT_SIZE)).send();
  assert.equal(rent, net.ledger.minimumBalanceForRentExemption(BigInt(ACCOUNT_SIZE)));
  const { coordinator, instructions } = await createRunInstructions({
    programId: net.ledger.programId,
    payer: authority,
    mainAuthority: authority,
    joinAuthority: authority.address,
    runId: "kit-run",
    permissionless: true,
    rentLamports: rent,
  });

  // Follow the account before it exists: the first notification is its creation.
  const subs = createSolanaRpcSubscriptions(net.wsUrl);
  const controller = new AbortController();
  const notifications = await subs.accountNotifications(coordinator, { encoding: "base64" })
    .subscribe({ abortSignal: controller.signal });
  const nonces: bigint[] = [];
  const following = (async () => {
    for await (const n of notifications) {
      const bytes = Uint8Array.from(atob(n.value.data[0]), (c) => c.charCodeAt(0));
      nonces.push(decodeCoordinatorAccount(bytes).nonce);
    }
  })().catch(() => {});

  const sig = await rpc.sendTransaction(await signed(rpc, authority, instructions), {
    encoding: "base64",
  }).send();
  const [status] = (await rpc.getSignatureStatuses([sig]).send()).value;
  assert.equal(status?.err, null);
  assert.equal(status?.confirmationStatus, "finalized");

  const info = await rpc.getAccountInfo(coordinator, { encoding: "base64" }).send();
  assert.ok(info.value !== null);
  assert.equal(info.value.owner, net.ledger.programId);
  const account = decodeCoordinatorAccount(
    Uint8Array.from(atob(info.value.data[0]), (c) => c.charCodeAt(0)),
  );
  assert.equal(account.state.runId, "kit-run");
  assert.equal(account.state.runState, "Uninitialized");

  const listed = await rpc.getProgramAccounts(net.ledger.programId, {
    encoding: "base64",
    filters: [{ dataSize: BigInt(ACCOUNT_SIZE) }],
  }).send();
  assert.deepEqual(listed.map((a) => a.pubkey), [coordinator]);

  // A tick on an Uninitialized run fails preflight with the program's Halted code.
  const tick = coordinatorInstruction({
    programId: net.ledger.programId,
    coordinator,
    signer: null,
    ix: { kind: "Tick" },
  });
  await assert.rejects(
    rpc.sendTransaction(await signed(rpc, authority, [tick]), { encoding: "base64" }).send(),
    (e) =>
      isSolanaError(e, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE) &&
      isSolanaError(e.cause, SOLANA_ERROR__INSTRUCTION_ERROR__CUSTOM) &&
      e.cause.context.code === 6000,
  );
  const sim = await rpc.simulateTransaction(await signed(rpc, authority, [tick]), {
    encoding: "base64",
  }).send();
  assert.deepEqual(sim.value.err, { InstructionError: [0n, { Custom: 6000n }] }); // kit: numbers as bigint

  // Metadata may change any time: the subscription sees a second, higher nonce.
  const update = coordinatorInstruction({
    programId: net.ledger.programId,
    coordinator,
    signer: authority,
    ix: {
      kind: "Update",
      metadata: { name: "n", description: "d", numParameters: 1, vocabSize: 2 },
    },
  });
  await rpc.sendTransaction(await signed(rpc, authority, [update]), { encoding: "base64" })
    .send();
  await until("two notifications", () => Promise.resolve(nonces.length >= 2 ? true : null));
  assert.deepEqual(nonces.slice(0, 2), [1n, 2n]);
  controller.abort();
  await following;
});

Deno.test("slots and the clock follow wall time; old blockhashes expire", async () => {
  let now = 1_700_000_000_000;
  const program = await buildProgramOnce();
  const ledger = await Ledger.create({ programBytes: program.bytes, now: () => now });
  await using net = await startLocalnet({ port: 0, wsPort: 0, ledger });
  const rpc = createSolanaRpc(net.url);
  const first = await rpc.getSlot().send();
  now += 4000;
  assert.equal(await rpc.getSlot().send(), first + 10n);
  assert.equal(ledger.svm.getClock().unixTimestamp, 1_700_000_004n);

  const payer = await generateKeyPairSigner();
  await rpc.requestAirdrop(payer.address, lamports(1_000_000_000n)).send();
  const old = await signed(rpc, payer, [{
    programAddress: net.ledger.programId,
    data: new Uint8Array([4]),
  }]);
  now += 151 * 400;
  const sim = await rpc.simulateTransaction(old, { encoding: "base64" }).send();
  assert.equal(sim.value.err, "BlockhashNotFound");
});

Deno.test("bad requests get JSON-RPC errors naming the problem", async () => {
  const program = await buildProgramOnce();
  await using net = await startLocalnet({ port: 0, wsPort: 0, programBytes: program.bytes });
  const post = async (body: string) =>
    await (await fetch(net.url, { method: "POST", body })).json();
  assert.equal((await post("{nope")).error.code, -32700);
  const unknown = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getBlock" }));
  assert.deepEqual(unknown.error, { code: -32601, message: "Method not found: getBlock" });
  const badKey = await post(
    JSON.stringify({ jsonrpc: "2.0", id: 2, method: "getBalance", params: ["xyz"] }),
  );
  assert.equal(badKey.error.code, -32602);
  assert.match(badKey.error.message, /"xyz"/);
  const badTx = await post(JSON.stringify({
    jsonrpc: "2.0",
    id: 3,
    method: "sendTransaction",
    params: ["AAAA", { encoding: "base64" }],
  }));
  assert.equal(badTx.error.code, -32602);
  assert.match(badTx.error.message, /cannot decode transaction \(3 bytes\)/);
  const batch = await post(JSON.stringify([
    { jsonrpc: "2.0", id: 1, method: "getHealth" },
    { jsonrpc: "2.0", id: 2, method: "getSlot" },
  ]));
  assert.equal(batch.length, 2);
  assert.equal(batch[0].result, "ok");
});

Deno.test("getSignaturesForAddress lists an account's transactions newest first; getTransaction returns them", async () => {
  const program = await buildProgramOnce();
  await using net = await startLocalnet({ port: 0, wsPort: 0, programBytes: program.bytes });
  const rpc = createSolanaRpc(net.url);
  const authority = await generateKeyPairSigner();
  await rpc.requestAirdrop(authority.address, lamports(5_000_000_000n)).send();
  const rent = await rpc.getMinimumBalanceForRentExemption(BigInt(ACCOUNT_SIZE)).send();
  const { coordinator, instructions } = await createRunInstructions({
    programId: net.ledger.programId,
    payer: authority,
    mainAuthority: authority,
    joinAuthority: authority.address,
    runId: "history",
    permissionless: true,
    rentLamports: rent,
  });
  const send = async (ixs: Instruction[]) =>
    await rpc.sendTransaction(await signed(rpc, authority, ixs), { encoding: "base64" }).send();
  const created = await send(instructions);
  const updates = [];
  for (const name of ["a", "b"]) {
    updates.push(
      await send([coordinatorInstruction({
        programId: net.ledger.programId,
        coordinator,
        signer: authority,
        ix: { kind: "Update", metadata: { name, description: "", numParameters: 1, vocabSize: 2 } },
      })]),
    );
  }
  const listed = await rpc.getSignaturesForAddress(coordinator).send();
  assert.deepEqual(listed.map((s) => s.signature), [updates[1], updates[0], created]);
  assert.ok(listed.every((s) => s.err === null && s.confirmationStatus === "finalized"));
  const page = await rpc.getSignaturesForAddress(coordinator, { before: updates[1], limit: 1 })
    .send();
  assert.deepEqual(page.map((s) => s.signature), [updates[0]]);

  const tx = await rpc.getTransaction(updates[1], {
    encoding: "base64",
    maxSupportedTransactionVersion: 0,
  }).send();
  assert.ok(tx !== null);
  assert.equal(tx.meta?.err, null);
  const bytes = Uint8Array.from(atob(tx.transaction[0]), (c) => c.charCodeAt(0));
  const message = getCompiledTransactionMessageDecoder().decode(
    getTransactionDecoder().decode(bytes).messageBytes,
  );
  assert.ok("instructions" in message);
  const decoded = decodeCoordinatorInstruction(message.instructions[0].data as Uint8Array);
  assert.equal(decoded.kind === "Update" && decoded.metadata?.name, "b");
  assert.equal(
    await rpc.getTransaction("1".repeat(64) as never, { encoding: "base64" }).send(),
    null,
  );
});
