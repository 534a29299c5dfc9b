/**
 * The matmul shapes a Llama training step runs, their shape classes, and which tiling is fastest
 * per class: the pure half of `bench/matmul_gpu.ts --shapes`, which times candidate tilings at a
 * real model's shapes so the GPU profile's table (shaders/profile.ts, `matmulByShape`) can be
 * filled with measurements.
 *
 * @module
 */
import { logitsChunkRows } from "../model/mod.ts";
import type { LlamaConfig } from "../model/mod.ts";
import {
  type MatmulShape,
  type MatmulTiling,
  pickMatmulTiling,
  tileWorkgroups,
  type TuningProfile,
} from "../shaders/mod.ts";

/** A model at one micro-batch, written `<model>-<B>x<T>` (`20m-16x1024`: llama-20m, 16 x 1024). */
export interface ShapeSet {
  /** As written. */
  readonly name: string;
  /** The folder under config/models/ (`llama-20m`). */
  readonly model: string;
  readonly batch: number;
  readonly seqLen: number;
}

/** Parses `<model>-<B>x<T>[,...]`; a RangeError names the bad item. */
export function parseShapeSets(text: string): ShapeSet[] {
  return text.split(",").map((item) => {
    const m = /^([a-z0-9]+)-([0-9]+)x([0-9]+)$/.exec(item);
    const batch = Number(m?.[2]), seqLen = Number(m?.[3]);
    if (!m || batch < 1 || seqLen < 1) {
      throw new RangeError(
        `--shapes item "${item}": expected <model>-<B>x<T> with a config/models/llama-<model> ` +
          `folder, e.g. 20m-4x256,20m-16x1024,1b-1x128`,
      );
    }
    return { name: item, model: `llama-${m[1]}`, batch, seqLen };
  });
}

/** One matmul shape of a step and the products that run it (`"gate/up forward"`). */
export interface StepMatmul extends MatmulShape {
  readonly uses: readonly string[];
}

/**
 * Every distinct matmul of one training step of `config` at `rows` = B·T tokens, as the model
 * encodes them (model/llama.ts, model/lm_head.ts): per linear layer `y = x·Wᵀ` (W `[out, in]`)
 * the forward `nt [N, out, in]`, the input gradient `nn [N, in, out]`, the weight gradient
 * `tn [out, in, N]`; the LM head over logits chunks of `chunkRows` rows, as whole products (a
 * head split into vocabulary blocks runs each block on the whole product's tiling).
 */
export function stepMatmuls(config: LlamaConfig, rows: number, chunkRows: number): StepMatmul[] {
  const C = config.hiddenSize, F = config.intermediateSize, D = config.headDim;
  const QW = config.numHeads * D, KVW = config.numKvHeads * D, V = config.vocabSize, N = rows;
  const linears: [string, number, number][] = [
    ["q", C, QW],
    ["k/v", C, KVW],
    ["o", QW, C],
    ["gate/up", C, F],
    ["down", F, C],
  ];
  const all: [string, MatmulShape][] = [];
  const add = (use: string, layout: MatmulShape["layout"], m: number, n: number, k: number) =>
    all.push([use, { layout, m, n, k, batch: 1 }]);
  for (const [name, inDim, outDim] of linears) {
    add(`${name} forward`, "nt", N, outDim, inDim);
    add(`${name} input gradient`, "nn", N, inDim, outDim);
    add(`${name} weight gradient`, "tn", outDim, inDim, N);
  }
  const R = Math.min(chunkRows, N);
  add("LM head logits", "nt", R, V, C);
  add("LM head input gradient", "nn", R, C, V);
  add("LM head weight gradient", "tn", V, C, R);
  const byKey = new Map<string, { shape: MatmulShape; uses: string[] }>();
  for (const [use, shape] of all) {
    const key = `${shape.layout} ${shape.m} ${shape.n} ${shape.k}`;
    const seen = byKey.get(key);
    if (seen) seen.uses.push(use);
    else byKey.set(key, { shape, uses: [use] });
  }
  return [...byKey.values()].map(({ shape, uses }) => ({ ...shape, uses }));
}

/** The step matmuls of a shape set under `profile` (its logits chunk sets the head's rows). */
export function shapeSetMatmuls(
  config: LlamaConfig,
  set: ShapeSet,
  profile: TuningProfile,
): StepMatmul[] {
  const rows = set.batch * set.seqLen;
  return stepMatmuls(
    config,
    rows,
    logitsChunkRows(rows, config.vocabSize, profile.logitsChunkBytes),
  );
}

/**
 * Size class of a product, by the workgroups the profile's reference tiling launches (tiles ×
 * batch): `narrow` below the split-K target (products split-K may split, which stay on the
 * reference), `wide` from `wideWorkgroups` (where the GPU profile's `wide` rules start),
 * `medium` between (its `medium` rules).
 */
export type SizeClass = "narrow" | "medium" | "wide";

/** The class of `shape`: its layout and {@link SizeClass}, e.g. `"nt wide"`. */
export function shapeClass(
  profile: TuningProfile,
  shape: MatmulShape,
  wideWorkgroups: number,
): string {
  const w = tileWorkgroups(profile.matmul, shape);
  const size: SizeClass = w < profile.splitK.targetWorkgroups
    ? "narrow"
    : w < wideWorkgroups
    ? "medium"
    : "wide";
  return `${shape.layout} ${size}`;
}

/** The time of one shape under one tiling (`tiling` as `formatTiling` writes it). */
export interface ShapeTiming {
  readonly shape: MatmulShape;
  readonly tiling: string;
  readonly ms: number;
}

/** One class's verdict: the single fastest tiling over its shapes against the picker's choices. */
export interface ClassVerdict {
  readonly shapeClass: string;
  readonly shapes: number;
  /** The tiling with the least total time over the class's shapes. */
  readonly best: string;
  readonly bestMs: number;
  /** The picker's tilings (one per shape, distinct ones joined by `+`) and their total time. */
  readonly picked: string;
  readonly pickedMs: number;
  /** `pickedMs / bestMs`: above 1, the table should change for this class. */
  readonly ratio: number;
}

/**
 * Per class, the fastest single tiling against what the picker runs. Only shapes timed under
 * every tiling (and under the picker's) count; `format` names a tiling as the timings do.
 */
export function classVerdicts(
  timings: readonly ShapeTiming[],
  options: {
    profile: TuningProfile;
    wideWorkgroups: number;
    format: (t: MatmulTiling) => string;
  },
): ClassVerdict[] {
  const { profile, wideWorkgroups, format } = options;
  const key = (s: MatmulShape) => `${s.layout} ${s.m} ${s.n} ${s.k} ${s.batch}`;
  const tilings = [...new Set(timings.map((t) => t.tiling))];
  const perShape = new Map<string, { shape: MatmulShape; ms: Map<string, number> }>();
  for (const t of timings) {
    const entry = perShape.get(key(t.shape)) ?? { shape: t.shape, ms: new Map() };
    entry.ms.set(t.tiling, t.ms);
    perShape.set(key(t.shape), entry);
  }
  const classes = new Map<string, { shape: MatmulShape; ms: Map<string, number> }[]>();
  for (const entry of perShape.values()) {
    const picked = format(pickMatmulTiling(profile, entry.shape));
    if (!tilings.every((t) => entry.ms.has(t)) || !entry.ms.has(picked)) continue;
    const c = shapeClass(profile, entry.shape, wideWorkgroups);
    classes.set(c, [...(classes.get(c) ?? []), entry]);
  }
  const verdicts: ClassVerdict[] = [];
  for (const [shapeClassName, entries] of [...classes].sort(([a], [b]) => a.localeCompare(b))) {
    const total = (t: string) => entries.reduce((s, e) => s + e.ms.get(t)!, 0);
    const best = tilings.reduce((a, b) => (total(b) < total(a) ? b : a));
    const picks = entries.map((e) => format(pickMatmulTiling(profile, e.shape)));
    const pickedMs = entries.reduce((s, e, i) => s + e.ms.get(picks[i])!, 0);
    verdicts.push({
      shapeClass: shapeClassName,
      shapes: entries.length,
      best,
      bestMs: total(best),
      picked: [...new Set(picks)].join(" + "),
      pickedMs,
      ratio: pickedMs / total(best),
    });
  }
  return verdicts;
}
