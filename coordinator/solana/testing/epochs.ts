/**
 * Test support: whole epochs driven through a {@linkcode DualRun} (program and reference model at
 * once): everyone joins and Warmup starts, warmup witnesses, rounds until Cooldown with the
 * elected witnesses reporting, a health check that drops a client nobody saw, Cooldown's timer;
 * and, for the treasurer's tests, a resumed run whose epochs pay points, played an epoch at a
 * time. The earned-points, join-deposit and treasurer tests share them.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { KeyPairSigner } from "@solana/kit";
import {
  testConfig,
  testModel,
  warmupReport,
  witnessReport,
} from "../../../tests/support/coordinator_fixtures.ts";
import { clientIndex, DualRun, type DualSendOptions, keyOf } from "./dual_run.ts";
import type { CoordinatorSvm } from "./svm.ts";
import { patchAccount } from "./litesvm_accounts.ts";
import { OFFSETS, structLayout } from "../abi/mod.ts";
import {
  CLIENT_STATES,
  type CoordinatorConfig,
  currentRound,
  NO_DIGEST,
  type NodeIdentity,
  roundSelection,
} from "../../core/mod.ts";

/** The p2p identity the test clients join with. */
export const TEST_P2P: Uint8Array = new Uint8Array(32).fill(7);

/** A client's identity as witnesses name it. */
export function identity(c: KeyPairSigner): NodeIdentity {
  return { signer: keyOf(c), p2pIdentity: keyOf(c) };
}

/**
 * Everyone joins at the instant WaitingForMembers began (with `joinOptions(c)`, for the
 * deposit's accounts); a tick one second later starts Warmup. Returns the new time.
 */
export async function startEpoch(
  r: DualRun,
  clients: KeyPairSigner[],
  joinOptions: (c: KeyPairSigner) => DualSendOptions = () => ({}),
): Promise<number> {
  let t = r.model!.state.runStateStartUnixTimestamp;
  r.setTime(t);
  for (const c of clients) {
    await r.expectOk({ kind: "JoinRun", p2pIdentity: TEST_P2P }, c, joinOptions(c));
  }
  r.setTime(t += 1);
  await r.expectOk({ kind: "Tick" }, null);
  assert.equal(r.model!.state.runState, "Warmup");
  return t;
}

/** Every client's warmup witness: round 0 starts. */
export async function leaveWarmup(r: DualRun, clients: KeyPairSigner[]): Promise<void> {
  for (const c of clients) {
    if (r.model!.state.runState !== "Warmup") break;
    await r.expectOk({
      kind: "WarmupWitness",
      witness: warmupReport(r.model!.state, clientIndex(r, c)),
      paramsDigest: NO_DIGEST,
    }, c);
  }
  assert.equal(r.model!.state.runState, "RoundTrain");
}

/**
 * Rounds until Cooldown: the Healthy elected witnesses report seeing `seen(height)` (everyone
 * by default), then the timers end the round. Returns the new time.
 */
export async function trainToCooldown(
  r: DualRun,
  clients: KeyPairSigner[],
  t: number,
  seen: (height: number) => NodeIdentity[] = () => clients.map((c) => identity(c)),
): Promise<number> {
  const state = () => r.model!.state;
  while (state().runState === "RoundTrain") {
    const round = currentRound(state());
    const sel = roundSelection(state().config, round);
    for (const c of clients) {
      const i = clientIndex(r, c);
      const live = state().runState === "RoundTrain" || state().runState === "RoundWitness";
      if (!live || i < 0 || !sel.isWitness(i)) continue;
      if (state().epochState.clients[i].state !== "Healthy") continue;
      const witness = witnessReport(state(), i, seen(round.height));
      await r.expectOk({ kind: "Witness", witness, paramsDigest: NO_DIGEST }, c);
    }
    if (state().runState === "RoundTrain") {
      r.setTime(t += state().config.maxRoundTrainTime);
      await r.expectOk({ kind: "Tick" }, null);
    }
    r.setTime(t += state().config.roundWitnessTime);
    await r.expectOk({ kind: "Tick" }, null);
  }
  assert.equal(state().runState, "Cooldown");
  return t;
}

/** Cooldown's timer ends the epoch. Returns the new time. */
export async function endCooldown(r: DualRun, t: number): Promise<number> {
  r.setTime(t += r.model!.state.config.cooldownTime);
  await r.expectOk({ kind: "Tick" }, null);
  assert.notEqual(r.model!.state.runState, "Cooldown");
  return t;
}

/**
 * Two rounds (3 s each) in which nobody sees `lazy` after round 0, then `checker`'s health check
 * drops it. Returns the new time and the witnesses' view for the rest of the epoch.
 */
export async function dropByHealthCheck(
  r: DualRun,
  clients: KeyPairSigner[],
  lazy: KeyPairSigner,
  checker: KeyPairSigner,
  t: number,
): Promise<{ t: number; seen: (height: number) => NodeIdentity[] }> {
  const seen = (height: number) =>
    clients.filter((c) => height === 0 || c !== lazy).map((c) => identity(c));
  for (let round = 0; round < 2; round++) {
    const state = r.model!.state;
    const sel = roundSelection(state.config, currentRound(state));
    for (const c of clients.filter((c) => sel.isWitness(clientIndex(r, c)))) {
      const witness = witnessReport(r.model!.state, clientIndex(r, c), seen(round));
      await r.expectOk({ kind: "Witness", witness, paramsDigest: NO_DIGEST }, c);
    }
    r.setTime(t += 3);
    await r.expectOk({ kind: "Tick" }, null);
  }
  const state = r.model!.state;
  const prev = state.epochState.rounds[(state.epochState.roundsHead + 3) % 4];
  const proof = roundSelection(state.config, prev).committeeProof(clientIndex(r, lazy));
  await r.expectOk({ kind: "HealthCheck", checks: [{ signer: keyOf(lazy), proof }] }, checker);
  assert.equal(r.model!.state.epochState.clients[clientIndex(r, lazy)].state, "Dropped");
  return { t, seen };
}

/** A run whose epochs pay points, and the clients that train in it. */
export interface EarningRun {
  run: DualRun;
  clients: KeyPairSigner[];
  /** The run's clock (seconds), moved by each step. */
  time: number;
}

/**
 * A resumed run of `clients` new wallets (all of them needed to start an epoch) whose epochs pay
 * `earningRate` points, shared by the clients that finish each one Healthy.
 */
export async function earningRun(svm: CoordinatorSvm, opts: {
  clients: number;
  earningRate: bigint;
  config?: Partial<CoordinatorConfig>;
}): Promise<EarningRun> {
  const r = await DualRun.create({ svm });
  await r.expectOk({
    kind: "Update",
    config: testConfig({
      initMinClients: opts.clients,
      minClients: 2,
      epochTime: 20,
      warmupTime: 5,
      ...opts.config,
    }),
    model: testModel(),
  }, r.mainAuthority);
  r.setTime(1);
  await r.expectOk({ kind: "SetPaused", paused: false }, r.mainAuthority);
  await r.expectOk(
    { kind: "SetFutureEpochRates", earningRateTotalShared: opts.earningRate },
    r.mainAuthority,
  );
  const clients: KeyPairSigner[] = [];
  for (let i = 0; i < opts.clients; i++) clients.push(await svm.newSigner());
  return { run: r, clients, time: 1 };
}

/**
 * One whole epoch: every client joins, warms up and trains until Cooldown ends; a client in
 * `drop` is not seen by the witnesses from round 1 on and is dropped by a health check in
 * round 2, so it finishes Dropped and earns nothing.
 */
export async function playEpoch(
  e: EarningRun,
  opts: { drop?: KeyPairSigner } = {},
): Promise<void> {
  const r = e.run;
  const state = () => r.model!.state;
  e.time = state().runStateStartUnixTimestamp;
  r.setTime(e.time);
  for (const c of e.clients) await r.expectOk({ kind: "JoinRun", p2pIdentity: TEST_P2P }, c);
  r.setTime(e.time += 1);
  await r.expectOk({ kind: "Tick" }, null);
  assert.equal(state().runState, "Warmup");
  for (const c of e.clients) {
    if (state().runState !== "Warmup") break;
    await r.expectOk({
      kind: "WarmupWitness",
      witness: warmupReport(state(), clientIndex(r, c)),
      paramsDigest: NO_DIGEST,
    }, c);
  }
  assert.equal(state().runState, "RoundTrain");
  const seen = (height: number) =>
    e.clients.filter((c) => height === 0 || c !== opts.drop).map(identity);
  let height = 0;
  let dropped = false;
  while (state().runState === "RoundTrain") {
    if (opts.drop !== undefined && height === 2) {
      const es = state().epochState;
      const prev = es.rounds[(es.roundsHead + 3) % 4];
      const proof = roundSelection(state().config, prev).committeeProof(
        clientIndex(r, opts.drop),
      );
      const checker = e.clients.find((c) => c !== opts.drop)!;
      await r.expectOk(
        { kind: "HealthCheck", checks: [{ signer: keyOf(opts.drop), proof }] },
        checker,
      );
      assert.equal(state().epochState.clients[clientIndex(r, opts.drop)].state, "Dropped");
      dropped = true;
    }
    const round = currentRound(state());
    const sel = roundSelection(state().config, round);
    for (const c of e.clients) {
      const i = clientIndex(r, c);
      const live = state().runState === "RoundTrain" || state().runState === "RoundWitness";
      if (!live || i < 0 || !sel.isWitness(i)) continue;
      if (state().epochState.clients[i].state !== "Healthy") continue;
      const witness = witnessReport(state(), i, seen(round.height));
      await r.expectOk({ kind: "Witness", witness, paramsDigest: NO_DIGEST }, c);
    }
    if (state().runState === "RoundTrain") {
      r.setTime(e.time += state().config.maxRoundTrainTime);
      await r.expectOk({ kind: "Tick" }, null);
    }
    r.setTime(e.time += state().config.roundWitnessTime);
    await r.expectOk({ kind: "Tick" }, null);
    height++;
  }
  assert.equal(state().runState, "Cooldown");
  assert.equal(dropped, opts.drop !== undefined, "the epoch ended before round 2's health check");
  r.setTime(e.time += state().config.cooldownTime);
  await r.expectOk({ kind: "Tick" }, null);
  assert.notEqual(state().runState, "Cooldown");
}

/** Each client's earned points, as the program's account holds them. */
export function pointsOf(e: EarningRun, clients: KeyPairSigner[] = e.clients): bigint[] {
  const account = e.run.svm.coordinatorAccount(e.run.coordinator);
  return clients.map((c) => {
    const key = keyOf(c);
    const reg = account.registry.find((x) => x.signer.every((b, i) => b === key[i]));
    return reg?.earned ?? 0n;
  });
}

/**
 * Marks `ejected` Ejected in the program's account and the model, as verification's eject does
 * (a state the tests reach here without a verification round), then trains to Cooldown with the
 * others seen and ends the epoch. Returns the new time.
 */
export async function ejectThenEndEpoch(
  r: DualRun,
  svm: CoordinatorSvm,
  clients: KeyPairSigner[],
  ejected: KeyPairSigner,
  t: number,
): Promise<number> {
  const i = clientIndex(r, ejected);
  const client = structLayout("client_t");
  const at = OFFSETS.epochState + structLayout("epoch_state_t").offsets.clients +
    i * client.size + client.offsets.state;
  patchAccount(svm.svm, r.coordinator, (bytes) => {
    bytes[at] = CLIENT_STATES.indexOf("Ejected");
  });
  r.model!.state.epochState.clients[i].state = "Ejected";
  r.check();
  const others = clients.filter((c) => c !== ejected);
  t = await trainToCooldown(r, clients, t, () => others.map((c) => identity(c)));
  return await endCooldown(r, t);
}
