/**
 * Token embedding lookup and its gradient.
 *
 * Shapes: tokens `[N]` u32 (N = B·T), table `[V, C]`, out `[N, C]`.
 *
 * The gradient is a scatter-add (`dTable[tokens[n]] += dOut[n]`), made deterministic without float
 * atomics in two passes:
 * 1. `links` (thread per position n, O(N) each): `links[n]` = the next position with the same
 *    token (N when none) and `links[N + n]` = 1 when n is the token's first position;
 * 2. (thread per first position and column) walk the chain in increasing position order, sum, and
 *    add the sum to the token's row once.
 *
 * Token ids ≥ V cannot raise an error on the GPU: the forward writes NaN rows for them (visible
 * in the loss) and the backward skips them; check ids on the host where they are read.
 *
 * @module
 */

import type { GpuRuntime, TensorView } from "./gpu.ts";
import { bindTensors, dispatch1d, main1d, requireDims, requireLength } from "./kernel.ts";

/** Forward: `out[n, c] = table[tokens[n], c]`, one invocation per output element. */
export function embeddingForwardKernel(wg: number, items = 1): string {
  return `struct Params { n: u32, c: u32, vocab: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> table: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
${main1d(wg, items)}
  if (i >= p.n * p.c) { return; }
  let row = i / p.c;
  let col = i % p.c;
  let tok = tokens[row];
  if (tok >= p.vocab) { out[i] = bitcast<f32>(0x7fc00000u); return; }
  out[i] = table[tok * p.c + col];
}
`;
}

/** Backward pass 1: per position, the next position of the same token and a first-seen flag. */
export function embeddingLinksKernel(wg: number): string {
  return `struct Params { n: u32, c: u32, vocab: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> links: array<u32>;
${main1d(wg)}
  if (i >= p.n) { return; }
  let tok = tokens[i];
  var next = p.n;
  var first = 1u;
  for (var m = 0u; m < p.n; m++) {
    if (tokens[m] == tok) {
      if (m < i) { first = 0u; }
      if (m > i && next == p.n) { next = m; }
    }
  }
  links[i] = next;
  links[p.n + i] = first;
}
`;
}

/** Backward pass 2: `dTable[tok, c] += Σ over the chain of dOut[pos, c]`, positions ascending. */
export function embeddingGradKernel(wg: number, items = 1): string {
  return `struct Params { n: u32, c: u32, vocab: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> dtable: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> links: array<u32>;
${main1d(wg, items)}
  if (i >= p.n * p.c) { return; }
  let row = i / p.c;
  let col = i % p.c;
  let tok = tokens[row];
  if (links[p.n + row] == 0u || tok >= p.vocab) { return; }
  var sum = 0.0;
  var pos = row;
  while (pos < p.n) {
    sum += dout[pos * p.c + col];
    pos = links[pos];
  }
  let o = tok * p.c + col;
  dtable[o] = dtable[o] + sum;
}
`;
}

/** Shapes shared by forward and backward. */
export interface EmbeddingDims {
  /** Tokens (B·T). */
  readonly n: number;
  /** Embedding width C. */
  readonly c: number;
  /** Vocabulary size V. */
  readonly vocab: number;
}

/** Bindings of {@link Embedding.forward}. */
export interface EmbeddingForwardArgs extends EmbeddingDims {
  /** Token ids `[N]`, u32. */
  readonly tokens: TensorView;
  /** Embedding table `[V, C]`. */
  readonly table: TensorView;
  /** Written: embedded tokens `[N, C]`. */
  readonly out: TensorView;
}

/** Bindings of {@link Embedding.backward}. */
export interface EmbeddingBackwardArgs extends EmbeddingDims {
  /** Token ids `[N]`, u32 (as in the forward). */
  readonly tokens: TensorView;
  /** Accumulated: table gradient `[V, C]` (rows of absent tokens untouched). */
  readonly dTable: TensorView;
  /** Gradient of the output `[N, C]`. */
  readonly dOut: TensorView;
  /** Scratch `[2N]`, u32: next position of the same token, and first-occurrence flags. */
  readonly links: TensorView;
}

/** Embedding lookup (forward) and deterministic scatter-add gradient (backward). */
export class Embedding {
  readonly #rt: GpuRuntime;
  readonly #wg: number;
  readonly #items: number;

  /** `items`: elements per invocation (the profile's `itemsPerInvocation` by default). */
  constructor(
    rt: GpuRuntime,
    workgroupSize: number = rt.profile.workgroupSize,
    items: number = rt.profile.itemsPerInvocation,
  ) {
    this.#rt = rt;
    this.#wg = workgroupSize;
    this.#items = items;
  }

  /** Elements of the `links` scratch (u32) the backward needs: `2·N`. */
  static linksLength(n: number): number {
    return 2 * n;
  }

  /** `out [N, C] = table [V, C] [tokens [N]]`. */
  forward(
    pass: GPUComputePassEncoder,
    args: EmbeddingForwardArgs,
  ): void {
    const { n, c, vocab } = args;
    this.#check("embedding forward", args);
    requireLength('embedding forward: binding "table"', args.table, vocab * c, "[V, C]");
    requireLength('embedding forward: binding "out"', args.out, n * c, "[N, C]");
    const [wg, items] = [this.#wg, this.#items];
    const pipeline = this.#rt.pipeline(
      `embedding/forward/${wg}x${items}`,
      () => embeddingForwardKernel(wg, items),
    );
    const group = bindTensors(this.#rt, pipeline, [n, c, vocab], [
      args.tokens,
      args.table,
      args.out,
    ]);
    dispatch1d(pass, pipeline, group, n * c, wg, items);
  }

  /**
   * `dTable [V, C] += scatter(dOut [N, C])` by token; rows of absent tokens are untouched, so zero
   * `dTable` first unless accumulating. `links` is u32 scratch of {@link linksLength} elements.
   */
  backward(
    pass: GPUComputePassEncoder,
    args: EmbeddingBackwardArgs,
  ): void {
    const { n, c, vocab } = args;
    this.#check("embedding backward", args);
    requireLength('embedding backward: binding "dTable"', args.dTable, vocab * c, "[V, C]");
    requireLength('embedding backward: binding "dOut"', args.dOut, n * c, "[N, C]");
    requireLength('embedding backward: binding "links"', args.links, 2 * n, "2·N");
    const [wg, items] = [this.#wg, this.#items];
    const links = this.#rt.pipeline(`embedding/links/${wg}`, () => embeddingLinksKernel(wg));
    const grad = this.#rt.pipeline(
      `embedding/grad/${wg}x${items}`,
      () => embeddingGradKernel(wg, items),
    );
    const params = [n, c, vocab];
    dispatch1d(
      pass,
      links,
      bindTensors(this.#rt, links, params, [args.tokens, args.links]),
      n,
      wg,
    );
    const group = bindTensors(this.#rt, grad, params, [
      args.tokens,
      args.dTable,
      args.dOut,
      args.links,
    ]);
    dispatch1d(pass, grad, group, n * c, wg, items);
  }

  #check(what: string, args: EmbeddingDims & { tokens: TensorView }): void {
    requireDims(what, { n: args.n, c: args.c, vocab: args.vocab });
    requireLength(`${what}: binding "tokens"`, args.tokens, args.n, "[N]");
  }
}
