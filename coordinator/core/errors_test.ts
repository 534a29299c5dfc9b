import assert from "node:assert/strict";
import {
  COORDINATOR_ERROR_CODES,
  CoordinatorError,
  coordinatorErrorCodeOf,
  coordinatorErrorNumber,
} from "./errors.ts";

Deno.test("error codes keep their wire numbers (the Solana program shares them)", () => {
  assert.deepEqual(COORDINATOR_ERROR_CODES, [
    "Halted",
    "WrongRunState",
    "InvalidWitness",
    "DuplicateWitness",
    "WitnessesFull",
    "InvalidHealthCheck",
    "InvalidCommitteeProof",
    "InvalidWithdraw",
    "InvalidCheckpoint",
    "CannotResume",
    "InvalidVerification",
  ]);
  for (const code of COORDINATOR_ERROR_CODES) {
    assert.equal(coordinatorErrorCodeOf(coordinatorErrorNumber(code)), code);
  }
  assert.equal(coordinatorErrorCodeOf(99), undefined);
  assert.equal(coordinatorErrorCodeOf(1.5), undefined);
});

Deno.test("CoordinatorError carries its code, number and message", () => {
  const e = new CoordinatorError("InvalidWithdraw", "no client 7");
  assert.ok(e instanceof Error);
  assert.equal(e.name, "CoordinatorError");
  assert.equal(e.code, "InvalidWithdraw");
  assert.equal(e.number, 7);
  assert.equal(e.message, "InvalidWithdraw: no client 7");
});
