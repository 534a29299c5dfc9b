import assert from "node:assert/strict";
import { measureTreasurerComputeUnits } from "../testing/treasurer_compute_units.ts";

Deno.test("treasurer compute units: every instruction fits the default budget with room", async () => {
  const units = await measureTreasurerComputeUnits({ runs: 3, clients: 3 });
  assert.deepEqual(Object.keys(units).sort(), [
    "ParticipantClaim",
    "ParticipantClaimSlot255",
    "ParticipantCreate",
    "TreasuryCreate",
  ]);
  // Measured (docs/benchmarks.md): treasury_create 8.4k plus 1.5k per extra bump its two PDA
  // searches try (two accounts created, one token account initialized), participant_create 3.7k
  // plus the same, a claim 2.0k plus ~25 units per registration its search passes (8.4k for the
  // last of 256).
  assert.ok(units.TreasuryCreate.max < 40_000, JSON.stringify(units.TreasuryCreate));
  assert.ok(units.ParticipantCreate.max < 25_000, JSON.stringify(units.ParticipantCreate));
  assert.ok(units.ParticipantClaim.max < 10_000, JSON.stringify(units.ParticipantClaim));
  assert.ok(units.ParticipantClaimSlot255 < 20_000, `${units.ParticipantClaimSlot255}`);
  assert.ok(units.ParticipantClaimSlot255 > units.ParticipantClaim.max, "a longer search costs");
});
