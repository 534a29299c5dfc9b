import assert from "node:assert/strict";
import { CrossEntropy, IGNORE_INDEX } from "./cross_entropy.ts";
import { GpuRuntime } from "./gpu.ts";
import { crossEntropyRef } from "./reference/cross_entropy.ts";
import { assertClose, F32_EPS, randomF32, randomInts } from "./testing/kernels.ts";

for (const rowReduction of ["invocation", "workgroup"] as const) {
  Deno.test(`cross-entropy forward and backward match the f64 reference (${rowReduction} rows)`, async () => {
    using rt = await GpuRuntime.create();
    // [n, v, fraction ignored, logit range R]: R = 60 overflows exp without the max subtraction.
    const cases = [
      [1, 1, 0, 8],
      [37, 5, 0.2, 8],
      [130, 333, 0.3, 8],
      [9, 1000, 1, 8],
      [7, 50, 0, 60],
    ];
    for (const [index, [n, v, ignored, range]] of cases.entries()) {
      const ce = new CrossEntropy(rt, 64, [1, 16, 7][index % 3], rowReduction);
      const logits = randomF32(n * v, n * v, -range, range);
      const targets = Int32Array.from(randomInts(n + v, n, v));
      const drop = randomF32(n + v + 1, n, 0, 1);
      for (let i = 0; i < n; i++) if (drop[i] < ignored) targets[i] = IGNORE_INDEX;
      const gl = rt.buffer("logits", logits), gt = rt.buffer("targets", targets);
      const lse = rt.buffer("lse", n * 4), losses = rt.buffer("losses", n * 4);
      const out = rt.buffer("out", 8), dLogits = rt.buffer("dLogits", n * v * 4);
      const inPlace = rt.buffer("in place", logits), fused = rt.buffer("fused", logits);
      const fusedLse = rt.buffer("fused lse", n * 4),
        fusedLosses = rt.buffer("fused losses", n * 4);
      const fusedOut = rt.buffer("fused out", 8);
      const counted = targets.filter((t) => t !== IGNORE_INDEX).length;
      const step = rt.beginStep("cross-entropy");
      ce.fused(step.pass, {
        logits: fused,
        targets: gt,
        lse: fusedLse,
        losses: fusedLosses,
        out: fusedOut,
        n,
        v,
        gradScale: counted > 0 ? 0.5 / counted : 0,
      });
      ce.forward(step.pass, { logits: gl, targets: gt, lse, losses, out, n, v });
      ce.backward(step.pass, { logits: gl, targets: gt, lse, out, dLogits, n, v, scale: 0.5 });
      ce.backward(step.pass, { logits: inPlace, targets: gt, lse, out, n, v, scale: 0.5 });
      await step.submit();
      const ref = crossEntropyRef(logits, targets, n, v);
      const [loss, count] = await rt.read(out);
      assert.equal(count, ref.count);
      // lse: the sum of v exponentials (exp ≤ 3 + 2·2R ulp each, |logit − max| ≤ 2R) has relative
      // error ≤ (v + 8 + 4R)·u; log adds 3 ulp. The mean adds n roundings.
      const lseTol = (i: number) => (v + 8 + 4 * range + 4 * Math.abs(ref.lse[i])) * F32_EPS;
      assertClose(await rt.read(lse), ref.lse, lseTol, `lse n=${n} v=${v}`);
      const maxLse = Math.max(...Array.from(ref.lse, Math.abs));
      assertClose(
        [loss],
        [ref.loss],
        (v + 8 + 4 * range + n + 4 * maxLse) * F32_EPS * (1 + ref.loss),
        "loss",
      );
      // dLogits: prob = exp(l − lse) with relative error ≤ lse's error + (3 + 2|l − lse|) ulp.
      const dTol = (i: number) => {
        const r = Math.floor(i / v);
        const prob = Math.exp(logits[i] - ref.lse[r]);
        const rel = lseTol(r) + (6 + 2 * Math.abs(logits[i] - ref.lse[r])) * F32_EPS;
        return 0.5 * (prob * rel * 2 + 2 * F32_EPS) / Math.max(1, ref.count) + 1e-30;
      };
      const want = ref.dLogits.map((g) => g * 0.5);
      assertClose(await rt.read(dLogits), want, dTol, `dLogits n=${n} v=${v}`);
      assert.deepEqual(
        await rt.read(inPlace),
        await rt.read(dLogits),
        "in place gives the same bits",
      );
      // The fused pass computes the same lse, losses and mean bit for bit, and gradients within
      // one rounding of the separate backward's (scale/count is rounded on the host, not the GPU).
      assert.deepEqual(await rt.read(fusedLse), await rt.read(lse), "fused lse");
      assert.deepEqual(await rt.read(fusedOut), await rt.read(out), "fused loss and count");
      assertClose(
        await rt.read(fused),
        want,
        (i) => dTol(i) + 2 * F32_EPS * Math.abs(want[i]),
        "fused",
      );
    }
  });
}

Deno.test("cross-entropy gives NaN for an out-of-range target", async () => {
  using rt = await GpuRuntime.create();
  const ce = new CrossEntropy(rt);
  const logits = rt.buffer("logits", new Float32Array([1, 2, 3, 4]));
  const targets = rt.buffer("targets", new Int32Array([1, 7]));
  const lse = rt.buffer("lse", 8), losses = rt.buffer("losses", 8), out = rt.buffer("out", 8);
  const step = rt.beginStep("bad target");
  ce.forward(step.pass, { logits, targets, lse, losses, out, n: 2, v: 2 });
  await step.submit();
  assert.ok(Number.isNaN((await rt.read(out))[0]));
});

Deno.test("cross-entropy over vocabulary blocks equals the one-pass kernel, bit for bit", async () => {
  using rt = await GpuRuntime.create();
  const n = 23, v = 101, widths = [32, 40, 8, 21];
  const ce = new CrossEntropy(rt, 64);
  const logits = randomF32(1, n * v, -30, 30);
  const targets = Int32Array.from(randomInts(2, n, v));
  targets[4] = IGNORE_INDEX;
  targets[7] = v + 2; // out of range: NaN loss and gradient row, in both
  targets[9] = 0; // first column of the first block
  targets[10] = v - 1; // last column of the last block
  const gt = rt.buffer("targets", targets);
  const scratch = (label: string, floats: number) => rt.buffer(label, floats * 4);
  const whole = {
    logits: rt.buffer("logits", logits),
    lse: scratch("lse", n),
    losses: scratch("losses", n),
    out: scratch("out", 2),
  };
  const evalWhole = { ...whole, logits: rt.buffer("eval logits", logits), out: scratch("o", 2) };
  const blocks = (tag: string) => {
    let start = 0;
    return widths.map((width) => {
      const cols = new Float32Array(n * width);
      for (let r = 0; r < n; r++) {
        cols.set(logits.subarray(r * v + start, r * v + start + width), r * width);
      }
      const block = { logits: rt.buffer(`${tag} block ${start}`, cols), start, width };
      start += width;
      return block;
    });
  };
  const split = {
    blocks: blocks("train"),
    lse: scratch("split lse", n),
    losses: scratch("split losses", n),
    out: scratch("split out", 2),
  };
  const evalSplit = { ...split, blocks: blocks("eval"), losses: scratch("eval losses", n) };
  const state = scratch("state", 2 * n);
  const step = rt.beginStep("blocked");
  const common = { targets: gt, n, v };
  ce.fused(step.pass, { ...common, ...whole, gradScale: 0.37 });
  ce.blocked(step.pass, { ...common, ...split, state, gradScale: 0.37 });
  ce.forward(step.pass, { ...common, ...evalWhole });
  ce.blocked(step.pass, { ...common, ...evalSplit, state });
  await step.submit();
  const bits = async (b: GPUBuffer) => new Uint32Array((await rt.read(b)).buffer);
  for (const key of ["lse", "losses", "out"] as const) {
    assert.deepEqual(await bits(split[key]), await bits(whole[key]), key);
  }
  assert.deepEqual(await bits(evalSplit.losses), await bits(evalWhole.losses), "eval losses");
  const grad = new Uint32Array((await rt.read(whole.logits)).buffer);
  for (const b of split.blocks) {
    const got = await bits(b.logits);
    for (let r = 0; r < n; r++) {
      const want = grad.subarray(r * v + b.start, r * v + b.start + b.width);
      assert.deepEqual(got.subarray(r * b.width, (r + 1) * b.width), want, `row ${r}`);
    }
  }
  assert.ok(Number.isNaN((await rt.read(split.losses))[7]));
  // Evaluation leaves the logits alone.
  assert.deepEqual(await rt.read(evalSplit.blocks[2].logits), await rt.read(blocks("x")[2].logits));
});

Deno.test("cross-entropy blocked refuses blocks that do not tile the vocabulary", async () => {
  using rt = await GpuRuntime.create();
  const ce = new CrossEntropy(rt);
  using step = rt.beginStep("bad blocks");
  const b = (start: number, width: number) => ({ logits: rt.buffer("l", 4 * width), start, width });
  const args = {
    n: 1,
    v: 10,
    targets: rt.buffer("t", 4),
    lse: rt.buffer("lse", 4),
    losses: rt.buffer("losses", 4),
    out: rt.buffer("out", 8),
    state: rt.buffer("state", 8),
  };
  assert.throws(
    () => ce.blocked(step.pass, { ...args, blocks: [b(0, 4), b(5, 5)] }),
    /block 1 starts at column 5, expected 4/,
  );
  assert.throws(
    () => ce.blocked(step.pass, { ...args, blocks: [b(0, 4), b(4, 5)] }),
    /blocks cover 9 columns, the vocabulary has 10/,
  );
});
