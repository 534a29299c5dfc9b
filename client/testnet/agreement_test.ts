import assert from "node:assert/strict";
import { type AgreementEntry, compareDigests, stepRanges } from "./agreement.ts";

const digest = (step: number, hash: string): AgreementEntry => ({ kind: "digest", step, hash });
const logs = (entries: Record<string, AgreementEntry[]>) => new Map(Object.entries(entries));

Deno.test("a tie with no record settles nothing: every client there differs", () => {
  const a = compareDigests(
    logs({ "client-1": [digest(4, "aa")], "client-2": [digest(4, "bb")] }),
    new Map(),
  );
  assert.deepEqual(a.disagreements, [{
    step: 4,
    run: null,
    runSource: null,
    differing: [{ label: "client-1", hash: "aa" }, { label: "client-2", hash: "bb" }],
  }]);
  assert.deepEqual(a.divergences.map((d) => [d.label, d.silentSteps]), [
    ["client-1", [4]],
    ["client-2", [4]],
  ]);
});

Deno.test("a step only one client logged, with no record, is not compared", () => {
  const a = compareDigests(
    logs({ "client-1": [digest(3, "aa"), digest(4, "bb")], "client-2": [digest(3, "aa")] }),
    new Map(),
  );
  assert.equal(a.stepsCompared, 1);
  assert.deepEqual(a.disagreements, []);
  assert.deepEqual(a.divergences, []);
  // With the coordinator's record it is compared, and found different.
  const recorded = compareDigests(
    logs({ "client-1": [digest(3, "aa"), digest(4, "bb")], "client-2": [digest(3, "aa")] }),
    new Map([[4, "cc"]]),
  );
  assert.equal(recorded.stepsCompared, 2);
  assert.deepEqual(recorded.disagreements.map((d) => [d.step, d.runSource]), [[4, "coordinator"]]);
});

Deno.test("a divergence logged before or after the differing digests of its process owns them", () => {
  const a = compareDigests(
    logs({
      "client-1": [digest(3, "r3"), digest(4, "r4"), digest(5, "r5"), digest(6, "r6")],
      "client-3": [digest(3, "r3"), digest(4, "r4"), digest(5, "r5"), digest(6, "r6")],
      "client-2": [
        digest(3, "r3"),
        digest(4, "x4"), // found out late: the diverged event comes after
        { kind: "diverged", step: 4, reason: "record" },
        digest(5, "x5"), // still diverged
        { kind: "resynced", step: 6 },
        digest(6, "r6"),
      ],
    }),
    new Map(),
  );
  assert.deepEqual(a.divergences, [{
    label: "client-2",
    steps: [4, 5],
    silentSteps: [],
    logged: { step: 4, reason: "record" },
    recoveredAt: 6,
  }]);
});

Deno.test("a divergence after a resync is a new one, and must be owned up to again", () => {
  const run = (step: number) => digest(step, `r${step}`);
  const a = compareDigests(
    logs({
      "client-1": [run(3), run(4), run(5), run(6), run(7)],
      "client-2": [run(3), run(4), run(5), run(6), run(7)],
      "client-3": [
        digest(3, "x3"),
        { kind: "diverged", step: 3, reason: "first" },
        { kind: "resynced", step: 5 },
        run(5),
        digest(6, "x6"),
        digest(7, "x7"),
      ],
    }),
    new Map(),
  );
  assert.deepEqual(a.divergences, [
    {
      label: "client-3",
      steps: [3],
      silentSteps: [],
      logged: { step: 3, reason: "first" },
      recoveredAt: 5,
    },
    { label: "client-3", steps: [6, 7], silentSteps: [6, 7], logged: null, recoveredAt: null },
  ]);
});

Deno.test("steps are written as ranges", () => {
  assert.equal(stepRanges([]), "");
  assert.equal(stepRanges([5]), "5");
  assert.equal(stepRanges([9, 1, 2, 3, 7, 10, 2]), "1-3, 7, 9-10");
});
