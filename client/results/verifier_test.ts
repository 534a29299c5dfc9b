import assert from "node:assert/strict";
import { identities, RunDriver, testState } from "../../tests/support/coordinator_fixtures.ts";
import { type VerifierParts, verifyResult } from "./verifier.ts";
import { roundAssignments, roundByHeight, roundClients } from "../../coordinator/core/mod.ts";
import {
  chunkLayout,
  type DistroResult,
  type DistroState,
  encodeState,
  stateDigest,
  zeroStateDigest,
} from "../../optimizer/mod.ts";

const shape = { size: 64, layouts: [chunkLayout("w", [8, 8], { chunk: 4, topk: 2 })] };
const indices = Uint32Array.from([1, 5, 0, 3, 7, 2, 9, 4]);
const values = Float32Array.from([0.5, -0.25, 0.75, -1, 0.125, 2, -0.5, 0.25]);
const after: DistroState = {
  kind: "distro",
  delta: Float32Array.from({ length: 64 }, (_, i) => Math.sin(i) * 1e-3),
  own: { indices, values },
};
const afterBytes = encodeState(after, shape);
const zero = zeroStateDigest(shape);

/** Round 0 of a 4-client run; the task is its first trainer's result. */
function setup() {
  const driver = new RunDriver(testState({ initMinClients: 4, minClients: 1 }));
  driver.startEpoch(identities(4));
  driver.warmupTimeout();
  const state = driver.state;
  const round = roundByHeight(state, 0)!;
  const a = roundAssignments(state, round)[0];
  const trainer = roundClients(state, 0)[a.clientIndex];
  const result: DistroResult = {
    step: 1,
    batch: a.batch,
    trainerNonce: 0,
    params: [{ indices, values: values.map((v) => Math.sign(v)) }],
    states: { input: zero, output: stateDigest(afterBytes) },
  };
  return { state, trainer, result, task: { height: 0, trainer: trainer.epochIndex } };
}

function parts(overrides: Partial<VerifierParts> & { result?: DistroResult | undefined }) {
  const calls: string[] = [];
  const base: VerifierParts = {
    results: {
      resultOf: (height) => Promise.resolve(height === 0 ? overrides.result : undefined),
      resultsOf: () => [],
      recoverResultOf: () => {
        calls.push("recover");
        return Promise.resolve(undefined);
      },
    },
    shape,
    fetchState: ({ digest }) => {
      calls.push("fetch");
      assert.deepEqual(digest, stateDigest(afterBytes));
      return Promise.resolve(afterBytes);
    },
    replay: (args) => {
      calls.push(`replay ${args.step} [${args.batch.start}, ${args.batch.end}]`);
      assert.equal(args.state.own, null, "from the zero state");
      return Promise.resolve({ own: [{ indices, values }], state: after, gradientStep: 1e-3 });
    },
  };
  return { parts: { ...base, ...overrides, results: overrides.results ?? base.results }, calls };
}

Deno.test("an honest result: fetched, replayed from its input, passed", async () => {
  const { state, result, task } = setup();
  const { parts: p, calls } = parts({ result });
  const outcome = await verifyResult(p, state, task);
  assert.equal(outcome.verdict, "Pass");
  assert.equal(outcome.note, null);
  assert.equal(outcome.step, 1);
  assert.deepEqual(calls, ["fetch", `replay 1 [${result.batch.start}, ${result.batch.end}]`]);
});

Deno.test("a replay that selects otherwise fails the result", async () => {
  const { state, result, task } = setup();
  const { parts: p } = parts({
    result,
    replay: () =>
      Promise.resolve({
        own: [{ indices, values: values.map((v) => -v) }],
        state: after,
        gradientStep: 1e-3,
      }),
  });
  const outcome = await verifyResult(p, state, task);
  assert.deepEqual([outcome.verdict, outcome.evidence], ["Fail", "ResultMismatch"]);
});

Deno.test("a state the trainer does not serve is StateUnavailable, after retries", async () => {
  const { state, result, task } = setup();
  let tries = 0;
  const { parts: p } = parts({
    result,
    fetchState: () => {
      tries++;
      return Promise.reject(new Error("no provider answered"));
    },
  });
  const outcome = await verifyResult(p, state, task);
  assert.deepEqual([outcome.verdict, outcome.evidence, tries], ["Fail", "StateUnavailable", 3]);
});

Deno.test("a result whose input is not the trainer's last output breaks the chain, unreplayed", async () => {
  const { state, result, task } = setup();
  const broken = {
    ...result,
    states: { input: new Uint8Array(32).fill(5), output: result.states!.output },
  };
  const { parts: p, calls } = parts({ result: broken });
  // In round 0 the trainer has no earlier result: only the zero state or an unknown chain.
  assert.equal((await verifyResult(p, state, task)).verdict, "Fail", "a state nobody served");
  assert.ok(calls.length >= 1);
  const previous = { ...result, states: { input: zero, output: new Uint8Array(32).fill(6) } };
  const { parts: q, calls: qc } = parts({
    result: broken,
    results: {
      resultOf: (height) => Promise.resolve(height === 0 ? broken : previous),
      resultsOf: () => [],
      recoverResultOf: () => Promise.resolve(undefined),
    },
  });
  const outcome = await verifyResult(q, state, task);
  assert.deepEqual([outcome.verdict, outcome.evidence, outcome.note], [
    "Fail",
    "ChainBreak",
    "chain",
  ]);
  assert.deepEqual(qc, []);
});

Deno.test("no result received: nothing of it is applied here, so it passes, said so", async () => {
  const { state, task } = setup();
  const { parts: p, calls } = parts({ result: undefined });
  const outcome = await verifyResult(p, state, task);
  assert.equal(outcome.verdict, "Pass");
  assert.equal(outcome.note, "no result of it was received");
  assert.deepEqual(calls, ["recover"]);
});
