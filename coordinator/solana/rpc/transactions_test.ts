import assert from "node:assert/strict";
import { generateKeyPairSigner } from "@solana/kit";
import { SolanaRpcClient } from "./rpc_client.ts";
import {
  customErrorCode,
  transactionError,
  TransactionFailedError,
  TransactionSender,
  TransactionUnconfirmedError,
} from "./transactions.ts";
import { CoordinatorProgramError } from "../abi/mod.ts";
import { loadProgramBytes, startLocalnet } from "../localnet/mod.ts";
import { CoordinatorError } from "../../core/mod.ts";

Deno.test("program error codes become the typed errors, with the program's log line", () => {
  const err = (code: number) => ({ InstructionError: [0, { Custom: code }] });
  assert.equal(customErrorCode(err(6001)), 6001);
  assert.equal(customErrorCode("BlockhashNotFound"), null);
  const machine = transactionError(err(6001), [
    "Program log: tick in RoundTrain",
    "Program log: witness: not allowed in WaitingForMembers",
  ]);
  assert.ok(machine instanceof CoordinatorError);
  assert.equal(machine.code, "WrongRunState");
  assert.match(machine.message, /not allowed in WaitingForMembers/);
  const program = transactionError(err(6108), []);
  assert.ok(program instanceof CoordinatorProgramError);
  assert.equal(program.errorName, "NotAuthorizedToJoin");
  const other = transactionError("InsufficientFundsForFee", []);
  assert.ok(other instanceof TransactionFailedError);
  assert.match(other.message, /InsufficientFundsForFee/);
  assert.ok(transactionError(err(42), []) instanceof TransactionFailedError);
});

Deno.test("an unfunded payer is refused at once; an unreachable RPC after the retries", async () => {
  await using net = await startLocalnet({
    port: 0,
    wsPort: 0,
    programBytes: await loadProgramBytes(),
  });
  const payer = await generateKeyPairSigner();
  const memo = { programAddress: net.ledger.programId, data: new Uint8Array([4]) };
  const retries: number[] = [];
  const sender = new TransactionSender({
    rpcs: [new SolanaRpcClient({ url: net.url })],
    payer,
    onRetry: (r) => retries.push(r.attempt),
  });
  await assert.rejects(sender.send([memo]), TransactionFailedError);
  assert.equal(retries.length, 0, "a refusal is not retried");

  const down = new TransactionSender({
    rpcs: [
      new SolanaRpcClient({ url: "http://127.0.0.1:9", timeoutMs: 300 }),
      new SolanaRpcClient({ url: "http://127.0.0.1:10", timeoutMs: 300 }),
    ],
    payer,
    attemptsPerRpc: 2,
    backoffMs: 10,
    onRetry: (r) => retries.push(r.attempt),
  });
  await assert.rejects(
    down.send([memo]),
    (e) =>
      e instanceof TransactionUnconfirmedError && /127\.0\.0\.1:9.*127\.0\.0\.1:10/.test(e.message),
  );
  assert.deepEqual(retries, [1, 2, 1, 2], "two attempts on each RPC");
});
