import assert from "node:assert/strict";
import fc from "fast-check";
import {
  compareReports,
  DEFAULT_TOLERANCES,
  formatComparison,
  parseStepReport,
  relativeDifference,
  ReportError,
  type StepReport,
} from "./report.ts";

function report(overrides: Partial<StepReport> = {}): StepReport {
  return {
    engine: "webgpu-engine",
    version: "deno 2",
    device: "webgpu",
    deviceName: "llvmpipe",
    params: 1000,
    batch: 2,
    seqLen: 8,
    losses: [6.25, 6.1, 6.0],
    gradNorm0: 1.02,
    gradNorms0: { "model.norm.weight": 0.01, "lm_head.weight": 0.6 },
    stepMs: [70, 72, 68],
    medianStepMs: 70,
    ...overrides,
  };
}

Deno.test("parseStepReport reads the last line and keeps the optional fields", () => {
  const r = report({ threads: 2, blas: ["/usr/lib/libblas.so.3"], peakRssBytes: 6706606080 });
  const parsed = parseStepReport(`warming up\n${JSON.stringify(r)}\n\n`, "script");
  assert.deepEqual(parsed, r);
});

Deno.test("parseStepReport names the source and the bad field", () => {
  assert.throws(() => parseStepReport("", "s"), /s: printed nothing/);
  assert.throws(() => parseStepReport("{not json", "s"), /s: last line is not JSON/);
  assert.throws(() => parseStepReport("[1]", "s"), /report must be a JSON object/);
  const bad = (o: Record<string, unknown>) => JSON.stringify({ ...report(), ...o });
  assert.throws(
    () => parseStepReport(bad({ losses: [] }), "s"),
    /field "losses" must be a non-empty/,
  );
  assert.throws(() => parseStepReport(bad({ losses: [1, null] }), "s"), /field "losses\[1\]"/);
  assert.throws(
    () => parseStepReport(bad({ batch: 1.5 }), "s"),
    /field "batch" must be a positive/,
  );
  assert.throws(() => parseStepReport(bad({ engine: 3 }), "s"), /field "engine" must be a string/);
  assert.throws(
    () => parseStepReport(bad({ gradNorms0: { w: "x" } }), "s"),
    /field "gradNorms0.w" must be a finite number/,
  );
  assert.throws(() => parseStepReport(bad({ blas: [1] }), "s"), /field "blas"/);
  assert.throws(
    () => parseStepReport(bad({ peakRssBytes: -1 }), "s"),
    /field "peakRssBytes" must be a positive integer, found -1/,
  );
  const err = (() => {
    try {
      parseStepReport(bad({ gradNorm0: null }), "llama_step.py");
    } catch (e) {
      return e;
    }
  })();
  assert.ok(err instanceof ReportError);
  assert.equal(err.source, "llama_step.py");
});

Deno.test("relativeDifference is symmetric, 0 for equal values and scaled by the larger", () => {
  assert.equal(relativeDifference(0, 0), 0);
  assert.equal(relativeDifference(2, 1), 0.5);
  assert.equal(relativeDifference(-1, 1), 2);
  fc.assert(
    fc.property(
      fc.double({ noNaN: true, min: -1e6, max: 1e6 }),
      fc.double({ noNaN: true, min: -1e6, max: 1e6 }),
      (a, b) => {
        assert.equal(relativeDifference(a, b), relativeDifference(b, a));
      },
    ),
  );
});

Deno.test("compareReports passes agreeing runs and gives our time over PyTorch's", () => {
  const torch = report({
    engine: "pytorch-eager",
    medianStepMs: 35,
    losses: [6.25, 6.1, 6.0 + 1e-7],
  });
  const c = compareReports(report(), torch);
  assert.ok(c.ok);
  assert.equal(c.stepRatio, 2);
  assert.equal(c.bestRatio, 1); // both fastest steps are 68 ms
  assert.deepEqual(c.rows.map((r) => r.quantity), [
    "loss, step 0",
    "gradient norm, step 0",
    "worst tensor gradient norm (lm_head.weight)", // all equal: the first name
    "loss, step 2",
  ]);
  assert.ok(Math.abs(c.rows[3].relDiff - 1e-7 / 6.0) < 1e-12);
});

Deno.test("compareReports fails on one tensor's gradient even when the loss agrees", () => {
  const torch = report({ gradNorms0: { "model.norm.weight": 0.0101, "lm_head.weight": 0.6 } });
  const c = compareReports(report(), torch);
  assert.equal(c.ok, false);
  assert.equal(c.worstTensor, "model.norm.weight");
  const row = c.rows.find((r) => r.quantity.startsWith("worst tensor"))!;
  assert.equal(row.ok, false);
  assert.equal(row.tolerance, DEFAULT_TOLERANCES.tensorGradNorm);
  assert.match(formatComparison(c, report(), torch), /\| FAIL \|/);
  // A one-step run has no last-loss row.
  const one = compareReports(report({ losses: [6.25] }), report({ losses: [6.25] }));
  assert.equal(one.rows.length, 3);
});

Deno.test("compareReports refuses runs of different experiments", () => {
  assert.throws(
    () => compareReports(report(), report({ batch: 3 })),
    /differ in batch: ours 2, PyTorch 3/,
  );
  assert.throws(
    () => compareReports(report(), report({ losses: [1] })),
    /differ in step count: ours 3, PyTorch 1/,
  );
  assert.throws(
    () => compareReports(report(), report({ gradNorms0: { "model.norm.weight": 0.01, x: 1 } })),
    /only ours has \[lm_head.weight\], only PyTorch has \[x\]/,
  );
});

Deno.test("formatComparison prints every row and the step-time ratio", () => {
  const torch = report({ medianStepMs: 140 });
  const text = formatComparison(compareReports(report(), torch), report(), torch);
  const lines = text.split("\n");
  assert.equal(lines.length, 2 + 4 + 2);
  assert.match(
    lines[2],
    /^\| loss, step 0 \| 6\.250000 \| 6\.250000 \| 0\.0e\+0 \| 1e-6 \| ok \|$/,
  );
  assert.match(lines[6], /70\.0 ms \| 140 ms \| ratio 0\.50x/);
  assert.match(lines[7], /^\| fastest step time \| 68\.0 ms \| 68\.0 ms \| ratio 1\.00x/);
});
