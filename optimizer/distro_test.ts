import assert from "node:assert/strict";
import { scatterMean } from "./compress.ts";
import { decode } from "./dct.ts";
import {
  clipGradNorm,
  type DistroConfig,
  distroConfig,
  DistroReference,
  type NamedParam,
  validateDistroConfig,
} from "./distro.ts";
import type { DistroResult } from "./result.ts";

function rng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
}

function makeParams(seed: number): NamedParam[] {
  const r = rng(seed);
  return [
    { name: "w", shape: [16, 24], data: Float32Array.from({ length: 384 }, r) },
    { name: "norm", shape: [24], data: Float32Array.from({ length: 24 }, r) },
  ];
}

const CONFIG: DistroConfig = {
  chunk: 8,
  topk: 3,
  decay: 0.9,
  weightDecay: null,
  clipGradNorm: null,
  quantize1bit: true,
};

Deno.test("distroConfig reads Psyche's OptimizerDefinition", () => {
  const cfg = distroConfig({
    kind: "Distro",
    clipGradNorm: 1,
    weightDecay: 0.1,
    compressionDecay: 0.999,
    compressionTopk: 8,
    compressionChunk: 64,
    quantize1bit: true,
  });
  assert.deepEqual(cfg, {
    chunk: 64,
    topk: 8,
    decay: 0.999,
    weightDecay: 0.1,
    clipGradNorm: 1,
    quantize1bit: true,
  });
  assert.throws(() => distroConfig({ kind: "Dummy" }), /expected a Distro.*Dummy/);
});

Deno.test("validateDistroConfig names the bad field", () => {
  assert.throws(() => validateDistroConfig({ ...CONFIG, chunk: 300 }), /compression_chunk.*300/);
  assert.throws(() => validateDistroConfig({ ...CONFIG, topk: 0 }), /compression_topk.*0/);
  assert.throws(() => validateDistroConfig({ ...CONFIG, decay: 1.5 }), /compression_decay.*1.5/);
  assert.throws(() => validateDistroConfig({ ...CONFIG, weightDecay: -1 }), /weight_decay.*-1/);
  assert.throws(() => validateDistroConfig({ ...CONFIG, clipGradNorm: NaN }), /clip_grad_norm/);
  assert.doesNotThrow(() => validateDistroConfig(CONFIG));
});

Deno.test("clipGradNorm scales only when the norm exceeds the bound", () => {
  const g = [Float32Array.from([3, 0]), Float32Array.from([4])];
  assert.equal(clipGradNorm(g, 10), 5);
  assert.deepEqual([...g[0], ...g[1]], [3, 0, 4]);
  assert.equal(clipGradNorm(g, 1), 5);
  const n = Math.hypot(g[0][0], g[1][0]);
  assert.ok(Math.abs(n - 1) < 1e-6, `clipped norm ${n}`);
});

Deno.test("generate clips the gradients' global norm without touching the caller's arrays", () => {
  const params = makeParams(5);
  const opt = new DistroReference(params, { ...CONFIG, clipGradNorm: 0.5, decay: 1 });
  const grads = params.map((p) => new Float32Array(p.data.length).fill(1));
  opt.generate(grads, 1);
  assert.ok(grads.every((g) => g.every((x) => x === 1)));
  let sq = 0;
  for (const d of opt.delta) for (const x of d) sq += x * x;
  assert.ok(Math.abs(Math.sqrt(sq) - 0.5) < 1e-5, `clipped norm ${Math.sqrt(sq)}`);
});

Deno.test("generate: δ = decay·(δ − own previous transmission) + lr·g, and what is sent", () => {
  const params = makeParams(1);
  const opt = new DistroReference(params, CONFIG);
  const r = rng(9);
  const g1 = params.map((p) => Float32Array.from({ length: p.data.length }, r));
  const g2 = params.map((p) => Float32Array.from({ length: p.data.length }, r));
  const first = opt.generate(g1, 0.5);
  for (const [n, d] of opt.delta.entries()) {
    for (let i = 0; i < d.length; i++) assert.equal(d[i], Math.fround(0.5 * g1[n][i]));
  }
  // Transmitted values are the signs of the kept (unquantized) ones.
  for (const [n, t] of first.transmit.entries()) {
    assert.deepEqual(t.indices, first.own[n].indices);
    for (let e = 0; e < t.values.length; e++) {
      assert.equal(t.values[e], first.own[n].values[e] < 0 ? -1 : 1);
    }
  }
  const before = opt.delta.map((d) => d.slice());
  opt.generate(g2, 0.25);
  for (const [n, d] of opt.delta.entries()) {
    const layout = opt.layouts[n];
    const sent = decode(layout, scatterMean(layout, [first.own[n]]));
    for (let i = 0; i < d.length; i++) {
      const want = Math.fround(0.9) * Math.fround(before[n][i] - sent[i]) + 0.25 * g2[n][i];
      assert.ok(Math.abs(d[i] - want) < 1e-6, `param ${n} element ${i}: ${d[i]} vs ${want}`);
    }
  }
});

Deno.test("lookahead is undone exactly by generate; weight decay scales θ", () => {
  const params = makeParams(2);
  const opt = new DistroReference(params, { ...CONFIG, weightDecay: 0.1 });
  const grads = params.map((p) => new Float32Array(p.data.length).fill(0.3));
  opt.lookahead(0.1); // no previous result yet: no-op
  opt.generate(grads, 0.01);
  const theta = params.map((p) => p.data.slice());
  opt.lookahead(0.01);
  assert.notDeepEqual(params[0].data, theta[0]);
  for (const [n, p] of params.entries()) {
    for (let i = 0; i < p.data.length; i++) {
      assert.equal(
        p.data[i],
        Math.fround(theta[n][i] - Math.fround(0.01) * Math.sign(opt.delta[n][i])),
      );
    }
  }
  opt.generate(grads, 0.02);
  const factor = Math.fround(1 - 0.02 * 0.1);
  for (const [n, p] of params.entries()) {
    for (let i = 0; i < p.data.length; i++) {
      assert.equal(p.data[i], Math.fround(theta[n][i] * factor));
    }
  }
});

Deno.test("apply: θ moves by exactly lr where the update is nonzero, in any arrival order", () => {
  const base = makeParams(3);
  const results: DistroResult[] = [];
  for (let peer = 0; peer < 3; peer++) {
    {
      // Unquantized (bf16-mode) values: f64 sums depend on order, so apply sorts canonically.
      const opt = new DistroReference(makeParams(3), { ...CONFIG, quantize1bit: false });
      const r = rng(100 + peer);
      const gen = opt.generate(base.map((p) => Float32Array.from({ length: p.data.length }, r)), 1);
      results.push(
        DistroReference.result({
          step: 5,
          batch: { start: peer * 10, end: peer * 10 + 9 },
          trainerNonce: 0,
        }, gen),
      );
    }
  }
  const orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
  let reference: Float32Array[] | null = null;
  for (const order of orders) {
    const params = makeParams(3);
    const opt = new DistroReference(params, CONFIG);
    assert.equal(opt.apply(order.map((i) => results[i]), 0.125), true);
    const now = params.map((p) => p.data);
    if (!reference) {
      reference = now;
      let moved = 0;
      for (const [n, p] of now.entries()) {
        for (let i = 0; i < p.length; i++) {
          const step = Math.abs(p[i] - base[n].data[i]);
          if (step !== 0) {
            moved++;
            assert.ok(Math.abs(step - 0.125) < 1e-6, `moved by ${step}`);
          }
        }
      }
      assert.ok(moved > 300, `only ${moved} elements moved`);
    } else {
      assert.deepEqual(now, reference, `order ${order}`);
    }
  }
  // A lookahead still active is undone before the update.
  const look = makeParams(3);
  const lookOpt = new DistroReference(look, CONFIG);
  lookOpt.generate(look.map((p) => p.data.map(() => 1)), 0.01);
  lookOpt.lookahead(0.5);
  assert.notDeepEqual(look.map((p) => p.data), makeParams(3).map((p) => p.data));
  lookOpt.apply(results, 0.125);
  assert.deepEqual(look.map((p) => p.data), reference);
  const params = makeParams(3);
  const opt = new DistroReference(params, CONFIG);
  assert.equal(opt.apply([], 1), false);
  assert.deepEqual(params, makeParams(3));
  assert.throws(() => opt.apply([results[0], results[0]], 1), /two results for batch \[0, 9\]/);
});

Deno.test("single-worker DisTrO descends a quadratic", () => {
  const r = rng(4);
  const target = [Float32Array.from({ length: 64 * 64 }, r), Float32Array.from({ length: 64 }, r)];
  const params: NamedParam[] = [
    { name: "w", shape: [64, 64], data: new Float32Array(64 * 64) },
    { name: "b", shape: [64], data: new Float32Array(64) },
  ];
  const opt = new DistroReference(params, { ...CONFIG, chunk: 16, topk: 8, decay: 0.95 });
  const loss = () => {
    let s = 0;
    for (const [n, p] of params.entries()) {
      for (let i = 0; i < p.data.length; i++) s += (p.data[i] - target[n][i]) ** 2;
    }
    return s / 2;
  };
  const start = loss();
  let prev: DistroResult | null = null;
  for (let step = 1; step <= 60; step++) {
    const lr = 0.02;
    if (prev) opt.apply([prev], lr);
    opt.lookahead(lr);
    const grads = params.map((p, n) => p.data.map((x, i) => x - target[n][i]));
    const gen = opt.generate(grads, lr);
    prev = DistroReference.result({ step, batch: { start: 0, end: 0 }, trainerNonce: 0 }, gen);
  }
  const end = loss();
  assert.ok(end < start * 0.5, `loss ${start} → ${end}`);
});
