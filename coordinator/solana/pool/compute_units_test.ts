import assert from "node:assert/strict";
import { measurePoolComputeUnits } from "../testing/pool_compute_units.ts";

Deno.test("pool compute units: every instruction fits the default budget with room", async () => {
  const units = await measurePoolComputeUnits({ pools: 4, lenders: 3 });
  assert.deepEqual(Object.keys(units).sort(), [
    "LenderClaim",
    "LenderCreate",
    "LenderDeposit",
    "PoolClaimable",
    "PoolCreate",
    "PoolExtract",
    "PoolUpdate",
  ]);
  // Measured (docs/benchmarks.md): pool_create 12.8k plus 1.5k per extra bump its three PDA
  // searches try (three accounts created, two token accounts initialized), lender_create 3.7k
  // plus the same, a deposit 1.8k, a claim 3.1k (the 128-bit share and a signed transfer).
  assert.ok(units.PoolCreate.max < 40_000, JSON.stringify(units.PoolCreate));
  assert.ok(units.LenderCreate.max < 25_000, JSON.stringify(units.LenderCreate));
  for (const kind of ["LenderDeposit", "LenderClaim", "PoolExtract"] as const) {
    assert.ok(units[kind].max < 10_000, `${kind}: ${JSON.stringify(units[kind])}`);
  }
  for (const kind of ["PoolUpdate", "PoolClaimable"] as const) {
    assert.ok(units[kind].max < 2_000, `${kind}: ${JSON.stringify(units[kind])}`);
  }
});
