/**
 * Causal self-attention with grouped-query heads, fused (flash-attention style): scores are never
 * stored. The forward keeps a running max and normaliser per query row and saves the row's
 * log-sum-exp; the backward recomputes probabilities from it.
 *
 * Shapes (row-major, as the QKV projections produce them, no transposes needed):
 * q `[B, T, H, D]`, k and v `[B, T, KVH, D]`, out `[B, T, H, D]`, lse `[B, H, T]`,
 * delta scratch `[B, H, T]`. Query head h reads key/value head `h / (H / KVH)` (HF `repeat_kv`).
 * Scores are `scale · q·k` (scale defaults to `1/sqrt(D)`); query t sees keys 0..t.
 *
 * Packed documents (varlen attention): with `documents` (u32 `[B, T, 2]`: each token's document as
 * the row positions `[start, end)`), query t sees only keys `start(t)..t` of its own document, a
 * block-diagonal causal mask. The kernels then walk only those keys (and the backward's key rows
 * only their document's queries), adding the same terms in the same order as the unmasked walk
 * over a row holding that one document; without `documents` the kernels are the unmasked ones.
 *
 * Backward (P = softmax probabilities, dO = output gradient, Δ_t = dO_t·O_t):
 * `dS = P ⊙ (dO·Vᵀ − Δ)`, `dQ = scale·dS·K`, `dK = scale·dSᵀ·Q`, `dV = Pᵀ·dO`, in three passes:
 * Δ per query row; dQ per query row (loop over keys); dK and dV per key row (loop over the
 * group's query heads and later queries). Each output is written by exactly one invocation, in a
 * fixed loop order: deterministic without atomics.
 *
 * These row kernels stream every row they read from storage (the CPU profile's choice, and the GPU
 * profile's for heads over its `maxHeadDim`). With the GPU profile (`attention.strategy:
 * "tiled"`) the forward, dQ and dK/dV passes of smaller heads run the tiled kernels of
 * shaders/attention_tiled.ts instead, which stage shared rows in workgroup memory and give the
 * same bits.
 *
 * D must be a multiple of 4 (rows are read as vec4) and at most 256; it is compiled into the
 * kernel, so each head size builds its own pipelines.
 *
 * @module
 */

import { f32Bits, type GpuRuntime, type TensorView } from "./gpu.ts";
import {
  type AttentionTiles,
  attentionTiles,
  tiledDkvKernel,
  tiledDqKernel,
  tiledForwardKernel,
  type TiledPass,
} from "./attention_tiled.ts";
import {
  dkvOutput,
  dkvRegisters,
  dkvStep,
  dqOutput,
  dqRegisters,
  dqStep,
  forwardOutput,
  forwardRegisters,
  onlineSoftmaxStep,
  rowDot,
} from "./attention_steps.ts";
import {
  ATTENTION_PARAMS,
  dkvBindings,
  dqBindings,
  forwardBindings,
} from "./attention_bindings.ts";
import { bindTensors, dispatch1d, main1d, requireDims, requireLength } from "./kernel.ts";
import { attentionStrategyFor, type AttentionTiling } from "./profile.ts";

/** The first key query `tq` of row `bb` sees: its document's start when packed, else 0. */
function firstKey(packed: boolean): string {
  return packed ? "documents[2u * (bb * p.t + tq)]" : "0u";
}

/**
 * The entry of a kernel run once per (b, h, t) query row: its position `tq`, head `hh`, batch
 * entry `bb`, row offset `qo` and, with `group`, its kv head `g`.
 */
function queryRow(wg: number, dv: number, group: boolean): string {
  return `${main1d(wg)}
  if (i >= p.b * p.h * p.t) { return; }
  let tq = i % p.t;
  let hh = (i / p.t) % p.h;
  let bb = i / (p.t * p.h);${group ? "\n  let g = hh / (p.h / p.kvh);" : ""}
  let qo = ((bb * p.t + tq) * p.h + hh) * ${dv}u;`;
}

/**
 * Forward: one invocation per (b, h, t) query row, online softmax over keys 0..t. Rows live in
 * named registers (the loops over D are unrolled), which llvmpipe keeps in SIMD registers.
 */
export function attentionForwardKernel(d: number, wg: number, packed = false): string {
  const dv = d / 4;
  return `${forwardBindings(packed)}
${queryRow(wg, dv, true)}
${forwardRegisters(dv)}
  for (var s = ${firstKey(packed)}; s <= tq; s++) {
    let ko = ((bb * p.t + s) * p.kvh + g) * ${dv}u;
    ${onlineSoftmaxStep(dv)}
  }
${forwardOutput(dv, "  ")}
  lse[(bb * p.h + hh) * p.t + tq] = m + log(l);
}
`;
}

/** Backward pass 1: `Δ = dO·O` per query row. */
export function attentionDeltaKernel(d: number, wg: number): string {
  const dv = d / 4;
  return `${ATTENTION_PARAMS}
@group(0) @binding(1) var<storage, read> out: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> dout: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> delta: array<f32>;
${queryRow(wg, dv, false)}
  ${rowDot(dv, "od", (j) => `out[qo + ${j}u]`, (j) => `dout[qo + ${j}u]`)}
  delta[(bb * p.h + hh) * p.t + tq] = od;
}
`;
}

/** Backward pass 2: dQ, one invocation per query row. */
export function attentionDqKernel(d: number, wg: number, packed = false): string {
  const dv = d / 4;
  return `${dqBindings(packed)}
${queryRow(wg, dv, true)}
${dqRegisters(dv, "tq")}
  for (var s = ${firstKey(packed)}; s <= tq; s++) {
    let ko = ((bb * p.t + s) * p.kvh + g) * ${dv}u;
    ${dqStep(dv, (j) => `k[ko + ${j}u]`, (j) => `v[ko + ${j}u]`)}
  }
${dqOutput(dv, "  ")}
}
`;
}

/**
 * Backward pass 3: dK and dV, one invocation per (b, kv head, key position). Key `s` walks the
 * queries `s…T−1`; with `lockstep > 1` every run of `lockstep` invocations (of the same workgroup
 * and head group) walks from its first member's key, each skipping the queries before its own,
 * so all read the same query row at once (one load per warp on a GPU, where a walk from each
 * invocation's own key reads a different row per invocation). Each invocation still adds the
 * same terms in the same order: the same bits for every `lockstep`. `packed`: key `s` walks only
 * the queries of its own document (up to its end).
 */
export function attentionDkvKernel(d: number, wg: number, lockstep = 1, packed = false): string {
  const dv = d / 4;
  const end = packed ? "\n  let tEnd = documents[2u * (bb * p.t + s) + 1u];" : "";
  const start = lockstep > 1 ? `s - min(s, li % ${lockstep}u)` : "s";
  const skip = lockstep > 1 ? "\n      if (tq < s) { continue; }" : "";
  return `${dkvBindings(packed)}
${main1d(wg)}
  if (i >= p.b * p.kvh * p.t) { return; }
  let s = i % p.t;
  let g = (i / p.t) % p.kvh;
  let bb = i / (p.t * p.kvh);
  let rep = p.h / p.kvh;
  let ko = ((bb * p.t + s) * p.kvh + g) * ${dv}u;
  let s0 = ${start};${end}
${dkvRegisters(dv)}
  for (var hh = g * rep; hh < (g + 1u) * rep; hh++) {
    for (var tq = s0; tq < ${packed ? "tEnd" : "p.t"}; tq++) {${skip}
      let qo = ((bb * p.t + tq) * p.h + hh) * ${dv}u;
      let row = (bb * p.h + hh) * p.t + tq;
      ${
    dkvStep(dv, {
      qRow: (j) => `q[qo + ${j}u]`,
      doRow: (j) => `dout[qo + ${j}u]`,
      lseAt: "lse[row]",
      deltaAt: "delta[row]",
    })
  }
    }
  }
${dkvOutput(dv, "  ")}
}
`;
}

/** Dimensions shared by forward and backward. */
export interface AttentionDims {
  /** Batch size B. */
  readonly b: number;
  /** Sequence length T. */
  readonly t: number;
  /** Query heads H. */
  readonly h: number;
  /** Key/value heads KVH (divides H). */
  readonly kvh: number;
  /** Head size D (multiple of 4, ≤ 256). */
  readonly d: number;
  /** Score scale (default `1/sqrt(D)`). */
  readonly scale?: number;
}

/** Bindings of {@link Attention.forward}. */
export interface AttentionForwardArgs extends AttentionDims {
  /** Queries `[B, T, H, D]`, after RoPE. */
  readonly q: TensorView;
  /** Keys `[B, T, KVH, D]`, after RoPE. */
  readonly k: TensorView;
  /** Values `[B, T, KVH, D]`. */
  readonly v: TensorView;
  /** Written: attention output `[B, T, H, D]`. */
  readonly out: TensorView;
  /** Written: log-sum-exp of each query row's scores `[B, H, T]`, kept for the backward. */
  readonly lse: TensorView;
  /**
   * u32 `[B, T, 2]`: each token's document `[start, end)` as positions in its row (`start ≤ t <
   * end ≤ T`, not checked on the GPU), for packed rows; absent: one document per row.
   */
  readonly documents?: TensorView;
}

/** Bindings of {@link Attention.backward}: the forward's, then the gradients. */
export interface AttentionBackwardArgs extends AttentionForwardArgs {
  /** Gradient of the output `[B, T, H, D]`. */
  readonly dOut: TensorView;
  /** Written: query gradient `[B, T, H, D]`. */
  readonly dq: TensorView;
  /** Written: key gradient `[B, T, KVH, D]`. */
  readonly dk: TensorView;
  /** Written: value gradient `[B, T, KVH, D]`. */
  readonly dv: TensorView;
  /** Scratch `[B, H, T]` (Δ = dO·O per query row). */
  readonly delta: TensorView;
}

/** Kernel shape of an {@link Attention}; each field defaults to the runtime's profile. */
export interface AttentionOptions {
  /** Invocations per workgroup of the row kernels (and Δ). */
  readonly workgroupSize?: number;
  /** The row kernels' dK/dV lockstep width (see {@link attentionDkvKernel}). */
  readonly lockstep?: number;
  /** Row or tiled kernels for the forward, dQ and dK/dV passes. */
  readonly tiling?: AttentionTiling;
}

/**
 * Fused causal grouped-query attention, forward and backward. The forward, dQ and dK/dV passes
 * run the row kernels above or, with `tiling.strategy: "tiled"` (the GPU profile's) and a head
 * size D up to its `maxHeadDim`, the tiled kernels of shaders/attention_tiled.ts: the same bits.
 * Δ always runs the row kernel: it reads each row once, so nothing is shared to stage.
 */
export class Attention {
  readonly #rt: GpuRuntime;
  readonly #wg: number;
  readonly #lockstep: number;
  readonly #tiling: AttentionTiling;

  constructor(rt: GpuRuntime, options: AttentionOptions = {}) {
    const {
      workgroupSize = rt.profile.workgroupSize,
      lockstep = rt.profile.lockstep,
      tiling = rt.profile.attention,
    } = options;
    if (!Number.isInteger(lockstep) || lockstep < 1) {
      throw new RangeError(`attention: lockstep must be a positive integer, got ${lockstep}`);
    }
    const { maxHeadDim } = tiling;
    if (maxHeadDim !== undefined && (!Number.isInteger(maxHeadDim) || maxHeadDim < 1)) {
      throw new RangeError(`attention: maxHeadDim must be a positive integer, got ${maxHeadDim}`);
    }
    this.#rt = rt;
    this.#wg = workgroupSize;
    this.#lockstep = lockstep;
    this.#tiling = tiling;
  }

  /** `out [B, T, H, D]` and `lse [B, H, T]` from q, k, v. */
  forward(
    pass: GPUComputePassEncoder,
    args: AttentionForwardArgs,
  ): void {
    const what = "attention forward";
    this.#check(what, args, { q: args.q, out: args.out }, { k: args.k, v: args.v }, {
      lse: args.lse,
    });
    const packed = this.#documents(what, args);
    const views = [args.q, args.k, args.v, args.out, args.lse, ...packed.bindings];
    if (attentionStrategyFor(this.#tiling, args.d) === "tiled") {
      this.#tiled(pass, "forward", args, packed.on, views, tiledForwardKernel);
      return;
    }
    const pipeline = this.#pipeline(
      `forward${packed.name}`,
      args.d,
      (d, wg) => attentionForwardKernel(d, wg, packed.on),
    );
    const group = bindTensors(this.#rt, pipeline, this.#params(args), views);
    dispatch1d(pass, pipeline, group, args.b * args.h * args.t, this.#wg);
  }

  /** `dq`, `dk`, `dv` (overwritten) from `dOut`; `delta` is `[B, H, T]` scratch. */
  backward(
    pass: GPUComputePassEncoder,
    args: AttentionBackwardArgs,
  ): void {
    const what = "attention backward";
    this.#check(
      what,
      args,
      { q: args.q, out: args.out, dOut: args.dOut, dq: args.dq },
      { k: args.k, v: args.v, dk: args.dk, dv: args.dv },
      { lse: args.lse, delta: args.delta },
    );
    const packed = this.#documents(what, args);
    const params = this.#params(args);
    const { b, h, t, kvh, d } = args;
    const deltaPipe = this.#pipeline("delta", d, attentionDeltaKernel);
    dispatch1d(
      pass,
      deltaPipe,
      bindTensors(this.#rt, deltaPipe, params, [args.out, args.dOut, args.delta]),
      b * h * t,
      this.#wg,
    );
    const common = [args.q, args.k, args.v, args.lse, args.dOut, args.delta];
    if (attentionStrategyFor(this.#tiling, args.d) === "tiled") {
      const dqViews = [...common, args.dq, ...packed.bindings];
      this.#tiled(pass, "dq", args, packed.on, dqViews, tiledDqKernel);
      const dkvViews = [...common, args.dk, args.dv, ...packed.bindings];
      this.#tiled(pass, "dkv", args, packed.on, dkvViews, tiledDkvKernel);
      return;
    }
    const dqPipe = this.#pipeline(
      `dq${packed.name}`,
      d,
      (d, wg) => attentionDqKernel(d, wg, packed.on),
    );
    dispatch1d(
      pass,
      dqPipe,
      bindTensors(this.#rt, dqPipe, params, [...common, args.dq, ...packed.bindings]),
      b * h * t,
      this.#wg,
    );
    const lockstep = this.#lockstep;
    const dkvPipe = this.#pipeline(
      `dkv/lockstep${lockstep}${packed.name}`,
      d,
      (d, wg) => attentionDkvKernel(d, wg, lockstep, packed.on),
    );
    dispatch1d(
      pass,
      dkvPipe,
      bindTensors(this.#rt, dkvPipe, params, [
        ...common,
        args.dk,
        args.dv,
        ...packed.bindings,
      ]),
      b * kvh * t,
      this.#wg,
    );
  }

  /**
   * One tiled pass: its tile for D (shrunk to the device's workgroup memory), its pipeline, and
   * one workgroup per tile of `rows · queries` positions of each (batch, head): query heads for
   * the forward and dQ, kv heads for dK/dV.
   */
  #tiled(
    pass: GPUComputePassEncoder,
    which: TiledPass,
    args: AttentionDims,
    packed: boolean,
    views: TensorView[],
    source: (d: number, tiles: AttentionTiles, packed: boolean) => string,
  ): void {
    const { d } = args;
    const tiles = attentionTiles(this.#tiling, which, d, packed, this.#rt.limits);
    const key = `attention/tiled-${which}${packed ? "/documents" : ""}/d${d}/` +
      `${tiles.rows}x${tiles.staged}${tiles.queries > 1 ? `/q${tiles.queries}` : ""}` +
      (tiles.rowArrays ? "/ra" : "");
    const pipeline = this.#rt.pipeline(key, () => source(d, tiles, packed));
    const heads = which === "dkv" ? args.kvh : args.h;
    const workgroups = args.b * heads * Math.ceil(args.t / (tiles.rows * tiles.queries));
    const group = bindTensors(this.#rt, pipeline, this.#params(args), views);
    dispatch1d(pass, pipeline, group, workgroups * tiles.rows, tiles.rows);
  }

  #pipeline(
    name: string,
    d: number,
    source: (d: number, wg: number) => string,
  ): GPUComputePipeline {
    const wg = this.#wg;
    return this.#rt.pipeline(`attention/${name}/d${d}/${wg}`, () => source(d, wg));
  }

  /** The packed variant's pipeline suffix and extra binding, when `documents` is given. */
  #documents(
    what: string,
    args: AttentionForwardArgs,
  ): { on: boolean; name: string; bindings: TensorView[] } {
    if (args.documents === undefined) return { on: false, name: "", bindings: [] };
    requireLength(`${what}: binding "documents"`, args.documents, args.b * args.t * 2, "[B, T, 2]");
    return { on: true, name: "/documents", bindings: [args.documents] };
  }

  #params(args: AttentionDims): number[] {
    const scale = args.scale ?? 1 / Math.sqrt(args.d);
    return [args.b, args.t, args.h, args.kvh, f32Bits(scale)];
  }

  #check(
    what: string,
    dims: AttentionDims,
    queryRows: Record<string, TensorView>,
    keyRows: Record<string, TensorView>,
    perRow: Record<string, TensorView>,
  ): void {
    const { b, t, h, kvh, d } = dims;
    requireDims(what, { b, t, h, kvh, d });
    if (h % kvh !== 0) {
      throw new RangeError(`${what}: query heads H = ${h} must be a multiple of KVH = ${kvh}`);
    }
    if (d % 4 !== 0 || d > 256) {
      throw new RangeError(`${what}: head size D must be a multiple of 4 up to 256, got ${d}`);
    }
    for (const [name, view] of Object.entries(queryRows)) {
      requireLength(`${what}: binding "${name}"`, view, b * t * h * d, "[B, T, H, D]");
    }
    for (const [name, view] of Object.entries(keyRows)) {
      requireLength(`${what}: binding "${name}"`, view, b * t * kvh * d, "[B, T, KVH, D]");
    }
    for (const [name, view] of Object.entries(perRow)) {
      requireLength(`${what}: binding "${name}"`, view, b * h * t, "[B, H, T]");
    }
  }
}
