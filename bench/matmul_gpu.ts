/**
 * Matmul throughput on whatever adapter this machine has, for real GPUs:
 * `deno run -A bench/matmul_gpu.ts [--size 4096 | --shape m,n,k...] [--layout nn|nt|tn...]
 * [--reps 20] [--profile cpu|gpu] [--f16 | --bf16] [--tiling rows,cols,wx,wy,depth[,vec4[,db][,u][,g4][,kr]]]...
 * [--sweep] [--split-k auto|off|both] [--shapes 20m-4x256,20m-16x1024,1b-1x128]`.
 * Prints the adapter, then GFLOP/s per layout (mean over `reps` dispatches in one submit) and the
 * max abs error of a few sampled outputs against an f64 dot product, for the profile's tilings
 * (picked per shape, as in training, and named on each line), each `--tiling` given, or (`--sweep`) a set of workgroup-tiled shapes worth trying on a GPU. Shapes
 * are `size`³ unless `--shape` names others (a weight gradient: `--layout tn --shape
 * 256,256,16384`). `--split-k` runs the profile's split-K policy (`auto`, the default), none
 * (`off`), or both, one after the other, with the ratio (`both`). `--shapes` times candidate
 * tilings (the profile's own, and `--tiling`s or bench/matmul_shape_timing.ts's list) at every
 * matmul of the named models' training steps (`<model>-<B>x<T>`: config/models/llama-<model> at
 * B x T tokens) and prints per shape and per shape class the fastest tiling against the one the
 * profile's table picks (bench/matmul_shape_timing.ts).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { parseShapeSets } from "./matmul_shapes.ts";
import { meanDispatchMs, timeShapeSets } from "./matmul_shape_timing.ts";
import { randomF32 } from "../shaders/testing/kernels.ts";
import { decodeBf16, encodeBf16 } from "../model/mod.ts";
import {
  CPU_PROFILE,
  formatTiling,
  GPU_PROFILE,
  GpuRuntime,
  Matmul,
  type MatmulArgs,
  type MatmulLayout,
  type MatmulTiling,
  parseTiling,
  SPLIT_K_OFF,
} from "../shaders/mod.ts";
import { SWEEP } from "./matmul_sweep.ts";

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
    shape: { type: "string", multiple: true },
    layout: { type: "string", multiple: true },
    "split-k": { type: "string", default: "auto" },
    shapes: { type: "string" },
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

/** `--shape m,n,k` values, or the `size`³ cube. */
function shapes(): [number, number, number][] {
  if (!values.shape?.length) return [[size, size, size]];
  return values.shape.map((text) => {
    const dims = text.split(",").map(Number);
    if (dims.length !== 3 || dims.some((d) => !Number.isInteger(d) || d < 1)) {
      throw new RangeError(`--shape must be m,n,k with positive integers, got "${text}"`);
    }
    return dims as [number, number, number];
  });
}
const LAYOUTS: readonly MatmulLayout[] = ["nn", "nt", "tn"];
const layouts = (values.layout?.length ? values.layout : LAYOUTS) as MatmulLayout[];
for (const l of layouts) {
  if (!LAYOUTS.includes(l)) throw new RangeError(`--layout must be nn, nt or tn, got ${l}`);
}
const SPLIT_MODES: Record<string, ("auto" | "off")[]> = {
  auto: ["auto"],
  off: ["off"],
  both: ["off", "auto"],
};
const splitModes = SPLIT_MODES[values["split-k"]];
if (!splitModes) {
  throw new RangeError(`--split-k must be auto, off or both, got ${values["split-k"]}`);
}

using rt = await GpuRuntime.create({ profile });
console.log(
  `adapter: ${rt.adapterName}, f16: ${rt.hasF16}, subgroups: ${rt.hasSubgroups}, split-K policy ` +
    JSON.stringify(rt.profile.splitK),
);
if (values.shapes !== undefined) {
  const tilings = values.tiling?.map(parseTiling);
  await timeShapeSets(rt, { sets: parseShapeSets(values.shapes), reps, tilings });
  rt[Symbol.dispose]();
  Deno.exit(0);
}
if (values.f16 && values.bf16) throw new RangeError("--f16 and --bf16 exclude each other");
const inputType = values.f16 ? "f16" : values.bf16 ? "bf16" : "f32";
if (values.f16 && !rt.hasF16) throw new Error(`--f16: adapter has no shader-f16`);
// The model's bf16 encoder, not the tests' reference, which rounds by a search per value (15 s
// for two 4096² operands here; on the H200 the bf16 part passed its limit before its first
// product). rt.buffer rounds every buffer up to whole words, as the f16 operands rely on too.
const round = (x: Float32Array) =>
  values.f16 ? x.map(Math.f16round) : values.bf16 ? decodeBf16(encodeBf16(x)) : x;
const upload = (label: string, x: Float32Array) =>
  values.f16
    ? rt.buffer(label, new Uint16Array(new Float16Array(x).buffer))
    : values.bf16
    ? rt.buffer(label, encodeBf16(x))
    : rt.buffer(label, x);
// undefined: the profile's tilings, picked per shape as in training (shaders/matmul_picker.ts).
const tilings: (MatmulTiling | undefined)[] = values.sweep
  ? SWEEP.map(parseTiling)
  : values.tiling?.length
  ? values.tiling.map(parseTiling)
  : [undefined];
for (const [m, n, k] of shapes()) {
  const ha = round(randomF32(1, m * k)), hb = round(randomF32(2, k * n));
  const a = upload("a", ha), b = upload("b", hb), c = rt.buffer("c", m * n * 4);
  const cube = m === n && n === k ? "" : ` [m, n, k] = [${m}, ${n}, ${k}]`;
  for (const tiling of tilings) {
    console.log(
      tiling
        ? `tiling ${formatTiling(tiling)} (${tiling.strategy})${cube}:`
        : `tiling: the ${rt.profile.name} profile's pick per shape${cube}:`,
    );
    if (tiling) {
      try {
        new Matmul(rt, tiling)[Symbol.dispose]();
      } catch (e) {
        // No GFLOP/s line: run.sh's pick never sees a tiling with some layouts missing.
        if (!values.sweep || !(e instanceof RangeError)) throw e;
        console.log(`  skipped: ${e.message}`);
        continue;
      }
    }
    for (const layout of layouts) {
      const ms = new Map<string, number>();
      for (const mode of splitModes) {
        using mm = new Matmul(rt, tiling, mode === "off" ? { splitK: SPLIT_K_OFF } : {});
        const args: MatmulArgs = { a, b, c, m, n, k, layout, inputType };
        const plan = mm.splitK(args);
        const seconds = await meanDispatchMs(rt, (pass) => mm.encode(pass, args), reps) / 1000;
        ms.set(mode, seconds);
        const got = await rt.read(c);
        let err = 0;
        for (let s = 0; s < 16; s++) {
          const i = (s * 7919) % m, j = (s * 104729) % n;
          let want = 0;
          for (let p = 0; p < k; p++) {
            const av = layout === "tn" ? ha[p * m + i] : ha[i * k + p];
            const bv = layout === "nt" ? hb[j * k + p] : hb[p * n + j];
            want += av * bv;
          }
          err = Math.max(err, Math.abs(got[i * n + j] - want));
        }
        const gflops = (2 * m * n * k) / seconds / 1e9;
        const split = plan.slices > 1 ? `${plan.slices} slices of ${plan.sliceK}` : "unsplit";
        // The name of the square runs stays as it was (the GFLOP/s column run.sh's sweep reads).
        const what = values["split-k"] === "auto" ? "" : ` split-K ${mode} (${split})`;
        const picked = tiling ? "" : `, tiling ${formatTiling(mm.tilingFor(args))}`;
        console.log(
          `  ${layout} ${inputType} ${cube ? `${m}x${n}x${k}` : `${n}^3`}${what}: ${
            (seconds * 1e3).toFixed(3)
          } ms, ${gflops.toFixed(1)} GFLOP/s, max abs err (16 samples) ${
            err.toExponential(2)
          }${picked}`,
        );
      }
      if (ms.size === 2) {
        const ratio = ms.get("off")! / ms.get("auto")!;
        console.log(`  ${layout} time with split-K off ÷ auto: ${ratio.toFixed(2)}x`);
      }
    }
  }
  for (const buf of [a, b, c]) rt.destroyBuffer(buf);
}
