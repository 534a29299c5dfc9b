import assert from "node:assert/strict";
import fc from "fast-check";
import {
  compareReports,
  DEFAULT_TOLERANCES,
  formatComparison,
  lossTolerance,
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
    "loss, step 2 (tolerance 1e-6 + 3e-5 a step)",
    "loss curve, steps 1-2: worst against its tolerance (step 2)",
  ]);
  assert.ok(Math.abs(c.rows[3].relDiff - 1e-7 / 6.0) < 1e-12);
  assert.equal(c.rows[3].tolerance, lossTolerance(DEFAULT_TOLERANCES, 2));
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
  // A one-step run has no last-loss or curve row.
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
  assert.equal(lines.length, 2 + 5 + 2);
  assert.match(
    lines[2],
    /^\| loss, step 0 \| 6\.250000 \| 6\.250000 \| 0\.0e\+0 \| 1e-6 \| ok \|$/,
  );
  assert.match(
    lines[5],
    /^\| loss, step 2 \(tolerance 1e-6 \+ 3e-5 a step\) \| .* \| 6\.1e-5 \| ok \|$/,
  );
  assert.match(lines[7], /70\.0 ms \| 140 ms \| ratio 0\.50x/);
  assert.match(lines[8], /^\| fastest step time \| 68\.0 ms \| 68\.0 ms \| ratio 1\.00x/);
});

/** Compares two loss curves with everything else equal. */
function curves(ours: number[], torch: number[]) {
  return compareReports(
    report({ losses: ours }),
    report({ engine: "pytorch-eager", losses: torch }),
  );
}

Deno.test("lossTolerance is the step-0 bound plus the same for every step", () => {
  assert.equal(lossTolerance(DEFAULT_TOLERANCES, 0), DEFAULT_TOLERANCES.loss0);
  fc.assert(
    fc.property(fc.nat(10_000), (s) => {
      const grown = lossTolerance(DEFAULT_TOLERANCES, s + 1) - lossTolerance(DEFAULT_TOLERANCES, s);
      assert.ok(Math.abs(grown - DEFAULT_TOLERANCES.lossPerStep) < 1e-15);
    }),
  );
});

Deno.test("the H200's honest 23-step curves pass, where a fixed 1e-5 on the last loss failed", () => {
  const c = curves(H200_OURS, H200_TORCH);
  const text = c.rows.map((r) => `${r.quantity}: ${r.relDiff} / ${r.tolerance}`).join("\n");
  assert.ok(c.ok, text);
  const [last, curve] = c.rows.slice(3);
  assert.equal(last.quantity, "loss, step 22 (tolerance 1e-6 + 3e-5 a step)");
  assert.ok(last.relDiff > 2.9e-5 && last.relDiff < 3.0e-5, text); // the run's 3.0e-5
  assert.ok(last.relDiff * 10 < last.tolerance, text);
  // Step 19 (3.2e-5) is the curve's nearest to its tolerance, a tenth of it at most.
  assert.match(curve.quantity, /^loss curve, steps 1-22: worst against its tolerance \(step 19\)$/);
  assert.ok(curve.relDiff * 10 < curve.tolerance, text);
  // Our engine on lavapipe sums in other orders again: honest too, against either H200 curve.
  for (const other of [H200_OURS, H200_TORCH]) assert.ok(curves(LAVAPIPE_OURS, other).ok);
});

Deno.test("a bug that shows at one step fails the curve row though the last loss agrees", () => {
  const torch = H200_OURS.map((x, s) => s === 5 ? x * (1 + 1e-3) : x);
  const c = curves(H200_OURS, torch);
  assert.equal(c.ok, false);
  const [last, curve] = c.rows.slice(3);
  assert.ok(last.ok);
  assert.equal(curve.ok, false);
  assert.match(curve.quantity, /\(step 5\)$/);
  assert.equal(curve.tolerance, lossTolerance(DEFAULT_TOLERANCES, 5));
});

Deno.test("seeded optimizer bugs fail on both loss rows: lr x 1.01, β2 0.99", () => {
  for (const bug of [LAVAPIPE_LR_X1_01, LAVAPIPE_BETA2_0_99]) {
    const c = curves(LAVAPIPE_OURS, bug);
    assert.equal(c.ok, false);
    assert.ok(c.rows.slice(0, 3).every((r) => r.ok)); // step 0 is before any update
    const [last, curve] = c.rows.slice(3);
    const text = `${last.relDiff} / ${last.tolerance}, ${curve.quantity}: ${curve.relDiff}`;
    assert.ok(last.relDiff > 5 * last.tolerance, text);
    assert.ok(curve.relDiff > 50 * curve.tolerance, text);
  }
});

// Loss curves of llama-20m, 4 x 256, seed 1, AdamW lr 1e-3, 3 warm-up + 20 timed steps
// (docs/benchmarks.md, "The loss curve's tolerance"): our engine and PyTorch on an NVIDIA H200
// (2026-11-30, bench/torch/compare.ts --device cuda), and our engine on lavapipe (CPU profile).
const H200_OURS = [
  10.449185743518903,
  10.078571808571908,
  9.608231908199834,
  9.242291987643522,
  8.888414737290027,
  8.521353498159671,
  8.132343798057706,
  7.740449725412855,
  7.343373878329408,
  6.975665406619801,
  8.813459631040985,
  6.340083935214024,
  6.030761464904336,
  6.176857925396339,
  5.5676316279991,
  5.366345210168876,
  5.096151657197989,
  4.854067156361599,
  4.611597572120965,
  4.4502726101407815,
  4.246843611960317,
  3.981208876535004,
  3.811479858791127,
];
const H200_TORCH = [
  10.449186325073242,
  10.078571319580078,
  9.608231544494629,
  9.242292404174805,
  8.888415336608887,
  8.521353721618652,
  8.132344245910645,
  7.740449905395508,
  7.3433732986450195,
  6.975663661956787,
  8.813525199890137,
  6.340083122253418,
  6.030765056610107,
  6.176862716674805,
  5.567635536193848,
  5.366363525390625,
  5.096168518066406,
  4.854089260101318,
  4.611640930175781,
  4.45041561126709,
  4.246791839599609,
  3.9812185764312744,
  3.8113672733306885,
];
const LAVAPIPE_OURS = [
  10.449186191371844,
  10.078572323743035,
  9.608232489754172,
  9.242292501879673,
  8.888415406731998,
  8.521353990423913,
  8.132344395974103,
  7.740450387842515,
  7.343374467363544,
  6.975666576740789,
  8.813476865431841,
  6.3400854021895166,
  6.030764825671327,
  6.17687497699962,
  5.567637232238171,
  5.366363483784245,
  5.096162990962758,
  4.854087278889675,
  4.611644313849655,
  4.450457131161409,
  4.246735094107834,
  3.9811873267678655,
  3.811240435581581,
];

// The lavapipe run with lr 1.01e-3 instead of 1e-3.
const LAVAPIPE_LR_X1_01 = [
  10.449186191371844,
  10.078675537483365,
  9.605194606033026,
  9.235916760388543,
  8.87883293207954,
  8.509065991756962,
  8.1173756089865,
  7.723979928914239,
  7.32440916369943,
  6.946275241234723,
  8.799449682703205,
  6.306090148757486,
  6.012858459061268,
  5.762223459692562,
  5.571410749940311,
  5.294883126371047,
  5.072131308854795,
  4.90264280870849,
  4.632226993990879,
  4.392108838230956,
  4.201400855943269,
  3.989054613487393,
  3.762166118154339,
];

// The lavapipe run with AdamW β2 0.99 instead of 0.95.
const LAVAPIPE_BETA2_0_99 = [
  10.449186191371844,
  10.078572323743035,
  9.607950368582033,
  9.23864278419345,
  8.879845114782745,
  8.506841671233083,
  8.111930039817212,
  7.714898804122327,
  7.312268857862435,
  6.9345219224107035,
  8.927182245254517,
  6.300681219848932,
  5.99903009779313,
  5.82560750690161,
  5.5943946688782935,
  5.329828556378683,
  5.140423131456562,
  4.873755525607689,
  4.634545726402133,
  4.411470079889485,
  4.182583023987564,
  3.9719286628797943,
  3.7933642396739886,
];
