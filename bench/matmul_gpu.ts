/**
 * Square matmul throughput on whatever adapter this machine has, for real GPUs:
 * `deno run -A bench/matmul_gpu.ts [--size 4096] [--reps 20] [--profile cpu|gpu] [--f16 | --bf16]
 * [--tiling rows,cols,wx,wy,depth]... [--sweep]`.
 * Prints the adapter, then GFLOP/s per layout (mean over `reps` dispatches in one submit) and the
 * max abs error of a few sampled outputs against an f64 dot product, for the profile's tiling, each
 * `--tiling` given, or (`--sweep`) a set of workgroup-tiled shapes worth trying on a GPU.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { bf16Encode, bf16Round, randomF32 } from "../shaders/testing/kernels.ts";
import {
  CPU_PROFILE,
  formatTiling,
  GPU_PROFILE,
  GpuRuntime,
  Matmul,
  type MatmulLayout,
  type MatmulTiling,
  parseTiling,
} from "../shaders/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    size: { type: "string", default: "4096" },
    reps: { type: "string", default: "20" },
    profile: { type: "string" },
    f16: { type: "boolean", default: false },
    bf16: { type: "boolean", default: false },
    tiling: { type: "string", multiple: true },
    sweep: { type: "boolean", default: false },
  },
});
const size = Number(values.size), reps = Number(values.reps);
if (!Number.isInteger(size) || size < 1 || !Number.isInteger(reps) || reps < 1) {
  throw new RangeError(
    `--size and --reps must be positive integers, got ${values.size}, ${values.reps}`,
  );
}
const profile = values.profile === "cpu"
  ? CPU_PROFILE
  : values.profile === "gpu"
  ? GPU_PROFILE
  : values.profile === undefined
  ? undefined
  : (() => {
    throw new RangeError(`--profile must be cpu or gpu, got ${values.profile}`);
  })();

/** Workgroup-tiled shapes worth timing on a GPU (`--sweep`): tile sizes 64 to 128, depth 8-32. */
const SWEEP = [
  "4,4,16,16,16",
  "4,4,16,16,32",
  "8,8,16,16,8",
  "8,8,16,16,16",
  "8,4,16,16,16",
  "4,8,16,16,16",
  "8,8,8,8,16",
  "4,4,8,8,16",
];

using rt = await GpuRuntime.create({ profile });
console.log(`adapter: ${rt.adapterName}, f16: ${rt.hasF16}`);
const n = size;
if (values.f16 && values.bf16) throw new RangeError("--f16 and --bf16 exclude each other");
const inputType = values.f16 ? "f16" : values.bf16 ? "bf16" : "f32";
if (values.f16 && !rt.hasF16) throw new Error(`--f16: adapter has no shader-f16`);
const round = (x: Float32Array) =>
  values.f16 ? x.map(Math.f16round) : values.bf16 ? x.map(bf16Round) : x;
const ha = round(randomF32(1, n * n)), hb = round(randomF32(2, n * n));
const upload = (label: string, x: Float32Array) =>
  values.f16
    ? rt.buffer(label, new Uint16Array(new Float16Array(x).buffer))
    : values.bf16
    ? rt.buffer(label, bf16Encode(x))
    : rt.buffer(label, x);
const a = upload("a", ha), b = upload("b", hb), c = rt.buffer("c", n * n * 4);
const tilings: MatmulTiling[] = values.sweep
  ? SWEEP.map(parseTiling)
  : values.tiling?.length
  ? values.tiling.map(parseTiling)
  : [rt.profile.matmul];
for (const tiling of tilings) {
  const mm = new Matmul(rt, tiling);
  console.log(`tiling ${formatTiling(tiling)} (${tiling.strategy}):`);
  for (const layout of ["nn", "nt", "tn"] as MatmulLayout[]) {
    const warm = rt.beginStep("warmup");
    mm.encode(warm.pass, { a, b, c, m: n, n, k: n, layout, inputType });
    await warm.submit();
    const t0 = performance.now();
    const step = rt.beginStep("timed");
    for (let r = 0; r < reps; r++) {
      mm.encode(step.pass, { a, b, c, m: n, n, k: n, layout, inputType });
    }
    await step.submit();
    const seconds = (performance.now() - t0) / 1000 / reps;
    const got = await rt.read(c);
    let err = 0;
    for (let s = 0; s < 16; s++) {
      const i = (s * 7919) % n, j = (s * 104729) % n;
      let want = 0;
      for (let p = 0; p < n; p++) {
        const av = layout === "tn" ? ha[p * n + i] : ha[i * n + p];
        const bv = layout === "nt" ? hb[j * n + p] : hb[p * n + j];
        want += av * bv;
      }
      err = Math.max(err, Math.abs(got[i * n + j] - want));
    }
    const gflops = (2 * n ** 3) / seconds / 1e9;
    console.log(
      `  ${layout} ${inputType} ${n}^3: ${(seconds * 1e3).toFixed(2)} ms, ${
        gflops.toFixed(1)
      } GFLOP/s, max abs err (16 samples) ${err.toExponential(2)}`,
    );
  }
}
