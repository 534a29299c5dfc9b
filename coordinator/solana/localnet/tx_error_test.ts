import assert from "node:assert/strict";
import { transactionErrorJson } from "./tx_error.ts";

Deno.test("litesvm errors become the RPC's JSON", () => {
  assert.equal(transactionErrorJson(7), "BlockhashNotFound");
  assert.equal(transactionErrorJson(6), "AlreadyProcessed");
  assert.equal(transactionErrorJson(999), "TransactionError(999)");
  const custom = { index: 1, err: () => ({ code: 6108 }) };
  assert.deepEqual(transactionErrorJson(custom), { InstructionError: [1, { Custom: 6108 }] });
  const fieldless = { index: 0, err: () => 7 };
  assert.deepEqual(transactionErrorJson(fieldless), {
    InstructionError: [0, "MissingRequiredSignature"],
  });
  const rent = { accountIndex: 2, toString: () => "InsufficientFundsForRent" };
  assert.deepEqual(transactionErrorJson(rent), {
    InsufficientFundsForRent: { account_index: 2 },
  });
});
