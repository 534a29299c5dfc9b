/**
 * Bit-for-bit comparisons of matmul kernels on one adapter: each kernel runs the same random
 * operands into its own copy of the same old C, and the first is checked against the f64
 * reference; the tests then compare the outputs' bits (shaders/matmul_tiled_vec4_test.ts and its
 * variants' test).
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { GpuRuntime } from "../gpu.ts";
import type { Matmul, MatmulArgs, MatmulLayout, MatmulOperandTypes } from "../matmul.ts";
import type { MatmulTiling } from "../profile.ts";
import { matmulRef } from "../reference/matmul.ts";
import { assertClose, bf16Encode, bf16Round, F32_EPS, randomF32 } from "./kernels.ts";

/** The scalar kernel every vec4 tiling must match bit for bit (the GPU profile's until 2026-11-29). */
export const SCALAR: MatmulTiling = {
  strategy: "tiled",
  rows: 4,
  cols: 4,
  workgroup: [16, 16],
  depth: 16,
};

export type OperandType = "f32" | "f16" | "bf16";
/** A's and B's operand types. */
export type Types = readonly [OperandType, OperandType];

export const LAYOUTS: readonly MatmulLayout[] = ["nn", "nt", "tn"];
/** Same, mixed and 16-bit operands (f16 only where the adapter has it: drop the last). */
export const ALL_TYPES: Types[] = [
  ["f32", "f32"],
  ["bf16", "bf16"],
  ["f32", "bf16"],
  ["f16", "f16"],
];

/**
 * Random shapes (each side from `dim`), batches, accumulation modes and alpha of a {@link Case},
 * less its layout and operand types; alpha is 1 in chain mode, which has none.
 */
export function randomModes(dim: fc.Arbitrary<number>) {
  return fc.record({
    m: dim,
    n: dim,
    k: dim,
    batch: fc.integer({ min: 1, max: 2 }),
    accumulate: fc.constantFrom<boolean | "chain">(false, true, "chain"),
    alpha: fc.constantFrom(1, 0.5, -1.5),
    seed: fc.integer({ min: 0, max: 1 << 30 }),
  }).map((c) => ({ ...c, alpha: c.accumulate === "chain" ? 1 : c.alpha }));
}

function upload(rt: GpuRuntime, label: string, x: Float32Array, t: OperandType): GPUBuffer {
  if (t === "f16") return rt.buffer(label, new Uint16Array(new Float16Array(x).buffer));
  if (t === "bf16") return rt.buffer(label, bf16Encode(x));
  return rt.buffer(label, x);
}

function rounded(x: Float32Array, t: OperandType): Float32Array {
  return t === "f16" ? x.map(Math.f16round) : t === "bf16" ? x.map(bf16Round) : x;
}

export interface Case {
  m: number;
  n: number;
  k: number;
  layout: MatmulLayout;
  batch: number;
  accumulate: boolean | "chain";
  alpha: number;
  a: OperandType;
  b: OperandType;
  seed: number;
}

/**
 * Runs `c` on each kernel into its own copy of the same old C and returns the outputs' bits;
 * checks the first against the f64 reference within the bound of an f32 fma dot product.
 */
export async function runOn(
  rt: GpuRuntime,
  kernels: Matmul[],
  c: Case,
  pin?: (mm: Matmul, args: MatmulArgs) => MatmulArgs,
): Promise<Uint32Array[]> {
  const a = rounded(randomF32(c.seed, c.batch * c.m * c.k), c.a);
  const b = rounded(randomF32(c.seed + 1, c.batch * c.k * c.n), c.b);
  const old = randomF32(c.seed + 2, c.batch * c.m * c.n);
  const shape = { m: c.m, n: c.n, k: c.k, layout: c.layout, batch: c.batch, alpha: c.alpha };
  const ga = upload(rt, "a", a, c.a), gb = upload(rt, "b", b, c.b);
  const inputType: MatmulOperandTypes = c.a === c.b ? c.a : { a: c.a, b: c.b };
  const outs = kernels.map((_, i) => rt.buffer(`c${i}`, old));
  const step = rt.beginStep("tiled-vec4 test");
  kernels.forEach((mm, i) => {
    const args: MatmulArgs = {
      ...shape,
      a: ga,
      b: gb,
      c: outs[i],
      accumulate: c.accumulate,
      inputType,
    };
    mm.encode(step.pass, pin ? pin(mm, args) : args);
  });
  await step.submit();
  const got = await Promise.all(outs.map((o) => rt.read(o)));
  for (const buf of [ga, gb, ...outs]) rt.destroyBuffer(buf);
  const into = c.accumulate ? old : undefined;
  const want = matmulRef(a, b, { ...shape, accumulateInto: into });
  const mag = matmulRef(a.map(Math.abs), b.map(Math.abs), { ...shape, alpha: Math.abs(c.alpha) });
  const tol = (i: number) =>
    (c.k + 2) * 2 * F32_EPS * (mag[i] + (into ? Math.abs(old[i]) : 0)) + 1e-30;
  assertClose(got[0], want, tol, `reference: ${JSON.stringify(c)}`);
  return got.map((x) => new Uint32Array(x.buffer));
}

export function sameBits(bits: Uint32Array[], names: string[], c: Case): void {
  for (let i = 1; i < bits.length; i++) {
    assert.deepEqual(bits[i], bits[0], `${names[i]} against ${names[0]}: ${JSON.stringify(c)}`);
  }
}
