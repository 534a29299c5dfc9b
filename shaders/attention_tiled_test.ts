import assert from "node:assert/strict";
import { Attention, type AttentionDims } from "./attention.ts";
import { attentionTiles, tiledWorkgroupBytes } from "./attention_tiled.ts";
import { GpuRuntime } from "./gpu.ts";
import type { AttentionTiling } from "./profile.ts";
import {
  attentionBackwardBounds,
  attentionBackwardRef,
  attentionForwardRef,
} from "./reference/attention.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

const ROWS: AttentionTiling = { strategy: "rows", rows: 0, staged: 0 };
const tiled = (rows: number, staged: number): AttentionTiling => ({
  strategy: "tiled",
  rows,
  staged,
});

/** `[B, T, 2]` u32: each token's document `[start, end)` in its row, from the lengths. */
function spans(lengths: number[][], t: number): Uint32Array {
  const out = new Uint32Array(lengths.length * t * 2);
  lengths.forEach((row, bb) => {
    let start = 0;
    for (const len of row) {
      for (let j = start; j < start + len; j++) out.set([start, start + len], (bb * t + j) * 2);
      start += len;
    }
  });
  return out;
}

interface Case {
  readonly dims: AttentionDims;
  readonly lengths?: number[][];
  readonly seed: number;
}

type Outputs = Record<"out" | "lse" | "dq" | "dk" | "dv", Float32Array>;

/** Forward and backward of one case with `tiling`: every output, read back. */
async function run(rt: GpuRuntime, c: Case, tiling: AttentionTiling, lockstep = 1) {
  const { b, t, h, kvh, d } = c.dims;
  const nq = b * t * h * d, nk = b * t * kvh * d, rows = b * h * t;
  const host = {
    q: randomF32(c.seed, nq, -2, 2),
    k: randomF32(c.seed + 1, nk, -2, 2),
    v: randomF32(c.seed + 2, nk),
    dOut: randomF32(c.seed + 3, nq),
  };
  const q = rt.buffer("q", host.q), k = rt.buffer("k", host.k), v = rt.buffer("v", host.v);
  const dOut = rt.buffer("dOut", host.dOut);
  const out = rt.buffer("out", nq * 4), lse = rt.buffer("lse", rows * 4);
  const delta = rt.buffer("delta", rows * 4);
  const dq = rt.buffer("dq", nq * 4), dk = rt.buffer("dk", nk * 4), dv = rt.buffer("dv", nk * 4);
  const docs = c.lengths === undefined
    ? {}
    : { documents: rt.buffer("documents", spans(c.lengths, t)) };
  const attn = new Attention(rt, { workgroupSize: 64, lockstep, tiling });
  const step = rt.beginStep("attention tiled");
  const fwd = { ...c.dims, q, k, v, out, lse, ...docs };
  attn.forward(step.pass, fwd);
  attn.backward(step.pass, { ...fwd, dOut, dq, dk, dv, delta });
  await step.submit();
  const got: Outputs = {
    out: await rt.read(out),
    lse: await rt.read(lse),
    dq: await rt.read(dq),
    dk: await rt.read(dk),
    dv: await rt.read(dv),
  };
  for (const x of [q, k, v, dOut, out, lse, delta, dq, dk, dv]) x.destroy();
  return { host, got };
}

/**
 * Throw unless `got` and `want` hold the same bits, naming the first difference (assert's
 * deepEqual takes minutes to print the diff of arrays this long).
 */
function assertSameBits(got: Float32Array, want: Float32Array, what: string) {
  const a = new Uint32Array(got.buffer), b = new Uint32Array(want.buffer);
  assert.equal(a.length, b.length, `${what}: lengths`);
  const first = a.findIndex((x, i) => x !== b[i]);
  if (first < 0) return;
  const count = a.reduce((n, x, i) => n + (x === b[i] ? 0 : 1), 0);
  assert.fail(
    `${what}: ${count} of ${a.length} differ, first [${first}] ${got[first]} vs ${want[first]}`,
  );
}

/** Ragged T against every tile, GQA groups, D from 4 to 64, documents on and off, batch > 1. */
const CASES: Case[] = [
  { dims: { b: 1, t: 1, h: 1, kvh: 1, d: 4 }, seed: 1 },
  { dims: { b: 2, t: 19, h: 6, kvh: 2, d: 4 }, seed: 2 },
  { dims: { b: 3, t: 23, h: 4, kvh: 1, d: 8, scale: 0.7 }, seed: 3 },
  { dims: { b: 2, t: 21, h: 4, kvh: 2, d: 32 }, lengths: [[5, 1, 9, 6], [21]], seed: 4 },
  { dims: { b: 1, t: 37, h: 2, kvh: 1, d: 64 }, seed: 5 },
  { dims: { b: 2, t: 17, h: 2, kvh: 2, d: 12 }, lengths: [[1, 16], [8, 8, 1]], seed: 6 },
];

/** Tiles smaller than, not dividing, and larger than T: every boundary case of the walks. */
const TILINGS = [tiled(4, 3), tiled(5, 8), tiled(8, 1), tiled(64, 64)];

Deno.test("tiled attention gives the row kernels' bits: forward, dQ, dK, dV", async () => {
  using rt = await GpuRuntime.create();
  for (const c of CASES) {
    // The row kernels with a lockstep walk of 7 (runs crossing heads and batch entries), itself
    // bit-identical to the plain walk (attention_test.ts).
    const plain = (await run(rt, c, ROWS, 7)).got;
    for (const tiling of TILINGS) {
      const { got } = await run(rt, c, tiling);
      const what = `${JSON.stringify(c.dims)} docs ${JSON.stringify(c.lengths)} tiles ` +
        `${tiling.rows}x${tiling.staged}`;
      for (const label of ["out", "lse", "dq", "dk", "dv"] as const) {
        assertSameBits(got[label], plain[label], `${label}, ${what}`);
      }
    }
  }
});

Deno.test("tiled attention matches the f64 reference, with and without documents", async () => {
  using rt = await GpuRuntime.create();
  for (const c of [CASES[2], CASES[3]]) {
    const { host, got } = await run(rt, c, tiled(8, 5));
    const { t, d } = c.dims;
    const dims = { ...c.dims, sequenceLengths: c.lengths };
    const scale = c.dims.scale ?? 1 / Math.sqrt(d);
    const eps = (d + t + 16 + 4 * Math.min(16 * d * scale, 20)) * F32_EPS;
    const ref = attentionForwardRef(host.q, host.k, host.v, dims);
    const mag = attentionForwardRef(host.q, host.k, host.v.map(Math.abs), dims).out;
    assertClose(got.out, ref.out, (i) => 2 * eps * mag[i] + 1e-30, "out");
    assertClose(got.lse, ref.lse, (i) => 2 * eps * (1 + Math.abs(ref.lse[i])), "lse");
    const grads = attentionBackwardRef(host.q, host.k, host.v, host.dOut, dims);
    const bounds = attentionBackwardBounds(host.q, host.k, host.v, host.dOut, dims);
    for (const label of ["dq", "dk", "dv"] as const) {
      const tol = (i: number) => 2 * (eps + (d + t) * F32_EPS) * bounds[label][i] + 1e-30;
      assertClose(got[label], grads[label], tol, label);
    }
  }
});

Deno.test("tiled attention shrinks its staged rows to the workgroup memory, or refuses by name", () => {
  const limits = { maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256 };
  const gpu = tiled(64, 64);
  // D = 32: 64 key and value rows fill 16 KiB exactly; the packed kernel's bound needs a row less.
  assert.equal(attentionTiles(gpu, "forward", 32, false, limits).staged, 64);
  assert.equal(attentionTiles(gpu, "forward", 32, true, limits).staged, 63);
  for (const d of [4, 32, 64, 128, 256]) {
    for (const pass of ["forward", "dq", "dkv"] as const) {
      const { staged } = attentionTiles(gpu, pass, d, true, limits);
      assert.ok(staged >= 1 && tiledWorkgroupBytes(pass, d, staged, true) <= 16384, `${pass} ${d}`);
      assert.ok(tiledWorkgroupBytes(pass, d, staged + 1, true) > 16384 || staged === 64);
    }
  }
  assert.equal(attentionTiles(gpu, "dkv", 256, false, limits).staged, 7);
  assert.throws(
    () =>
      attentionTiles(gpu, "dkv", 256, false, { ...limits, maxComputeWorkgroupStorageSize: 1024 }),
    /attention dkv: one staged row of head size D = 256 needs 2056 bytes.*maxComputeWorkgroupStorageSize 1024/,
  );
  assert.throws(() => attentionTiles(tiled(512, 8), "forward", 32, false, limits), /1\.\.256/);
});

Deno.test("tiled attention runs at its smallest workgroup memory: D = 64 with 16 KiB", async () => {
  // The same bits with the tile the default WebGPU limit allows (32 staged rows at D = 64).
  using rt = await GpuRuntime.create();
  const c: Case = { dims: { b: 1, t: 70, h: 2, kvh: 1, d: 64 }, lengths: [[33, 37]], seed: 9 };
  const limits = { maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256 };
  assert.equal(attentionTiles(tiled(64, 64), "forward", 64, true, limits).staged, 31);
  const plain = (await run(rt, c, ROWS)).got;
  const { got } = await run(rt, c, tiled(64, 31));
  for (const label of ["out", "lse", "dq", "dk", "dv"] as const) {
    assertSameBits(got[label], plain[label], label);
  }
});

Deno.test("tiled attention over more than 65535 workgroups: a two-dimensional grid", async () => {
  // One row per workgroup: 1,100 heads x 60 positions = 66,000 workgroups in every pass, past
  // one grid dimension's 65,535, so the tile index takes wid.y too.
  using rt = await GpuRuntime.create();
  const c: Case = { dims: { b: 1, t: 60, h: 1100, kvh: 1100, d: 4 }, seed: 11 };
  const plain = (await run(rt, c, ROWS)).got;
  const { got } = await run(rt, c, tiled(1, 4));
  for (const label of ["out", "lse", "dq", "dk", "dv"] as const) {
    assertSameBits(got[label], plain[label], label);
  }
});
