import assert from "node:assert/strict";
import fc from "fast-check";
import { learningRate } from "./lr_schedule.ts";
import type { LrSchedule } from "./types.ts";

/** Relative closeness (absolute near zero), for values whose last bits depend on rounding. */
function assertClose(actual: number, expected: number, tolerance = 1e-12): void {
  const scale = Math.max(Math.abs(expected), 1e-9);
  assert.ok(
    Math.abs(actual - expected) <= tolerance * scale,
    `expected ${expected}, found ${actual}`,
  );
}

const warmup = { baseLr: 0.01, warmupSteps: 10, warmupInitLr: 0.001 };
const constant: LrSchedule = { kind: "Constant", ...warmup };
const linear: LrSchedule = { kind: "Linear", ...warmup, totalSteps: 100, finalLr: 0.0001 };
const cosine: LrSchedule = { kind: "Cosine", ...warmup, totalSteps: 110, finalLr: 0 };
const wsd: LrSchedule = {
  kind: "WarmupStableDecay",
  ...warmup,
  stableSteps: 60,
  cosineDecaySteps: 110,
  cosineDecayFinalLr: 0.001,
  linearDecaySteps: 20,
  linearDecayFinalLr: 0,
};

Deno.test("warmup rises linearly from warmupInitLr and reaches baseLr at warmupSteps", () => {
  for (const schedule of [constant, linear, cosine, wsd]) {
    assert.equal(learningRate(schedule, 0), 0.001, schedule.kind);
    assertClose(learningRate(schedule, 5), 0.0055);
    assertClose(learningRate(schedule, 9), 0.001 + 0.009 * 0.9);
    assert.equal(learningRate(schedule, 10), 0.01, schedule.kind);
  }
});

Deno.test("zero warmup steps starts at baseLr", () => {
  assert.equal(learningRate({ ...constant, warmupSteps: 0 }, 0), 0.01);
});

Deno.test("Constant stays at baseLr after warmup", () => {
  assert.equal(learningRate(constant, 100), 0.01);
  assert.equal(learningRate(constant, 0xffff_ffff), 0.01);
});

Deno.test("Linear goes from baseLr to finalLr between warmupSteps and totalSteps, then holds", () => {
  assertClose(learningRate(linear, 55), 0.01 + (0.0001 - 0.01) * 0.5);
  assertClose(learningRate(linear, 99), 0.01 - 0.0099 * (89 / 90));
  assert.equal(learningRate(linear, 100), 0.0001);
  assert.equal(learningRate(linear, 200), 0.0001);
});

Deno.test("Cosine matches Psyche's vector cosine(60) = 0.005 exactly and ends at finalLr", () => {
  // Psyche's CosineLR::new(0.01, 10, 0.001, 110, 0.0): base, warmup steps, warmup init, total, final.
  assert.equal(learningRate(cosine, 60), 0.005);
  assertClose(learningRate(cosine, 35), 0.01 * 0.5 * (1 + Math.SQRT1_2));
  assertClose(learningRate(cosine, 85), 0.01 * 0.5 * (1 - Math.SQRT1_2));
  assert.equal(learningRate(cosine, 110), 0);
});

Deno.test("Cosine is not clamped past totalSteps (Psyche's formula): it rises again", () => {
  assertClose(learningRate(cosine, 160), 0.005);
  assertClose(learningRate(cosine, 210), 0.01);
});

Deno.test("Cosine with baseLr == finalLr is flat after warmup", () => {
  assert.equal(learningRate({ ...cosine, finalLr: 0.01, totalSteps: 100 }, 50), 0.01);
});

Deno.test("WarmupStableDecay: stable, cosine, linear and final phases at each boundary", () => {
  assert.equal(learningRate(wsd, 30), 0.01);
  assert.equal(learningRate(wsd, 69), 0.01);
  // first cosine step, progress 0: 0.001 + 0.009 * 1 rounds to 0.010000000000000002 in f64,
  // exactly as Psyche's operation order gives it
  assert.equal(learningRate(wsd, 70), 0.010000000000000002);
  assertClose(learningRate(wsd, 125), 0.0055); // cosine midpoint
  assertClose(learningRate(wsd, 179), 0.001 + 0.009 * 0.5 * (1 + Math.cos(Math.PI * 109 / 110)));
  assert.equal(learningRate(wsd, 180), 0.001); // linear phase starts at cosineDecayFinalLr
  assertClose(learningRate(wsd, 190), 0.0005);
  assertClose(learningRate(wsd, 199), 0.00005);
  assert.equal(learningRate(wsd, 200), 0);
  assert.equal(learningRate(wsd, 250), 0);
});

Deno.test("WarmupStableDecay with every phase empty returns linearDecayFinalLr", () => {
  const empty: LrSchedule = {
    ...wsd,
    warmupSteps: 0,
    stableSteps: 0,
    cosineDecaySteps: 0,
    linearDecaySteps: 0,
    cosineDecayFinalLr: 0.001,
    linearDecayFinalLr: 0.001,
  };
  assert.equal(learningRate(empty, 0), 0.001);
});

Deno.test("learningRate rejects what Psyche panics on", () => {
  assert.throws(() => learningRate(constant, -1), RangeError);
  assert.throws(() => learningRate(constant, 1.5), RangeError);
  assert.throws(() => learningRate(constant, 2 ** 32), RangeError);
  assert.throws(() => learningRate({ ...cosine, totalSteps: 10 }, 10), /must exceed warmupSteps/);
  // still fine inside warmup, as in Psyche
  assert.equal(learningRate({ ...cosine, totalSteps: 10 }, 0), 0.001);
  assert.throws(() => learningRate({ ...wsd, cosineDecayFinalLr: 0.02 }, 0), RangeError);
  assert.throws(() => learningRate({ ...wsd, linearDecayFinalLr: 0.002 }, 300), RangeError);
});

const rate = fc.double({ min: 0, max: 1, noNaN: true });
const steps = fc.integer({ min: 0, max: 10_000 });

Deno.test("property: after warmup a decaying schedule stays between its end points", () => {
  fc.assert(
    fc.property(rate, rate, rate, steps, steps, steps, (a, b, init, w, extra, step) => {
      const [finalLr, baseLr] = a <= b ? [a, b] : [b, a];
      const totalSteps = w + extra + 1;
      for (const kind of ["Linear", "Cosine"] as const) {
        const schedule: LrSchedule = {
          kind,
          baseLr,
          warmupSteps: w,
          warmupInitLr: init,
          totalSteps,
          finalLr,
        };
        const lr = learningRate(schedule, step);
        const [lo, hi] = step < w
          ? [Math.min(init, baseLr), Math.max(init, baseLr)]
          : [finalLr, baseLr];
        const slack = 1e-15;
        assert.ok(lr >= lo - slack && lr <= hi + slack, `${kind} ${lr} not in [${lo}, ${hi}]`);
        if (kind === "Linear" || step <= totalSteps) {
          // monotone non-increasing after warmup until totalSteps
          if (step >= w && step + 1 <= totalSteps) {
            assert.ok(learningRate(schedule, step + 1) <= lr + slack);
          }
        }
      }
    }),
    { numRuns: 300 },
  );
});
