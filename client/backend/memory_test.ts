import assert from "node:assert/strict";
import { testState, warmupReport } from "../../tests/support/coordinator_fixtures.ts";
import { generateIdentity } from "../../net/mod.ts";
import { MemoryCoordinator } from "./memory.ts";
import { NO_DIGEST } from "../../coordinator/core/mod.ts";
import { CoordinatorHost } from "../../coordinator/server/mod.ts";

Deno.test("the memory coordinator runs on the caller's clock", async () => {
  let now = 100;
  const host = new CoordinatorHost({
    state: testState({ initMinClients: 2, minClients: 2, warmupTime: 20 }, 100),
    withdrawOnDisconnect: true,
  });
  const coordinator = new MemoryCoordinator({ host, clock: () => now });
  const a = coordinator.connect(generateIdentity().publicKey, "test-run");
  const b = coordinator.connect(generateIdentity().publicKey, "test-run");
  await a.join();
  await b.join();
  assert.equal(a.latest()?.runState, "WaitingForMembers", "the extra second has not passed");
  now += 1;
  coordinator.tick();
  assert.equal(a.latest()?.runState, "Warmup");
  await a.sendWarmupWitness(warmupReport(a.latest()!, 0), NO_DIGEST);
  now += 19;
  coordinator.tick();
  assert.equal(b.latest()?.runState, "Warmup");
  now += 1;
  coordinator.tick();
  assert.equal(b.latest()?.runState, "RoundTrain");
  await a.close();
  assert.equal(host.state.epochState.clients[0].state, "Withdrawn");
  await b.close();
});

Deno.test("clients get copies: mutating a received state changes nothing", async () => {
  const host = new CoordinatorHost({ state: testState(), withdrawOnDisconnect: true });
  const coordinator = new MemoryCoordinator({ host, clock: () => 10 });
  const backend = coordinator.connect(generateIdentity().publicKey, "test-run");
  const state = backend.latest()!;
  state.runId = "tampered";
  state.config.totalSteps = 1;
  assert.equal(host.state.runId, "test-run");
  assert.notEqual(host.state.config.totalSteps, 1);
  await backend.close();
});
