/**
 * Wall-clock cost of coordinator transactions in litesvm (build, sign, execute, decode):
 * what the local RPC harness and the differential tests pay per instruction. Compute
 * units, the on-chain cost, are measured by compute_units.ts.
 */

import { CoordinatorSvm } from "../testing/svm.ts";
import { measureComputeUnits } from "../testing/compute_units.ts";
import { decodeCoordinatorAccount } from "../abi/mod.ts";

const svm = await CoordinatorSvm.create();
const { coordinator } = await measureComputeUnits(256, svm);
const bytes = svm.accountBytes(coordinator)!;

Deno.bench("litesvm: a tick transaction on a 256-client run (a 220,832-byte account)", async () => {
  await svm.send(coordinator, { kind: "Tick" });
});

Deno.bench("decode a 256-client coordinator account (4 x 32 witnesses)", () => {
  decodeCoordinatorAccount(bytes);
});
