/**
 * `bench/matmul_gpu.ts --shapes`: times candidate tilings at the matmul shapes of real training
 * steps (bench/matmul_shapes.ts lists them) and prints, per shape and per shape class, the
 * fastest tiling against the one the runtime profile's table picks, with their ratio. One call
 * on a GPU fills the table (shaders/profile.ts, `matmulByShape`) with measurements.
 *
 * Each candidate runs as a one-rule table over the profile's reference tiling, so split-K slices
 * every product as the profile does (with the reference's tiles) whichever tiling runs, exactly
 * as a table entry would run it. Times are the mean over `reps` dispatches in one submission.
 *
 * @module
 */
import { readLlamaConfig } from "../model/mod.ts";
import {
  formatTiling,
  GPU_WIDE_WORKGROUPS,
  type GpuRuntime,
  Matmul,
  type MatmulShapeRule,
  type MatmulTiling,
  parseTiling,
  pickMatmulTiling,
} from "../shaders/mod.ts";
import {
  classVerdicts,
  shapeClass,
  type ShapeSet,
  shapeSetMatmuls,
  type ShapeTiming,
  type StepMatmul,
} from "./matmul_shapes.ts";

/**
 * Tilings tried beside the profile's own (its reference and its table's): 128- and 64-wide tiles
 * of 8×8, 8×4 and 4×8 per invocation, and a 32 × 32 tile for the narrowest products, with the K
 * loop written out (`u`) and without it (the reference was unrolled after a 4096³ sweep and a whole
 * step; per class it is not measured yet), and the reference with a workgroup array per K row
 * (`kr`: the same bits, so it could replace it). Depths divide the reference's 16, as a table
 * rule's must.
 */
export const SHAPE_CANDIDATES: readonly string[] = [
  "4,4,16,16,16,vec4",
  "4,4,16,16,16,vec4,u",
  "4,4,16,16,16,vec4,u,kr",
  "8,8,16,16,8,vec4,u",
  "8,8,16,16,16,vec4,u",
  "8,8,16,16,16,vec4",
  "8,8,16,8,8,vec4",
  "8,8,16,16,8,vec4",
  "8,4,16,16,8,vec4",
  "4,8,16,16,8,vec4",
  "4,4,8,8,16,vec4",
];

/** Times every candidate at every step matmul of `sets`; prints as it goes, then the verdicts. */
export async function timeShapeSets(
  rt: GpuRuntime,
  options: { sets: readonly ShapeSet[]; reps: number; tilings?: readonly MatmulTiling[] },
): Promise<void> {
  const profile = rt.profile;
  const own = [profile.matmul, ...profile.matmulByShape.map((r) => r.tiling)];
  const names = new Set([
    ...own.map(formatTiling),
    ...(options.tilings?.map(formatTiling) ?? SHAPE_CANDIDATES),
  ]);
  const kernels = new Map<string, Matmul>();
  for (const name of names) {
    const rule: MatmulShapeRule = {
      name,
      layouts: ["nn", "nt", "tn"],
      minWorkgroups: 0,
      tiling: parseTiling(name),
    };
    try {
      const mm = new Matmul(rt, profile.matmul, { byShape: [rule] });
      if (mm.byShape.length === 0) throw new Error("over this adapter's limits");
      kernels.set(name, mm);
    } catch (e) {
      console.log(`tiling ${name}: skipped (${(e as Error).message})`);
    }
  }
  console.log(
    `candidates: ${[...kernels.keys()].join("  ")}; ${options.reps} reps; times in ms ` +
      `(lavapipe's say nothing about a GPU)`,
  );
  const timings: ShapeTiming[] = [];
  for (const set of options.sets) {
    const config = await readLlamaConfig(`config/models/${set.model}/config.json`);
    const shapes = shapeSetMatmuls(config, set, profile);
    console.log(
      `== ${set.name} (${set.model}, ${set.batch} x ${set.seqLen}): ${shapes.length} shapes`,
    );
    const bytes = (f: (s: StepMatmul) => number) => 4 * Math.max(...shapes.map(f));
    const a = filled(rt, "a", bytes((s) => s.m * s.k));
    const b = filled(rt, "b", bytes((s) => s.k * s.n));
    const c = rt.buffer("c", bytes((s) => s.m * s.n));
    for (const shape of shapes) {
      const cls = shapeClass(profile, shape, GPU_WIDE_WORKGROUPS);
      const picked = formatTiling(pickMatmulTiling(profile, shape));
      const line: string[] = [];
      for (const [name, mm] of kernels) {
        try {
          const ms = await timeOne(rt, mm, { a, b, c, shape, reps: options.reps });
          timings.push({ shape, tiling: name, ms });
          line.push(`${name} ${ms.toFixed(3)}`);
        } catch (e) {
          line.push(`${name} failed (${(e as Error).message.slice(0, 80)})`);
        }
      }
      const mine = timings.filter((t) => t.shape === shape);
      const best = mine.reduce((x, y) => (y.ms < x.ms ? y : x), mine[0]);
      const pickedMs = mine.find((t) => t.tiling === picked)?.ms;
      const verdict = best && pickedMs !== undefined
        ? `fastest ${best.tiling}, picker ${picked}, picker ÷ fastest ${
          (pickedMs / best.ms).toFixed(2)
        }`
        : `picker ${picked} (not timed)`;
      console.log(
        `${shape.layout} ${shape.m}x${shape.n}x${shape.k} [${cls}; ${shape.uses.join(", ")}]: ` +
          `${line.join(", ")}; ${verdict}`,
      );
    }
    for (const buf of [a, b, c]) rt.destroyBuffer(buf);
  }
  console.log("== per shape class (all sets): the fastest single tiling against the picker's");
  const verdicts = classVerdicts(timings, {
    profile,
    wideWorkgroups: GPU_WIDE_WORKGROUPS,
    format: formatTiling,
  });
  for (const v of verdicts) {
    console.log(
      `class ${v.shapeClass} (${v.shapes} shapes): fastest ${v.best} ${v.bestMs.toFixed(3)} ms, ` +
        `picker ${v.picked} ${v.pickedMs.toFixed(3)} ms, picker ÷ fastest ${v.ratio.toFixed(2)}`,
    );
  }
  for (const mm of kernels.values()) mm[Symbol.dispose]();
}

/** A buffer of `bytes` holding small non-zero floats (a hash of the index: cheap, no zeros). */
function filled(rt: GpuRuntime, label: string, bytes: number): GPUBuffer {
  const x = new Float32Array(bytes / 4);
  for (let i = 0; i < x.length; i++) x[i] = (((i * 2654435761) >>> 0) / 2 ** 32 - 0.5) / 16;
  return rt.buffer(label, x);
}

/** Mean milliseconds of one matmul of `shape` on `mm`, over `reps` in one submission. */
async function timeOne(
  rt: GpuRuntime,
  mm: Matmul,
  io: { a: GPUBuffer; b: GPUBuffer; c: GPUBuffer; shape: StepMatmul; reps: number },
): Promise<number> {
  const { m, n, k, layout } = io.shape;
  const view = (buffer: GPUBuffer, floats: number) => ({ buffer, offset: 0, size: floats * 4 });
  const args = {
    a: view(io.a, m * k),
    b: view(io.b, k * n),
    c: view(io.c, m * n),
    m,
    n,
    k,
    layout,
  };
  return await meanDispatchMs(rt, (pass) => mm.encode(pass, args), io.reps);
}

/**
 * Mean milliseconds of one dispatch of `encode`, over `reps` in one submission, after as many
 * untimed. A GPU left idle drops its clocks: on an H200 (2026-11-30) the first layout timed after
 * a single warm-up dispatch ran 2-3x slower than the same kernel timed right after other work (a
 * 2048² product unsplit both ways, 16.1 against 5.0 ms).
 */
export async function meanDispatchMs(
  rt: GpuRuntime,
  encode: (pass: GPUComputePassEncoder) => void,
  reps: number,
): Promise<number> {
  const warm = rt.beginStep("warmup");
  for (let r = 0; r < reps; r++) encode(warm.pass);
  await warm.submit();
  const t0 = performance.now();
  const step = rt.beginStep("timed");
  for (let r = 0; r < reps; r++) encode(step.pass);
  await step.submit();
  return (performance.now() - t0) / reps;
}
