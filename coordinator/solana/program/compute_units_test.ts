import assert from "node:assert/strict";
import { measureComputeUnits } from "../testing/compute_units.ts";
import { MAX_COMPUTE_UNITS, MAX_TRANSACTION_BYTES } from "../testing/svm.ts";

Deno.test("compute units: every instruction at 256 clients fits Solana's limits", async () => {
  const r = await measureComputeUnits(256);
  for (
    const key of [
      "join",
      "tickStartEpoch",
      "warmupWitness",
      "witnessMax",
      "tickNextRound",
      "healthCheckOne",
    ] as const
  ) {
    assert.ok(r[key] > 0 && r[key] < MAX_COMPUTE_UNITS, `${key}: ${r[key]} compute units`);
  }
  // The default per-instruction budget (200k) suffices for all of them.
  assert.ok(Math.max(r.join, r.tickStartEpoch, r.witnessMax, r.healthCheckOne) < 200_000);
  assert.ok(
    r.witnessTransactionBytes <= MAX_TRANSACTION_BYTES,
    `witness transaction is ${r.witnessTransactionBytes} bytes`,
  );
});
