/**
 * Earned points in litesvm: set_future_epoch_rates (who may send it, what it refuses, the
 * account byte-identical after every refusal), the rates an epoch takes when it enters Warmup,
 * and each epoch end's payout: an equal share of the earning rate for every client that finishes
 * Healthy, nothing for clients dropped by health checks or ejected, nothing on an epoch nobody
 * witnessed or one that ends in Warmup, points saturating at 2^64 − 1; and the slashed points:
 * the slashing rate for every client a health check dropped or verification ejected, none for
 * the Healthy ones or at a rate of 0, saturating too. Every instruction goes through DualRun, so
 * the reference model is held to the same numbers.
 */

import assert from "node:assert/strict";
import { AccountRole, type KeyPairSigner } from "@solana/kit";
import { testConfig, testModel } from "../../../tests/support/coordinator_fixtures.ts";
import { CoordinatorSvm } from "../testing/svm.ts";
import { DualRun, keyOf } from "../testing/dual_run.ts";
import {
  dropByHealthCheck,
  ejectThenEndEpoch,
  endCooldown,
  leaveWarmup,
  startEpoch,
  TEST_P2P as P2P,
  trainToCooldown,
} from "../testing/epochs.ts";
import { CLIENT_STATES, type CoordinatorConfig } from "../../core/mod.ts";
import {
  INSTRUCTION_KINDS,
  MAX_POINTS,
  OFFSETS,
  programErrorNumber,
  structLayout,
} from "../abi/mod.ts";

const svm = await CoordinatorSvm.create();
const TAG = INSTRUCTION_KINDS.indexOf("SetFutureEpochRates");

/** A resumed run of `n` clients (all of them needed to start an epoch), not yet joined. */
async function run(n: number, config: Partial<CoordinatorConfig> = {}) {
  const r = await DualRun.create({ svm });
  await r.expectOk({
    kind: "Update",
    config: testConfig({
      initMinClients: n,
      minClients: 2,
      epochTime: 20,
      warmupTime: 5,
      ...config,
    }),
    model: testModel(),
  }, r.mainAuthority);
  r.setTime(1);
  await r.expectOk({ kind: "SetPaused", paused: false }, r.mainAuthority);
  const clients: KeyPairSigner[] = [];
  for (let i = 0; i < n; i++) clients.push(await svm.newSigner());
  return { run: r, clients };
}

const earning = (rate: bigint) => ({
  kind: "SetFutureEpochRates" as const,
  earningRateTotalShared: rate,
});

/** Each client's earned points, from the program's account. */
function pointsOf(r: DualRun, clients: KeyPairSigner[]): bigint[] {
  const account = svm.coordinatorAccount(r.coordinator);
  return clients.map((c) => {
    const reg = account.registry.find((x) => x.signer.every((b, i) => b === keyOf(c)[i]));
    return reg?.earned ?? 0n;
  });
}

const slashing = (rate: bigint) => ({
  kind: "SetFutureEpochRates" as const,
  slashingRatePerClient: rate,
});

/** Each client's slashed points, from the program's account. */
function slashedOf(r: DualRun, clients: KeyPairSigner[]): bigint[] {
  const account = svm.coordinatorAccount(r.coordinator);
  return clients.map((c) => {
    const reg = account.registry.find((x) => x.signer.every((b, i) => b === keyOf(c)[i]));
    return reg?.slashed ?? 0n;
  });
}

/** Rewrites the program's account bytes (and nothing else): states no instruction reaches. */
function patchAccount(r: DualRun, patch: (bytes: Uint8Array, view: DataView) => void): void {
  const account = svm.svm.getAccount(r.coordinator);
  assert.ok(account.exists);
  const data = new Uint8Array(account.data);
  patch(data, new DataView(data.buffer));
  svm.svm.setAccount({ ...account, data });
}

/** Sends raw instruction data from `signer` (or from no signer account at all). */
function sendData(r: DualRun, data: Uint8Array, signer: KeyPairSigner | null, signs = true) {
  const accounts: unknown[] = [{ address: r.coordinator, role: AccountRole.WRITABLE }];
  if (signer !== null) {
    accounts.push(
      signs
        ? { address: signer.address, role: AccountRole.READONLY_SIGNER, signer }
        : { address: signer.address, role: AccountRole.READONLY },
    );
  }
  return svm.sendRaw([{ programAddress: svm.programId, accounts: accounts as never, data }]);
}

Deno.test("set_future_epoch_rates: main authority only; each rate optional; refusals change no byte", async () => {
  const { run: r, clients } = await run(2);
  const before = svm.accountBytes(r.coordinator)!;
  await r.expectError(earning(5n), clients[0], "NotMainAuthority");
  await r.expectError(earning(5n), r.joinAuthority, "NotMainAuthority");
  assert.deepEqual(
    svm.accountBytes(r.coordinator),
    before,
    "a stranger's rates changed the account",
  );
  const u64 = (x: bigint) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, x, true);
    return [...b];
  };
  const refusals: [number[], KeyPairSigner | null, boolean, string][] = [
    [[TAG, 1, ...u64(5n)], r.mainAuthority, false, "MissingSignature"],
    [[TAG, 1, ...u64(5n)], null, true, "NotEnoughAccounts"],
    [[TAG], r.mainAuthority, true, "InvalidInstruction"], // no flags
    [[TAG, 0], r.mainAuthority, true, "InvalidInstruction"], // no rate
    [[TAG, 4, ...u64(5n)], r.mainAuthority, true, "InvalidInstruction"], // unknown flag
    [[TAG, 1, ...u64(5n).slice(0, 7)], r.mainAuthority, true, "InvalidInstruction"], // cut
    [[TAG, 3, ...u64(5n)], r.mainAuthority, true, "InvalidInstruction"], // one rate of two
    [[TAG, 1, ...u64(5n), 0], r.mainAuthority, true, "InvalidInstruction"], // trailing byte
  ];
  for (const [data, signer, signs, name] of refusals) {
    const res = await sendData(r, Uint8Array.from(data), signer, signs);
    assert.equal(res.code, programErrorNumber(name as never), `${data}: ${res.error}`);
    assert.deepEqual(svm.accountBytes(r.coordinator), before, `${data} changed the account`);
  }
  r.check();
  const rates = () => svm.coordinatorAccount(r.coordinator).futureEpochRates;
  await r.expectOk(earning(1000n), r.mainAuthority);
  assert.deepEqual(rates(), { earningRateTotalShared: 1000n, slashingRatePerClient: 0n });
  await r.expectOk({ kind: "SetFutureEpochRates", slashingRatePerClient: 3n }, r.mainAuthority);
  assert.deepEqual(rates(), { earningRateTotalShared: 1000n, slashingRatePerClient: 3n });
  await r.expectOk({
    kind: "SetFutureEpochRates",
    earningRateTotalShared: MAX_POINTS,
    slashingRatePerClient: 0n,
  }, r.mainAuthority);
  assert.deepEqual(rates(), { earningRateTotalShared: MAX_POINTS, slashingRatePerClient: 0n });
  // Nothing pays until an epoch starts with the rates: the current ones are still zero.
  assert.deepEqual(svm.coordinatorAccount(r.coordinator).currentEpochRates, {
    earningRateTotalShared: 0n,
    slashingRatePerClient: 0n,
  });
  assert.equal(svm.coordinatorAccount(r.coordinator).nonce, r.model!.nonce);
});

Deno.test("a full epoch: each of the clients that finish Healthy gets exactly its share", async () => {
  const { run: r, clients } = await run(3, { epochTime: 20 });
  await r.expectOk(earning(1000n), r.mainAuthority);
  let t = await startEpoch(r, clients);
  await leaveWarmup(r, clients);
  t = await trainToCooldown(r, clients, t);
  assert.deepEqual(pointsOf(r, clients), [0n, 0n, 0n], "nothing is paid before the epoch ends");
  await endCooldown(r, t);
  assert.equal(r.model!.state.progress.epoch, 1);
  // 1000 / 3 = 333 each; the remaining point is not paid.
  assert.deepEqual(pointsOf(r, clients), [333n, 333n, 333n]);
  // A second epoch adds to what they hold.
  t = await startEpoch(r, clients);
  await leaveWarmup(r, clients);
  await endCooldown(r, await trainToCooldown(r, clients, t));
  assert.deepEqual(pointsOf(r, clients), [666n, 666n, 666n]);
});

Deno.test("a client dropped by a health check earns nothing for the epoch", async () => {
  const { run: r, clients } = await run(3);
  await r.expectOk(earning(1001n), r.mainAuthority);
  let t = await startEpoch(r, clients);
  await leaveWarmup(r, clients);
  const lazy = clients[2];
  const dropped = await dropByHealthCheck(r, clients, lazy, clients[0], t);
  t = await trainToCooldown(r, clients, dropped.t, dropped.seen);
  await endCooldown(r, t);
  // Two finishers share 1001: 500 each, the odd point unpaid; the dropped client gets nothing.
  assert.deepEqual(pointsOf(r, clients), [500n, 500n, 0n]);
});

Deno.test("rates set mid-epoch apply from the next epoch's Warmup", async () => {
  const { run: r, clients } = await run(2);
  await r.expectOk(earning(100n), r.mainAuthority);
  let t = await startEpoch(r, clients);
  const current = () => svm.coordinatorAccount(r.coordinator).currentEpochRates;
  assert.equal(current().earningRateTotalShared, 100n, "Warmup took the future rates");
  await r.expectOk(earning(10_000n), r.mainAuthority);
  await leaveWarmup(r, clients);
  await r.expectOk(earning(40n), r.mainAuthority); // the last one before the epoch ends counts
  t = await trainToCooldown(r, clients, t);
  await endCooldown(r, t);
  assert.deepEqual(pointsOf(r, clients), [50n, 50n], "epoch 0 paid its own rate, 100");
  assert.equal(current().earningRateTotalShared, 100n, "unchanged until the next Warmup");
  t = await startEpoch(r, clients);
  assert.equal(current().earningRateTotalShared, 40n);
  await leaveWarmup(r, clients);
  await endCooldown(r, await trainToCooldown(r, clients, t));
  assert.deepEqual(pointsOf(r, clients), [70n, 70n]);
});

Deno.test("an epoch nobody witnessed pays nobody (everyone is withdrawn)", async () => {
  const { run: r, clients } = await run(2);
  await r.expectOk(earning(100n), r.mainAuthority);
  let t = await startEpoch(r, clients);
  await leaveWarmup(r, clients);
  r.setTime(t += r.model!.state.config.maxRoundTrainTime);
  await r.expectOk({ kind: "Tick" }, null);
  r.setTime(t += r.model!.state.config.roundWitnessTime);
  await r.expectOk({ kind: "Tick" }, null);
  assert.equal(r.model!.state.runState, "Cooldown");
  await endCooldown(r, t);
  assert.deepEqual(pointsOf(r, clients), [0n, 0n]);
});

Deno.test("an epoch that ends in Warmup (EpochEnd false) pays nothing", async () => {
  // No instruction lets a client leave during Warmup (there is no withdraw), so the clients are
  // marked Withdrawn in the account and in the model alike.
  const { run: r, clients } = await run(3, { minClients: 2 });
  await r.expectOk(earning(90n), r.mainAuthority);
  const t = await startEpoch(r, clients);
  const client = structLayout("client_t");
  patchAccount(r, (bytes) => {
    for (const i of [1, 2]) {
      const at = OFFSETS.epochState + structLayout("epoch_state_t").offsets.clients +
        i * client.size + client.offsets.state;
      bytes[at] = CLIENT_STATES.indexOf("Withdrawn");
    }
  });
  for (const i of [1, 2]) r.model!.state.epochState.clients[i].state = "Withdrawn";
  r.check();
  r.setTime(t + 1);
  await r.expectOk({ kind: "Tick" }, null);
  assert.equal(r.model!.state.runState, "WaitingForMembers");
  assert.equal(r.model!.state.progress.epoch, 0, "the epoch did not count");
  assert.deepEqual(pointsOf(r, clients), [0n, 0n, 0n], "the Healthy one is not paid either");
});

Deno.test("points saturate at 2^64 - 1 and never wrap", async () => {
  const { run: r, clients } = await run(2);
  await r.expectOk(earning(MAX_POINTS), r.mainAuthority);
  let t = await startEpoch(r, clients);
  await leaveWarmup(r, clients);
  await endCooldown(r, await trainToCooldown(r, clients, t));
  const half = MAX_POINTS / 2n;
  assert.deepEqual(pointsOf(r, clients), [half, half]);
  t = await startEpoch(r, clients);
  await leaveWarmup(r, clients);
  await endCooldown(r, await trainToCooldown(r, clients, t));
  assert.deepEqual(pointsOf(r, clients), [2n * half, 2n * half], "2^64 - 2, still exact");
  t = await startEpoch(r, clients);
  await leaveWarmup(r, clients);
  await endCooldown(r, await trainToCooldown(r, clients, t));
  assert.deepEqual(pointsOf(r, clients), [MAX_POINTS, MAX_POINTS]);
});

Deno.test("a full registry reuses only a stale registration without earned or slashed points", async () => {
  const { run: r, clients } = await run(2);
  await r.expectOk(earning(10n), r.mainAuthority);
  let t = await startEpoch(r, clients);
  await leaveWarmup(r, clients);
  t = await trainToCooldown(r, clients, t);
  await endCooldown(r, t);
  assert.deepEqual(pointsOf(r, clients), [5n, 5n]);
  // Fill the registry's other 254 slots with stale registrations (joined for epoch 0), the
  // first of which joined for the epoch after the one that just ended: not stale; the second
  // holds slashed points: not reusable either.
  const nextActive = r.model!.nextActive;
  const registration = structLayout("registration_t");
  patchAccount(r, (_bytes, view) => {
    view.setUint16(OFFSETS.registryLen, 256, true);
    const active = OFFSETS.registry + 2 * registration.size + registration.offsets.active;
    view.setBigUint64(active, nextActive, true);
    view.setBigUint64(OFFSETS.slashed + 3 * 8, 1n, true);
  });
  const late = await svm.newSigner();
  // The model is told of the 254 zero registrations the patch made visible.
  for (let i = 2; i < 256; i++) {
    r.model!.registry.push({
      signer: new Uint8Array(32),
      p2pIdentity: new Uint8Array(32),
      active: i === 2 ? nextActive : 0n,
      earned: 0n,
      deposit: 0n,
      slashed: i === 3 ? 1n : 0n,
    });
  }
  r.check();
  await r.expectOk({ kind: "JoinRun", p2pIdentity: P2P }, late);
  const account = svm.coordinatorAccount(r.coordinator);
  assert.deepEqual(account.registry.slice(0, 2).map((x) => x.earned), [5n, 5n], "points stay");
  assert.equal(account.registry[2].active, nextActive, "a pending registration stays");
  assert.equal(account.registry[3].slashed, 1n, "slashed points stay");
  assert.deepEqual(account.registry[4].signer, keyOf(late), "the first stale one is reused");
  assert.equal(account.registry[4].earned, 0n);
});

/**
 * Three clients through one epoch in which a health check drops the third; ends it. `started`
 * runs once the epoch started.
 */
async function epochDroppingOne(
  r: DualRun,
  clients: KeyPairSigner[],
  started: () => void = () => {},
): Promise<void> {
  let t = await startEpoch(r, clients);
  started();
  const before = slashedOf(r, clients);
  await leaveWarmup(r, clients);
  const dropped = await dropByHealthCheck(r, clients, clients[2], clients[0], t);
  t = await trainToCooldown(r, clients, dropped.t, dropped.seen);
  assert.deepEqual(slashedOf(r, clients), before, "nothing is slashed before the end");
  await endCooldown(r, t);
}

Deno.test("a client dropped by a health check gets exactly the slashing rate; Healthy ones none", async () => {
  const { run: r, clients } = await run(3);
  // No earning rate and no deposit: the epoch end still walks the registry to slash.
  await r.expectOk(slashing(7n), r.mainAuthority);
  let t = await startEpoch(r, clients);
  assert.equal(svm.coordinatorAccount(r.coordinator).currentEpochRates.slashingRatePerClient, 7n);
  // A rate set during the epoch applies from the next one, as the earning rate does.
  await r.expectOk(slashing(1000n), r.mainAuthority);
  await leaveWarmup(r, clients);
  const dropped = await dropByHealthCheck(r, clients, clients[2], clients[0], t);
  t = await trainToCooldown(r, clients, dropped.t, dropped.seen);
  await endCooldown(r, t);
  assert.deepEqual(slashedOf(r, clients), [0n, 0n, 7n]);
  assert.deepEqual(pointsOf(r, clients), [0n, 0n, 0n], "slashing takes nothing from earned");
});

Deno.test("slashing beside a payout: the dropped client is slashed, the finishers paid", async () => {
  const { run: r, clients } = await run(3);
  await r.expectOk({ ...earning(1001n), slashingRatePerClient: 9n }, r.mainAuthority);
  await epochDroppingOne(r, clients);
  assert.deepEqual(pointsOf(r, clients), [500n, 500n, 0n]);
  assert.deepEqual(slashedOf(r, clients), [0n, 0n, 9n]);
});

Deno.test("a slashing rate of 0 slashes nobody", async () => {
  const { run: r, clients } = await run(3);
  await r.expectOk({ ...earning(1001n), slashingRatePerClient: 0n }, r.mainAuthority);
  await epochDroppingOne(r, clients);
  assert.deepEqual(pointsOf(r, clients), [500n, 500n, 0n]);
  assert.deepEqual(slashedOf(r, clients), [0n, 0n, 0n]);
});

Deno.test("a client ejected by verification gets the slashing rate", async () => {
  const { run: r, clients } = await run(3);
  await r.expectOk(slashing(11n), r.mainAuthority);
  const t = await startEpoch(r, clients);
  await leaveWarmup(r, clients);
  await ejectThenEndEpoch(r, svm, clients, clients[1], t);
  assert.deepEqual(slashedOf(r, clients), [0n, 11n, 0n]);
});

Deno.test("slashed points saturate at 2^64 - 1 and never wrap", async () => {
  const { run: r, clients } = await run(3);
  await r.expectOk(slashing(7n), r.mainAuthority);
  await epochDroppingOne(r, clients, () => {
    // The dropped client's registration already holds 2^64 - 4 slashed points.
    const slot = r.model!.registry.findIndex((x) =>
      x.signer.every((b, i) => b === keyOf(clients[2])[i])
    );
    patchAccount(r, (_bytes, view) => {
      view.setBigUint64(OFFSETS.slashed + slot * 8, MAX_POINTS - 3n, true);
    });
    r.model!.registry[slot].slashed = MAX_POINTS - 3n;
    r.check();
  });
  assert.deepEqual(slashedOf(r, clients), [0n, 0n, MAX_POINTS]);
});
