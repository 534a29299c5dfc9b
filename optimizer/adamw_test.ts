import assert from "node:assert/strict";
import { assertClose, randomF32 } from "../shaders/testing/kernels.ts";
import {
  AdamW,
  ADAMW_DEFAULTS,
  type AdamWConfig,
  adamwReferenceStep,
  clipScale,
  validateAdamWConfig,
} from "./adamw.ts";
import { GpuRuntime } from "../shaders/mod.ts";

Deno.test("adamwReferenceStep: first step moves each weight by lr·sign(g) after decay", () => {
  const params = new Float32Array([1, -2, 0.5, 0]);
  const grads = new Float32Array([0.3, -0.001, 5, 0]);
  const state = { params: params.slice(), m: new Float32Array(4), v: new Float32Array(4) };
  const config = { ...ADAMW_DEFAULTS, eps: 1e-12, maxGradNorm: 0 };
  adamwReferenceStep(state, grads, { ...config, lr: 0.01, stepNumber: 1 });
  // Bias-corrected m/sqrt(v) = g/|g| on the first step.
  const want = [1 * 0.999 - 0.01, -2 * 0.999 + 0.01, 0.5 * 0.999 - 0.01, 0];
  assertClose(state.params, want, 1e-6, "params");
});

Deno.test("clipScale follows torch's clip_grad_norm_", () => {
  assert.equal(clipScale(0.5, 1), 1);
  assert.ok(Math.abs(clipScale(4, 1) - 1 / (4 + 1e-6)) < 1e-15);
  assert.equal(clipScale(1e9, 0), 1);
  assert.throws(() => validateAdamWConfig({ ...ADAMW_DEFAULTS, beta2: 1 }), /beta2/);
  assert.throws(() => validateAdamWConfig({ ...ADAMW_DEFAULTS, eps: 0 }), /eps/);
});

async function gpuMatchesReference(config: AdamWConfig, seed: number, maxBindingBytes?: number) {
  using rt = await GpuRuntime.create();
  const size = 4 * 1000 + 64;
  const params0 = randomF32(seed, size);
  const params = rt.buffer("params", params0);
  const grads = rt.buffer("grads", size * 4);
  const sumsq = rt.buffer("sumsq", 4);
  using opt = new AdamW(rt, { size, config, maxBindingBytes });
  const ref = { params: params0.slice(), m: new Float32Array(size), v: new Float32Array(size) };
  for (let t = 1; t <= 4; t++) {
    const g = randomF32(seed + t, size, -3, 3);
    let s = 0;
    for (const x of g) s += x * x;
    rt.write(grads, g);
    rt.write(sumsq, new Float32Array([s]));
    const lr = 0.01 * t;
    const step = rt.beginStep(`adamw ${t}`);
    opt.encodeStep(step, {
      params,
      grads,
      lr,
      stepNumber: t,
      gradSumSq: config.maxGradNorm > 0 ? sumsq : null,
    });
    await step.submit();
    adamwReferenceStep(ref, g, { ...config, lr, stepNumber: t });
  }
  assertClose(await rt.read(opt.m[0]), ref.m, (i) => 1e-6 * (1 + Math.abs(ref.m[i])), "m");
  assertClose(await rt.read(opt.v[0]), ref.v, (i) => 1e-6 * (1 + Math.abs(ref.v[i])), "v");
  assertClose(await rt.read(params), ref.params, 1e-5, "params");
  // The update really moved the weights (a no-op kernel must fail this test).
  assert.ok(Math.abs(ref.params[0] - params0[0]) > 1e-3);
}

Deno.test("AdamW on the GPU matches the reference over 4 steps, without clipping", async () => {
  await gpuMatchesReference({ ...ADAMW_DEFAULTS, maxGradNorm: 0 }, 1);
});

Deno.test("AdamW on the GPU matches the reference over 4 steps, with clipping", async () => {
  await gpuMatchesReference({ ...ADAMW_DEFAULTS, maxGradNorm: 1 }, 2);
});

Deno.test("AdamW updates large buffers in binding-sized ranges", async () => {
  await gpuMatchesReference({ ...ADAMW_DEFAULTS, maxGradNorm: 1 }, 3, 1024);
});

Deno.test("AdamW rejects bad arguments", async () => {
  using rt = await GpuRuntime.create();
  assert.throws(() => new AdamW(rt, { size: 6, config: ADAMW_DEFAULTS }), /multiple of 4/);
  using opt = new AdamW(rt, { size: 8, config: ADAMW_DEFAULTS });
  const b = rt.buffer("b", 32);
  const step = rt.beginStep("bad");
  const args = { params: b, grads: b, lr: 0.1, stepNumber: 1, gradSumSq: null };
  assert.throws(() => opt.encodeStep(step, args), /needs gradSumSq/);
  assert.throws(() => opt.encodeStep(step, { ...args, stepNumber: 0, gradSumSq: b }), /stepNumber/);
  assert.throws(
    () => opt.encodeStep(step, { ...args, params: rt.buffer("s", 16), gradSumSq: b }),
    /params holds 4 floats, needs 8/,
  );
});
