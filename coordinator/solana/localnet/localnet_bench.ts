/**
 * What one RPC round trip costs on the localnet: a coordinator transaction sent with
 * preflight and confirmed (sign, simulate, execute, status poll), and a read of the 220 KB
 * run account (base64 over HTTP, then decoded). Figures: docs/solana.md.
 */
import { startTestRun } from "../testing/localnet_run.ts";
import { testConfig, testModel } from "../../../tests/support/coordinator_fixtures.ts";
import { decodeCoordinatorAccount } from "../abi/mod.ts";

const run = await startTestRun({ runId: "bench", config: testConfig(), model: testModel() });
let n = 0;

Deno.bench("update transaction via RPC: sign, preflight, execute, confirm", async () => {
  n++;
  await run.operator.update(run.coordinator, {
    metadata: { name: `n${n}`, description: "", numParameters: n, vocabSize: 1 },
  });
});

Deno.bench("getAccountInfo of the 220 KB run account + decode", async () => {
  decodeCoordinatorAccount((await run.rpc.accountData(run.coordinator))!);
});

globalThis.addEventListener("unload", () => {
  run.close();
});
