import assert from "node:assert/strict";
import {
  judgeChain,
  judgeReplay,
  labelCopy,
  type ReplayEvidence,
  VERIFY_TOLERANCE,
} from "./verify_check.ts";
import { chunkLayout, type DistroResult, type DistroState } from "../../optimizer/mod.ts";

// One parameter: 4 chunks of 16 coefficients, 2 kept per chunk.
const layouts = [chunkLayout("w", [8, 8], { chunk: 4, topk: 2 })];
const indices = Uint32Array.from([1, 5, 0, 3, 7, 2, 9, 4]);
const values = Float32Array.from([0.5, -0.25, 0.75, -1, 0.125, 2, -0.5, 0.25]);
const signs = Float32Array.from(values, (v) => (v < 0 ? -1 : 1));
const zero = new Uint8Array(32);
const digests = { input: new Uint8Array(32).fill(1), output: new Uint8Array(32).fill(2) };

function result(params = [{ indices, values: signs }], states = digests): DistroResult {
  return { step: 3, batch: { start: 0, end: 1 }, trainerNonce: 0, params, states };
}
function state(delta: Float32Array, own = { indices, values }): DistroState {
  return { kind: "distro", delta, own };
}
const delta = Float32Array.from({ length: 64 }, (_, i) => Math.cos(i) * 1e-3);
function evidence(overrides: Partial<ReplayEvidence> = {}): ReplayEvidence {
  return {
    result: result(),
    servedOutput: state(delta),
    replayed: { own: [{ indices, values }], state: state(delta), gradientStep: 1e-3 },
    others: [],
    layouts,
    ...overrides,
  };
}

Deno.test("a chain starts at the zero state or continues the trainer's previous output", () => {
  assert.equal(judgeChain(result(), digests.input, zero), null);
  assert.equal(judgeChain(result(), null, zero), null, "the previous result unknown");
  const fromZero = result(undefined, { input: zero, output: digests.output });
  assert.equal(judgeChain(fromZero, new Uint8Array(32).fill(9), zero), null);
  assert.deepEqual(judgeChain(result(), new Uint8Array(32).fill(9), zero), {
    verdict: "Fail",
    evidence: "ChainBreak",
    detail: 0,
  });
  const { states: _, ...bare } = result();
  assert.equal(judgeChain(bare, null, zero)?.evidence, "StateInconsistent");
});

Deno.test("an honest replay passes, with a little float noise too", () => {
  assert.deepEqual(judgeReplay(evidence()), { verdict: "Pass", evidence: "None", detail: 0 });
  const noisy = delta.map((x, i) => (i === 3 ? x + 1e-9 : x));
  const j = judgeReplay(evidence({ servedOutput: state(noisy) }));
  assert.equal(j.verdict, "Pass");
  // 1e-9 (as f32 holds it next to 1e-3) against a 1e-3 gradient step: about 1 ppm.
  assert.ok(j.detail >= 1 && j.detail <= 2, String(j.detail));
});

Deno.test("a served output state that is not the published result is inconsistent", () => {
  const otherSigns = { indices, values: values.map((v, i) => (i === 0 ? -v : v)) };
  assert.equal(
    judgeReplay(evidence({ servedOutput: state(delta, otherSigns) })).evidence,
    "StateInconsistent",
  );
  assert.equal(judgeReplay(evidence({ servedOutput: null })).evidence, "StateInconsistent");
});

Deno.test("flipped or other coefficients beyond 1% are a ResultMismatch, copied or not", () => {
  // The replay selected the same coefficients with other signs in two of eight entries.
  const replayedOwn = [{ indices, values: values.map((v, i) => (i < 2 ? -v : v)) }];
  const base = evidence();
  const j = judgeReplay({ ...base, replayed: { ...base.replayed, own: replayedOwn } });
  assert.deepEqual(j, { verdict: "Fail", evidence: "ResultMismatch", detail: 250_000 });
  // Another result of the round holds the same coefficients: with a state consistent with its
  // result, this one could be the source (a copier copied it), so it stays a ResultMismatch.
  const other = result([{ indices, values: signs }]);
  const same = judgeReplay({
    ...base,
    replayed: { ...base.replayed, own: replayedOwn },
    others: [other],
  });
  assert.deepEqual(same, j);
  // Within tolerance: one entry in 200 is 5000 ppm.
  assert.ok(VERIFY_TOLERANCE.coefficientsPpm >= 5000);
});

Deno.test("a served state away from the replay's by a share of the gradient step is a StateMismatch", () => {
  const base = evidence();
  // A gradient of other data moves δ by about one gradient step.
  const moved = delta.map((x, i) => (i === 7 ? x + 1e-3 : x));
  const j = judgeReplay({ ...base, servedOutput: state(moved) });
  assert.equal(j.evidence, "StateMismatch");
  assert.ok(Math.abs(j.detail - 1_000_000) < 1000, String(j.detail));
  // The own values count as δ does.
  const ownMoved = { indices, values: values.map((v, i) => (i === 2 ? v * 2 : v)) };
  assert.equal(
    judgeReplay({ ...base, servedOutput: state(delta, ownMoved) }).evidence,
    "StateMismatch",
  );
  // With no gradient (lr 0) the scale is 1e-4 of ‖δ‖, not zero.
  const still = judgeReplay({ ...base, replayed: { ...base.replayed, gradientStep: 0 } });
  assert.equal(still.verdict, "Pass");
});

Deno.test("an inconsistent copy is labelled a copy; its source passes or fails on its own", () => {
  const source = result([{ indices, values: signs }]);
  // A free rider serves the zero state: no own result at all.
  const zeroState: DistroState = { kind: "distro", delta: new Float32Array(64), own: null };
  assert.equal(
    judgeReplay(evidence({ servedOutput: zeroState, others: [source] })).evidence,
    "CopiedResult",
  );
  // The source itself, replayed honestly, passes though its copy overlaps it wholly.
  assert.equal(judgeReplay(evidence({ others: [source] })).verdict, "Pass");
  // A source that fails for its own reasons is never named a copy of its copy.
  const chain = judgeChain(result(), new Uint8Array(32).fill(9), zero)!;
  assert.equal(labelCopy(chain, result(), [source], layouts).evidence, "ChainBreak");
  const mismatch = { verdict: "Fail" as const, evidence: "ResultMismatch" as const, detail: 1 };
  assert.equal(labelCopy(mismatch, result(), [source], layouts).evidence, "ResultMismatch");
});
