/**
 * Matmul against the adapter's own FMA ceiling, for CPU adapters (lavapipe/llvmpipe):
 * `deno run -A bench/matmul_cpu.ts [--rounds 5] [--shapes all|small] [--variants a,b] [--numpy]`.
 *
 * One run measures, round after round (so every kernel sees the same load from other work): a
 * pure-FMA WGSL kernel (no memory traffic in its loop: the most GFLOP/s WGSL gets from this
 * adapter), then every matmul candidate at the ~20M Llama's training shapes (N = B·T = 1024, C =
 * 256, F = 768, V = 32000; forward `nt`, input gradient `nn`, weight gradient `tn`). It prints the
 * median GFLOP/s of each and its ratio to the median ceiling, plus the adapter, CPU and load.
 * `--numpy` adds numpy's matmul (a native BLAS, OpenBLAS in most wheels) at the same shapes in the
 * same rounds, run by `python3` on host arrays: the gap a native path would close.
 *
 * Two clocks: wall time, and CPU time (every thread of this process, lavapipe's workers
 * included, from `/proc/self/task/* /schedstat`). Other work on a shared machine stretches wall
 * time; CPU time counts only the cycles this process got, so its ratios move far less with load.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { randomF32 } from "../shaders/testing/kernels.ts";
import {
  bindTensors,
  CPU_PROFILE,
  dispatch,
  GpuRuntime,
  Matmul,
  type MatmulLayout,
  type MatmulTiling,
  type MatmulVariant,
} from "../shaders/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    rounds: { type: "string", default: "5" },
    shapes: { type: "string", default: "all" },
    variants: { type: "string" },
    numpy: { type: "boolean", default: false },
  },
});
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1) {
  throw new RangeError(`--rounds must be a positive integer, got ${values.rounds}`);
}

/** [name, layout, m, n, k]: one matmul of a training step (C[m, n], reduction k). */
type Shape = [string, MatmulLayout, number, number, number];
const SHAPES: Shape[] = [
  ["up fwd      [1024,256]x[768,256]ᵀ", "nt", 1024, 768, 256],
  ["down fwd    [1024,768]x[256,768]ᵀ", "nt", 1024, 256, 768],
  ["down dx     [1024,256]x[256,768]", "nn", 1024, 768, 256],
  ["down dW     [1024,256]ᵀx[1024,768]", "tn", 256, 768, 1024],
  ["head fwd    [1024,256]x[32000,256]ᵀ", "nt", 1024, 32000, 256],
  ["head dx     [1024,32000]x[32000,256]", "nn", 1024, 256, 32000],
  ["head dW     [1024,32000]ᵀx[1024,256]", "tn", 32000, 256, 1024],
];
const shapes = values.shapes === "small"
  ? SHAPES.filter(([, , m, n, k]) => m * n * k < 1e9)
  : values.shapes === "all"
  ? SHAPES
  : (() => {
    throw new RangeError(`--shapes must be all or small, got ${values.shapes}`);
  })();

/** A matmul candidate: the variant forced on every shape (or per layout), under one tiling. */
interface Candidate {
  readonly name: string;
  readonly variant?: MatmulVariant | Partial<Record<MatmulLayout, MatmulVariant>>;
  readonly tiling: MatmulTiling;
}
const reg = (rows: number, cols: number, wx: number, wy: number): MatmulTiling => ({
  strategy: "register",
  rows,
  cols,
  workgroup: [wx, wy],
  depth: 0,
});
/** The CPU profile before the vec4/packed variants: `outer`, `nt` via `transposed`, 8×16. */
const BEFORE = "before: outer/transposed 8x16";
const CANDIDATES: Candidate[] = [
  {
    name: BEFORE,
    variant: { nn: "outer", tn: "outer", nt: "transposed" },
    tiling: reg(8, 16, 8, 8),
  },
  { name: "profile", tiling: CPU_PROFILE.matmul },
  { name: "vec4 8x16", variant: "vec4", tiling: reg(8, 16, 8, 8) },
  { name: "vec4 16x16", variant: "vec4", tiling: reg(16, 16, 8, 8) },
  { name: "vec4 16x32", variant: "vec4", tiling: reg(16, 32, 8, 8) },
  { name: "vec4 16x16 wg 64x1", variant: "vec4", tiling: reg(16, 16, 64, 1) },
  { name: "packed 16x16", variant: "packed", tiling: reg(16, 16, 8, 8) },
  { name: "packed 16x32", variant: "packed", tiling: reg(16, 32, 8, 8) },
];
const picked = values.variants?.split(",");
const candidates = picked ? CANDIDATES.filter((c) => picked.includes(c.name)) : CANDIDATES;

using rt = await GpuRuntime.create();
const cpuModel = (await Deno.readTextFile("/proc/cpuinfo").catch(() => ""))
  .match(/model name\s*:\s*(.*)/)?.[1] ?? "unknown";
console.log(`adapter: ${rt.adapterName}; driver: ${rt.info.description || "?"}`);
console.log(
  `cpu: ${cpuModel}, ${navigator.hardwareConcurrency} threads; ${new Date().toISOString()}`,
);
console.log(`load average at start: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);

// --- the ceiling: independent vec4 FMA chains, no loads in the loop ---
const CHAINS = 8, ITERS = 2000, CEIL_INVOCATIONS = 65536, CEIL_WG = 64;
const ceilingWgsl = `struct P { iters: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(${CEIL_WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let x = f32(g.x) * 1e-7;
  let y = 1.0 - f32(g.x) * 1e-9;
${range(CHAINS).map((i) => `  var a${i} = vec4<f32>(x + ${i}.0, x, 2.0 * x, x + 1.0);`).join("\n")}
  for (var i = 0u; i < p.iters; i++) {
${range(CHAINS).map((i) => `    a${i} = fma(a${i}, vec4<f32>(y), vec4<f32>(x));`).join("\n")}
  }
  o[g.x] = ${range(CHAINS).map((i) => `dot(a${i}, vec4<f32>(1.0))`).join(" + ")};
}`;
const ceilOut = rt.buffer("ceiling out", CEIL_INVOCATIONS * 4);
const ceilPipe = rt.pipeline("bench/fma-ceiling", () => ceilingWgsl);
const ceilGroup = bindTensors(rt, ceilPipe, [ITERS, 0, 0, 0], [ceilOut]);
const ceilFlop = CEIL_INVOCATIONS * ITERS * CHAINS * 4 * 2;

/** GFLOP/s of `gflop` of work run by `work`, by wall time and by this process's CPU time. */
interface Rate {
  readonly wall: number;
  readonly cpu: number;
}

async function rate(gflop: number, work: () => Promise<void>): Promise<Rate> {
  const w0 = performance.now(), c0 = cpuSeconds();
  await work();
  return { wall: gflop / ((performance.now() - w0) / 1000), cpu: gflop / (cpuSeconds() - c0) };
}

/** Seconds on CPU of every thread of this process (Linux; 0 elsewhere). */
function cpuSeconds(): number {
  let ns = 0;
  try {
    for (const t of Deno.readDirSync("/proc/self/task")) {
      try {
        ns += Number(Deno.readTextFileSync(`/proc/self/task/${t.name}/schedstat`).split(" ")[0]);
      } catch {
        // The thread ended between listing and reading.
      }
    }
  } catch {
    return 0;
  }
  return ns / 1e9;
}

function timeCeiling(): Promise<Rate> {
  return rate(ceilFlop / 1e9, async () => {
    const step = rt.beginStep("fma ceiling");
    dispatch(step.pass, ceilPipe, ceilGroup, [CEIL_INVOCATIONS / CEIL_WG, 1, 1]);
    await step.submit();
  });
}

// --- the matmuls ---
const kernels = new Map(candidates.map((c) => [c.name, new Matmul(rt, c.tiling)]));
const operands = shapes.map(([, , m, n, k]) => ({
  a: rt.buffer("a", randomF32(1, m * k)),
  b: rt.buffer("b", randomF32(2, n * k)),
  c: rt.buffer("c", m * n * 4),
}));

async function timeMatmul(shape: number, cand: Candidate): Promise<Rate | undefined> {
  const [, layout, m, n, k] = shapes[shape];
  const mm = kernels.get(cand.name)!;
  const args = { ...operands[shape], m, n, k, layout, variant: variantOf(cand, layout) };
  try {
    mm.variant(args);
  } catch {
    return undefined; // this candidate cannot run this shape
  }
  return await rate((2 * m * n * k) / 1e9, async () => {
    const step = rt.beginStep("matmul");
    mm.encode(step.pass, args);
    await step.submit();
  });
}

/**
 * numpy's matmul at shape `s`, timed inside Python (so interpreter start-up is not counted): wall
 * and CPU time per product, after one warm-up product.
 */
async function timeNumpy(s: number): Promise<Rate> {
  const [, layout, m, n, k] = shapes[s];
  const a = layout === "tn" ? `(${k}, ${m})` : `(${m}, ${k})`;
  const b = layout === "nt" ? `(${n}, ${k})` : `(${k}, ${n})`;
  const product = layout === "nt" ? "a @ b.T" : layout === "tn" ? "a.T @ b" : "a @ b";
  const script = [
    "import json, time, numpy as np",
    "r = np.random.default_rng(1)",
    `a = r.random(${a}, dtype=np.float32); b = r.random(${b}, dtype=np.float32)`,
    product,
    // Repeated for at least 0.3 s: CPU-time clocks can tick as coarsely as a few milliseconds.
    "w, c, reps = time.perf_counter(), time.process_time(), 0",
    "while reps == 0 or time.perf_counter() - w < 0.3:",
    `    ${product}; reps += 1`,
    "print(json.dumps([(time.perf_counter() - w) / reps, (time.process_time() - c) / reps]))",
  ].join("\n");
  const out = await new Deno.Command("python3", { args: ["-c", script], stderr: "inherit" })
    .output();
  if (!out.success) throw new Error(`--numpy: python3 failed (exit ${out.code})`);
  const [wall, cpu] = JSON.parse(new TextDecoder().decode(out.stdout)) as [number, number];
  const gflop = (2 * m * n * k) / 1e9;
  return { wall: gflop / wall, cpu: gflop / cpu };
}

// Warm up: compile every pipeline once.
await timeCeiling();
for (let s = 0; s < shapes.length; s++) {
  for (const c of candidates) await timeMatmul(s, c);
}

const ceiling: Rate[] = [];
const results = new Map<string, Rate[]>();
const loads: number[] = [];
for (let r = 0; r < rounds; r++) {
  loads.push(Deno.loadavg()[0]);
  ceiling.push(await timeCeiling());
  for (let s = 0; s < shapes.length; s++) {
    for (const c of candidates) {
      const g = await timeMatmul(s, c);
      if (g === undefined) continue;
      const key = `${s}|${c.name}`;
      results.set(key, [...(results.get(key) ?? []), g]);
    }
    if (values.numpy) {
      const key = `${s}|numpy`;
      results.set(key, [...(results.get(key) ?? []), await timeNumpy(s)]);
    }
    ceiling.push(await timeCeiling());
  }
  console.error(`round ${r + 1}/${rounds} done, load ${loads[r].toFixed(2)}`);
}

const ceil = { wall: median(ceiling.map((r) => r.wall)), cpu: median(ceiling.map((r) => r.cpu)) };
const spread = (xs: number[]) => `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}`;
console.log(
  `\nFMA ceiling over ${ceiling.length} runs: median ${ceil.wall.toFixed(1)} GFLOP/s wall ` +
    `(${spread(ceiling.map((r) => r.wall))}), ${ceil.cpu.toFixed(1)} GFLOP per CPU-second ` +
    `(${spread(ceiling.map((r) => r.cpu))}); load average ${spread(loads)}`,
);
console.log(
  `Medians of ${rounds} rounds: GFLOP/s wall, % of wall ceiling | per CPU-s, % of CPU ceiling`,
);
for (let s = 0; s < shapes.length; s++) {
  const [name, layout, m, n, k] = shapes[s];
  console.log(`\n${layout} ${name}`);
  for (const c of candidates) {
    const xs = results.get(`${s}|${c.name}`);
    if (!xs) continue;
    const mm = kernels.get(c.name)!;
    const used = mm.variant({ ...operands[s], m, n, k, layout, variant: variantOf(c, layout) });
    const wall = median(xs.map((r) => r.wall)), cpu = median(xs.map((r) => r.cpu));
    const before = results.get(`${s}|${BEFORE}`);
    const gain = before ? `  ${(cpu / median(before.map((r) => r.cpu))).toFixed(2)}x before` : "";
    console.log(
      `  ${c.name.padEnd(30)} ${used.padEnd(10)} ${wall.toFixed(2).padStart(6)} ` +
        `${(100 * wall / ceil.wall).toFixed(1).padStart(5)}% | ${cpu.toFixed(2).padStart(6)} ` +
        `${(100 * cpu / ceil.cpu).toFixed(1).padStart(5)}%${gain}`,
    );
  }
  const np = results.get(`${s}|numpy`);
  if (np) {
    const wall = median(np.map((r) => r.wall)), cpu = median(np.map((r) => r.cpu));
    const profile = results.get(`${s}|profile`);
    const gap = profile
      ? `  numpy ÷ profile: ${(wall / median(profile.map((r) => r.wall))).toFixed(2)}x wall, ` +
        `${(cpu / median(profile.map((r) => r.cpu))).toFixed(2)}x CPU`
      : "";
    console.log(
      `  ${"numpy (host BLAS)".padEnd(30)} ${"".padEnd(10)} ${wall.toFixed(2).padStart(6)} ` +
        `${(100 * wall / ceil.wall).toFixed(1).padStart(5)}% | ${cpu.toFixed(2).padStart(6)} ` +
        `${(100 * cpu / ceil.cpu).toFixed(1).padStart(5)}%${gap}`,
    );
  }
}
console.log(`\nload average at end: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
for (const mm of kernels.values()) mm[Symbol.dispose]();

function variantOf(c: Candidate, layout: MatmulLayout): MatmulVariant | undefined {
  return typeof c.variant === "object" ? c.variant[layout] : c.variant;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
