/**
 * {@link LlamaKernels} bound to the kernels in shaders/: the one place that knows their calling
 * conventions and owns the small scratch buffers they need (embedding links, sum-of-squares
 * partials, RoPE tables, cross-entropy row statistics).
 *
 * @module
 */
import type { CacheDims, LlamaKernels } from "./llama_kernels.ts";
import { bindingRanges } from "./params.ts";
import {
  Attention,
  CachedAttention,
  CastBf16,
  CastF16,
  CHUNK_ITEMS,
  CrossEntropy,
  Elementwise,
  Embedding,
  type GpuRuntime,
  KvCacheAppend,
  Matmul,
  resolveView,
  RmsNorm,
  Rope,
  type RopeFrequencies,
  ropeTable,
  rowBlocks,
  SumOfSquares,
  SwiGlu,
  type TensorView,
} from "../shaders/mod.ts";

/**
 * Ranges of `[0, n)` floats for the sum of squares: multiples of the kernel's chunk
 * (`CHUNK_ITEMS · wg`) when a binding holds one, so the chunks, their partials and the final sum
 * are those of one unsplit call, bit for bit; PARAM_ALIGN ranges otherwise.
 */
function sumsqRanges(n: number, maxBindingBytes: number, wg: number): [number, number][] {
  const chunk = CHUNK_ITEMS * wg;
  const per = Math.floor(maxBindingBytes / 4 / chunk) * chunk;
  if (per === 0) return bindingRanges(n, maxBindingBytes);
  const out: [number, number][] = [];
  for (let start = 0; start < n; start += per) out.push([start, Math.min(per, n - start)]);
  return out;
}

/** The cache kernels' shape fields (shaders/kv_cache.ts, shaders/cached_attention.ts) from the model's. */
function cacheDims(a: CacheDims) {
  return {
    n: a.tokens,
    start: a.start,
    positions: a.positions,
    h: a.heads,
    kvh: a.kvHeads,
    d: a.headDim,
  };
}

/**
 * The shaders/ kernels behind the {@link LlamaKernels} interface; dispose to free scratch.
 * `maxBindingBytes` (default: `rt.limits.maxStorageBufferBindingSize`) is where the embedding
 * table and the gradient's sum of squares are split.
 */
export function shaderKernels(
  rt: GpuRuntime,
  options?: { maxBindingBytes?: number },
): LlamaKernels & Disposable {
  const maxBindingBytes = options?.maxBindingBytes ?? rt.limits.maxStorageBufferBindingSize;
  const alignBytes = rt.limits.minStorageBufferOffsetAlignment;
  /** Row blocks of a `[v, c]` table view that each fit in one binding. */
  const tableBlocks = (table: TensorView, v: number, c: number) => {
    const { buffer, offset } = resolveView(table);
    return rowBlocks(v, c * 4, { maxBytes: maxBindingBytes, alignBytes }).map((b) => ({
      view: { buffer, offset: offset + b.start * c * 4, size: b.rows * c * 4 },
      tableStart: b.start,
      tableRows: b.rows,
    }));
  };
  const matmul = new Matmul(rt);
  const elementwise = new Elementwise(rt);
  const embedding = new Embedding(rt);
  const rmsnorm = new RmsNorm(rt);
  const rope = new Rope(rt);
  const swiglu = new SwiGlu(rt);
  const crossEntropy = new CrossEntropy(rt);
  const sumsq = new SumOfSquares(rt);
  const attention = new Attention(rt);
  const cast = new CastF16(rt);
  const castBf16 = new CastBf16(rt);
  const scratch = new Map<string, GPUBuffer>();
  /** Outgrown scratch, kept until dispose: work already encoded may still bind it. */
  const retired: GPUBuffer[] = [];
  /** A scratch buffer for `key` holding at least `floats` elements (grown, never shrunk). */
  const scratchBuffer = (key: string, floats: number): GPUBuffer => {
    const have = scratch.get(key);
    if (have && have.size >= floats * 4) return have;
    if (have) retired.push(have);
    const b = rt.buffer(`scratch ${key}`, Math.max(16, floats * 4));
    scratch.set(key, b);
    return b;
  };
  const ropeTables = new Map<string, GPUBuffer>();
  const kvAppend = new KvCacheAppend(rt);
  const cachedAttention = new CachedAttention(rt);
  /** The (cos, sin) table of `positions` positions for the cache, made once per shape. */
  const cacheRopeTable = (positions: number, headDim: number, rope: RopeFrequencies): GPUBuffer => {
    const key = `${positions}/${headDim}/${rope.theta}/${JSON.stringify(rope.scaling)}`;
    let table = ropeTables.get(key);
    if (!table) {
      table = rt.buffer(
        `rope table T=${positions} D=${headDim}`,
        ropeTable(positions, headDim, rope),
      );
      ropeTables.set(key, table);
    }
    return table;
  };

  return {
    matmul: (pass, args) => matmul.encode(pass, args),
    matmulUnreduced: (pass, args, keep) => matmul.encodeUnreduced(pass, args, keep),
    matmulVariant: (args) => matmul.variant(args),
    matmulSliceK: (args) => matmul.splitK(args).sliceK,
    matmulTiling: (args) => matmul.tilingFor(args),
    reserveMatmulScratch: (bytes) => matmul.reserveTransposeScratch(bytes),
    flushMatmulReduces: (pass) => matmul.flushReduces(pass),
    discardMatmulReduces: () => matmul.discardReduces(),
    embedding: (pass, a) => {
      for (const block of tableBlocks(a.table, a.v, a.c)) {
        embedding.forward(pass, {
          tokens: a.ids,
          table: block.view,
          tableStart: block.tableStart,
          tableRows: block.tableRows,
          out: a.out,
          n: a.n,
          c: a.c,
          vocab: a.v,
        });
      }
    },
    embeddingBackward: (pass, a) => {
      // The caller's links, or links the first row block computes into scratch.
      const links = a.links ?? scratchBuffer("embedding links", Embedding.linksLength(a.n));
      for (const [i, block] of tableBlocks(a.dtable, a.v, a.c).entries()) {
        embedding.backward(pass, {
          tokens: a.ids,
          dOut: a.dout,
          dTable: block.view,
          tableStart: block.tableStart,
          tableRows: block.tableRows,
          links,
          computeLinks: a.links === undefined && i === 0,
          n: a.n,
          c: a.c,
          vocab: a.v,
        });
      }
    },
    rmsnorm: (pass, a) => rmsnorm.forward(pass, a),
    rmsnormBackward: (pass, a) =>
      rmsnorm.backward(pass, {
        x: a.x,
        weight: a.weight,
        dOut: a.dout,
        rstd: a.rstd,
        dx: a.dx,
        accumulate: a.accumulate,
        dOutPartials: a.doutPartials,
        dWeight: a.dweight,
        n: a.n,
        c: a.c,
      }),
    rope: (pass, a) => {
      const key = `${a.seqLen}/${a.headDim}/${a.rope.theta}/${JSON.stringify(a.rope.scaling)}`;
      let table = ropeTables.get(key);
      if (!table) {
        table = rt.buffer(
          `rope table T=${a.seqLen} D=${a.headDim}`,
          ropeTable(a.seqLen, a.headDim, a.rope),
        );
        ropeTables.set(key, table);
      }
      const dims = {
        n: a.batch * a.seqLen,
        t: a.seqLen,
        d: a.headDim,
        table,
        ...(a.positions === undefined ? {} : { positions: a.positions }),
      };
      // A second tensor shares the launch on GPUs only. lavapipe runs both sides of the paired
      // kernel's branch for every element (1.4-1.8x the time of two launches at the 20M
      // model's shapes, docs/benchmarks.md), and a launch costs a CPU adapter little.
      const tensors = a.second === undefined || !rt.profile.cpu
        ? [{ x: a.x, heads: a.heads, ...(a.second === undefined ? {} : { second: a.second }) }]
        : [{ x: a.x, heads: a.heads }, { x: a.second.x, heads: a.second.heads }];
      for (const { x, ...rest } of tensors) {
        if (a.inverse) rope.backward(pass, { ...dims, ...rest, dx: x });
        else rope.forward(pass, { ...dims, ...rest, x });
      }
    },
    attention: (pass, a) =>
      attention.forward(pass, {
        b: a.batch,
        t: a.seqLen,
        h: a.heads,
        kvh: a.kvHeads,
        d: a.headDim,
        q: a.q,
        k: a.k,
        v: a.v,
        out: a.out,
        lse: a.lse,
        documents: a.documents,
      }),
    appendKv: (pass, a) =>
      kvAppend.encode(pass, {
        ...cacheDims(a),
        q: a.q,
        k: a.k,
        v: a.v,
        table: cacheRopeTable(a.positions, a.headDim, a.rope),
        kCache: a.kCache,
        vCache: a.vCache,
      }),
    cachedAttention: (pass, a) =>
      cachedAttention.forward(pass, {
        ...cacheDims(a),
        q: a.q,
        kCache: a.kCache,
        vCache: a.vCache,
        out: a.out,
      }),
    attentionBackward: (pass, a) =>
      attention.backward(pass, {
        b: a.batch,
        t: a.seqLen,
        h: a.heads,
        kvh: a.kvHeads,
        d: a.headDim,
        q: a.q,
        k: a.k,
        v: a.v,
        out: a.out,
        lse: a.lse,
        dOut: a.dout,
        dq: a.dq,
        dk: a.dk,
        dv: a.dv,
        delta: scratchBuffer("attention delta", a.batch * a.heads * a.seqLen),
        documents: a.documents,
      }),
    swiglu: (pass, a) => swiglu.forward(pass, a),
    swigluBackward: (pass, a) =>
      swiglu.backward(pass, {
        gate: a.gate,
        up: a.up,
        dOut: a.dout,
        dGate: a.dgate,
        dUp: a.dup,
        n: a.n,
      }),
    crossEntropy: (pass, a) => {
      const lse = scratchBuffer("cross-entropy lse", a.rows);
      const out = scratchBuffer("cross-entropy out", 4);
      // One pass over the logits: loss, then `scale · (softmax − onehot)` written in place.
      crossEntropy.fused(pass, {
        n: a.rows,
        v: a.vocab,
        logits: a.logits,
        targets: a.targets,
        lse,
        out,
        losses: a.losses,
        gradScale: a.scale,
      });
    },
    crossEntropyBlocked: (pass, a) => {
      crossEntropy.blocked(pass, {
        n: a.rows,
        v: a.vocab,
        blocks: a.blocks,
        targets: a.targets,
        lse: scratchBuffer("cross-entropy lse", a.rows),
        out: scratchBuffer("cross-entropy out", 4),
        state: scratchBuffer("cross-entropy block state", 2 * a.rows),
        losses: a.losses,
        gradScale: a.scale ?? undefined,
      });
    },
    crossEntropyLoss: (pass, a) => {
      const lse = scratchBuffer("cross-entropy lse", a.rows);
      const out = scratchBuffer("cross-entropy out", 4);
      crossEntropy.forward(pass, {
        n: a.rows,
        v: a.vocab,
        logits: a.logits,
        targets: a.targets,
        lse,
        out,
        losses: a.losses,
      });
    },
    castF16: (pass, a) => cast.encode(pass, a),
    castBf16: (pass, a) => castBf16.encode(pass, a),
    accumulate: (pass, a) => elementwise.axpy(pass, { x: a.x, y: a.y, n: a.n, alpha: 1 }),
    sumSquaresGranule: CHUNK_ITEMS * rt.profile.workgroupSize,
    sumSquares: (pass, a) => {
      // One sumsq input per range that fits in a storage binding (whole gradient buffers of
      // large models exceed it).
      const wg = rt.profile.workgroupSize;
      const inputs = a.inputs.flatMap((input, i) => {
        if (i < a.inputs.length - 1 && input.n % (CHUNK_ITEMS * wg) !== 0) {
          throw new RangeError(
            `sumSquares: input ${i} holds ${input.n} values, not a multiple of ${CHUNK_ITEMS * wg}`,
          );
        }
        const { buffer, offset } = resolveView(input.x);
        return sumsqRanges(input.n, maxBindingBytes, wg).map(([start, count]) => ({
          x: { buffer, offset: offset + start * 4, size: count * 4 },
          length: count,
        }));
      });
      const partials = scratchBuffer(
        "sumsq partials",
        sumsq.partialsLength(inputs.map((i) => i.length)),
      );
      sumsq.encode(pass, { inputs, partials, out: a.out });
    },
    [Symbol.dispose]() {
      for (const b of [...scratch.values(), ...retired]) rt.destroyBuffer(b);
      retired.length = 0;
      matmul[Symbol.dispose]();
      for (const b of ropeTables.values()) rt.destroyBuffer(b);
      scratch.clear();
      ropeTables.clear();
    },
  };
}
