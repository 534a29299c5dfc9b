/**
 * A verifying run for the differential tests: sixteen clients, a tenth of every round's results
 * sampled (`verificationPercent` 10: one task a round), and seated verifiers who mostly agree on
 * each sampled result's truth but sometimes say the opposite or stay silent. So stages are decided either way,
 * contested ones go to tie-breakers, silent seats and losing voters are ejected, results of
 * ejected or departed trainers are rejected, and ejected signers who join the next epoch are
 * kept out by the bar (`verificationBarEpochs` 1), then let back in. Strangers, repeated and
 * malformed reports are sent too. Each epoch pays an earning rate with a remainder and slashes
 * at a rate of 13, and the points of the clients ejected in it are watched
 * (`earned:ejectedUnpaid` and `slashed:ejected`, and `earned:ejectedPaid`, which must never
 * happen). Every instruction goes through a
 * {@linkcode DualRun}, so the program and the reference model are compared after each one.
 *
 * @module
 */

import type { KeyPairSigner } from "@solana/kit";
import { equalBytes } from "../../../common/mod.ts";
import {
  testConfig,
  testModel,
  warmupReport,
  witnessReport,
} from "../../../tests/support/coordinator_fixtures.ts";
import { Prng } from "../../../tests/support/coordinator_sim.ts";
import type { CoordinatorSvm } from "./svm.ts";
import { DualRun, keyOf } from "./dual_run.ts";
import { verificationEvents } from "./random_sequences.ts";
import type { CoordinatorInstruction } from "../abi/mod.ts";
import {
  barEpoch,
  barredUntil,
  currentRound,
  roundSelection,
  stageSeats,
  type VerificationReport,
  type VerificationTask,
} from "../../core/mod.ts";

/** Options of {@linkcode verificationScenario}. */
export interface VerificationScenarioOptions {
  /** Epochs to run (default 4). */
  epochs?: number;
  /** Clients (default 16). */
  clients?: number;
}

/** What a seat means to do in its stage. */
type Intent = "Pass" | "Fail" | "Idle";

/**
 * Runs the scenario of seed `seed` on a new run of `svm` and returns how often each outcome
 * (`Kind:ok`, `Kind:ErrorName`), verification event (verificationEvents) and bar event
 * (`bar:keptOut`, `bar:readmitted`, `bar:servedByWait`) was seen.
 */
export async function verificationScenario(
  svm: CoordinatorSvm,
  seed: number,
  opts: VerificationScenarioOptions = {},
): Promise<Record<string, number>> {
  const rng = new Prng(seed);
  const chance = (p: number) => rng.next() < p;
  const seen: Record<string, number> = {};
  const count = (key: string) => seen[key] = (seen[key] ?? 0) + 1;
  const run = await DualRun.create({ svm, runId: `verify-${seed}` });
  const send = async (ix: CoordinatorInstruction, signer: KeyPairSigner | null) => {
    const result = await run.send(ix, signer, { computeUnitLimit: 1_400_000 });
    count(`${ix.kind}:${result.ok ? "ok" : result.error}`);
    for (const event of verificationEvents(run)) count(event);
    return result;
  };
  await run.expectOk({
    kind: "Update",
    config: testConfig({
      maxClients: 64,
      minClients: 3,
      initMinClients: 4,
      witnessNodes: 0,
      globalBatchSizeStart: 16,
      globalBatchSizeEnd: 16,
      warmupTime: 5,
      maxRoundTrainTime: 5,
      roundWitnessTime: 2,
      cooldownTime: 2,
      epochTime: 24,
      totalSteps: 1000,
      verificationPercent: 10,
      verificationBarEpochs: 1,
    }),
    model: testModel(),
  }, run.mainAuthority);
  await run.expectOk(
    { kind: "SetFutureEpochRates", earningRateTotalShared: 1_000_003n, slashingRatePerClient: 13n },
    run.mainAuthority,
  );
  let now = 5;
  run.setTime(now);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  const clients: KeyPairSigner[] = [];
  for (let i = 0; i < (opts.clients ?? 16); i++) clients.push(await svm.newSigner());
  const pointsOf = (c: KeyPairSigner) =>
    run.model!.registry.find((r) => equalBytes(r.signer, keyOf(c)))?.earned ?? 0n;
  const slashedOf = (c: KeyPairSigner) =>
    run.model!.registry.find((r) => equalBytes(r.signer, keyOf(c)))?.slashed ?? 0n;
  const state = () => run.model!.state;
  const signerOf = (key: Uint8Array) => clients.find((c) => equalBytes(keyOf(c), key))!;
  const byEpochIndex = (e: number) => {
    const es = state().epochState;
    return [...es.clients, ...es.exitedClients].find((c) => c.epochIndex === e);
  };
  // A sampled result's truth, and what each seat means to say: mostly the truth.
  const truths = new Map<string, Intent>();
  const intents = new Map<string, Intent>();
  const intentOf = (task: VerificationTask, verifier: number): Intent => {
    const taskKey = `${state().progress.epoch}:${task.height}:${task.trainer}`;
    if (!truths.has(taskKey)) truths.set(taskKey, chance(0.15) ? "Fail" : "Pass");
    const key = `${taskKey}:${task.stage}:${verifier}`;
    if (!intents.has(key)) {
      const truth = truths.get(taskKey)!;
      intents.set(
        key,
        chance(0.06) ? "Idle" : chance(0.12) ? (truth === "Pass" ? "Fail" : "Pass") : truth,
      );
    }
    return intents.get(key)!;
  };
  const report = (task: VerificationTask, verdict: "Pass" | "Fail"): VerificationReport => ({
    height: task.height,
    trainer: task.trainer,
    verdict,
    evidence: verdict === "Pass"
      ? "None"
      : rng.pick(["ResultMismatch", "ChainBreak", "CopiedResult"]),
    detail: verdict === "Pass" ? 0 : rng.int(1, 1_000_000),
  });

  /** Seats of open tasks report (each, in a stage's rounds, with some chance); a few bad ones. */
  const reports = async () => {
    // Every instruction leaves a new model state: tasks are found again by height and trainer.
    const find = (height: number, trainer: number) =>
      state().epochState.verificationTasks.find((t) =>
        t.height === height && t.trainer === trainer
      );
    for (const { height, trainer } of [...state().epochState.verificationTasks]) {
      const first = find(height, trainer);
      if (first === undefined) continue; // decided meanwhile
      for (const seat of stageSeats(first)) {
        const live = find(height, trainer);
        if (live === undefined) break; // decided meanwhile
        const intent = intentOf(live, seat.verifier);
        // Most report at once; the rest wait, but not past the stage's last round.
        const last = live.deadline === currentRound(state()).height;
        if (seat.verdict !== null || intent === "Idle" || (!last && !chance(0.7))) continue;
        const verifier = byEpochIndex(seat.verifier);
        if (verifier === undefined) continue;
        await send(
          { kind: "VerificationReport", report: report(live, intent) },
          signerOf(verifier.id.signer),
        );
      }
    }
    const tasks = state().epochState.verificationTasks;
    if (tasks.length === 0 || !chance(0.5)) return;
    const task = rng.pick(tasks);
    switch (rng.int(0, 3)) {
      case 0: // a client holding no seat of the task
        await send({ kind: "VerificationReport", report: report(task, "Fail") }, rng.pick(clients));
        break;
      case 1: { // a seat that already reported, again
        const done = task.seats.find((s) => s.verdict !== null);
        const verifier = done && byEpochIndex(done.verifier);
        if (verifier) {
          await send(
            { kind: "VerificationReport", report: report(task, "Pass") },
            signerOf(verifier.id.signer),
          );
        }
        break;
      }
      case 2: { // a pass that carries evidence
        const verifier = byEpochIndex(rng.pick(stageSeats(task)).verifier);
        if (verifier) {
          await send({
            kind: "VerificationReport",
            report: { ...report(task, "Pass"), evidence: "StateMismatch" },
          }, signerOf(verifier.id.signer));
        }
        break;
      }
      default: // a round nobody sampled
        await send({
          kind: "VerificationReport",
          report: { ...report(task, "Pass"), height: task.height + 7 },
        }, rng.pick(clients));
    }
  };

  for (let epoch = 0; epoch < (opts.epochs ?? 4); epoch++) {
    if (state().runState !== "WaitingForMembers") break;
    // Everyone joins at the instant WaitingForMembers began (so nobody starts the epoch early),
    // the barred too; the next second's tick starts the epoch with whom the bar lets in.
    now = state().runStateStartUnixTimestamp;
    run.setTime(now);
    // Now and then only initMinClients join, the barred first: the bars hold the run, and only
    // the wait (each epoch_time counts as an epoch) lets it start.
    const barredNow = clients.filter((c) => barredUntil(state(), keyOf(c)) !== null);
    const joiners = barredNow.length > 0 && chance(0.4)
      ? [...barredNow, ...clients.filter((c) => !barredNow.includes(c))]
        .slice(0, state().config.initMinClients)
      : clients;
    for (const c of joiners) await send({ kind: "JoinRun", p2pIdentity: keyOf(c) }, c);
    const ejectedBefore = clients.filter((c) =>
      state().ejections.some((r) => equalBytes(r.signer, keyOf(c)))
    );
    const barredAt = (t: number) =>
      clients.filter((c) => barredUntil(state(), keyOf(c), barEpoch(state(), t)) !== null);
    let barred = barredAt(now + 1);
    run.setTime(now += 1);
    await send({ kind: "Tick" }, null);
    // Too few free joiners: each epoch_time waited counts as an epoch for the bars, so the run
    // starts once the wait has served enough of them.
    const waitingSince = state().runStateStartUnixTimestamp;
    for (let waits = 1; state().runState === "WaitingForMembers" && waits <= 8; waits++) {
      const t = waitingSince + waits * state().config.epochTime;
      barred = barredAt(t);
      run.setTime(now = t);
      await send({ kind: "Tick" }, null);
      if (state().runState === "Warmup") count("bar:servedByWait");
    }
    if (state().runState !== "Warmup") break;
    count("epoch:started");
    const inEpoch = (c: KeyPairSigner) =>
      state().epochState.clients.some((x) => equalBytes(x.id.signer, keyOf(c)));
    for (const c of barred) count(inEpoch(c) ? "bar:broken" : "bar:keptOut");
    for (const c of ejectedBefore) if (!barred.includes(c) && inEpoch(c)) count("bar:readmitted");
    for (const [i, c] of state().epochState.clients.entries()) {
      if (state().runState !== "Warmup") break;
      await send(
        {
          kind: "WarmupWitness",
          witness: warmupReport(state(), i),
          paramsDigest: new Uint8Array(32),
        },
        signerOf(c.id.signer),
      );
    }
    while (state().runState === "RoundTrain") {
      const early = chance(0.5);
      if (early) await reports();
      const sel = roundSelection(state().config, currentRound(state()));
      const everyone = state().epochState.clients.map((c) => c.id);
      for (const i of sel.witnessIndices()) {
        const c = state().epochState.clients[i];
        const runState = state().runState;
        if (c === undefined || (runState !== "RoundTrain" && runState !== "RoundWitness")) continue;
        await send({
          kind: "Witness",
          witness: witnessReport(state(), i, everyone),
          paramsDigest: new Uint8Array(32),
        }, signerOf(c.id.signer));
      }
      if (!early || chance(0.3)) await reports();
      if (state().runState === "RoundTrain") { // a witness was missing: the train timer ends it
        run.setTime(now += state().config.maxRoundTrainTime);
        await send({ kind: "Tick" }, null);
      }
      run.setTime(now += state().config.roundWitnessTime);
      await send({ kind: "Tick" }, null);
    }
    if (state().runState === "Cooldown") {
      await reports(); // still allowed in Cooldown, where no result is rejected any more
      const epoch = state().progress.epoch;
      const before = clients.map(pointsOf);
      const slashedBefore = clients.map(slashedOf);
      run.setTime(now += state().config.cooldownTime);
      await send({ kind: "Tick" }, null);
      clients.forEach((c, i) => {
        const ejected = state().ejections.some((r) =>
          r.epoch === epoch && equalBytes(r.signer, keyOf(c))
        );
        const paid = pointsOf(c) > before[i];
        if (ejected) count(paid ? "earned:ejectedPaid" : "earned:ejectedUnpaid");
        else if (paid) count("earned:paid");
        if (ejected && slashedOf(c) === slashedBefore[i] + 13n) count("slashed:ejected");
      });
    }
  }
  return seen;
}
