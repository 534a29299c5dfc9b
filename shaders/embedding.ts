/**
 * Token embedding lookup and its gradient.
 *
 * Shapes: tokens `[N]` u32 (N = B·T), table `[V, C]`, out `[N, C]`.
 *
 * The gradient is a scatter-add (`dTable[tokens[n]] += dOut[n]`), made deterministic without float
 * atomics in two passes:
 * 1. `links` (thread per position n, O(N) each): `links[n]` = the next position with the same
 *    token (N when none) and `links[N + n]` = 1 when n is the token's first position. O(N²) in
 *    all, so a caller holding the tokens on the host writes the same links from
 *    `embeddingLinks` (embedding_links.ts, O(N + V)) and skips this pass (`computeLinks: false`);
 * 2. (thread per first position and column) walk the chain in increasing position order, sum, and
 *    add the sum to the token's row once.
 *
 * Token ids ≥ V cannot raise an error on the GPU: the forward writes NaN rows for them (visible
 * in the loss) and the backward skips them; check ids on the host where they are read.
 *
 * @module
 */

import type { TensorView } from "./gpu.ts";
import {
  bindTensors,
  dispatch1d,
  ElementKernel,
  main1d,
  requireDims,
  requireLength,
} from "./kernel.ts";

/**
 * Uniforms of every embedding kernel: the table view holds vocabulary rows
 * `[first, first + rows)` (a row block of a table too large for one binding; the whole table is
 * `first = 0, rows = vocab`).
 */
const PARAMS = `struct Params { n: u32, c: u32, vocab: u32, first: u32, rows: u32 }
@group(0) @binding(0) var<uniform> p: Params;`;

/**
 * Forward: `out[n, c] = table[tokens[n], c]`, one invocation per output element; positions whose
 * token lies outside the table's row block are left alone (another block's dispatch writes them).
 */
export function embeddingForwardKernel(wg: number, items = 1): string {
  return `${PARAMS}
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> table: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
${main1d(wg, items)}
  if (i >= p.n * p.c) { return; }
  let row = i / p.c;
  let col = i % p.c;
  let tok = tokens[row];
  if (tok >= p.vocab) {
    if (p.first + p.rows == p.vocab) { out[i] = bitcast<f32>(0x7fc00000u); }
    return;
  }
  if (tok < p.first || tok >= p.first + p.rows) { return; }
  out[i] = table[(tok - p.first) * p.c + col];
}
`;
}

/** Backward pass 1: per position, the next position of the same token and a first-seen flag. */
export function embeddingLinksKernel(wg: number): string {
  return `${PARAMS}
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

/**
 * Backward pass 2: `dTable[tok, c] += Σ over the chain of dOut[pos, c]`, positions ascending, for
 * the tokens of the table's row block.
 */
export function embeddingGradKernel(wg: number, items = 1): string {
  return `${PARAMS}
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> dtable: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> links: array<u32>;
${main1d(wg, items)}
  if (i >= p.n * p.c) { return; }
  let row = i / p.c;
  let col = i % p.c;
  let tok = tokens[row];
  if (links[p.n + row] == 0u || tok < p.first || tok >= min(p.first + p.rows, p.vocab)) {
    return;
  }
  var sum = 0.0;
  var pos = row;
  while (pos < p.n) {
    sum += dout[pos * p.c + col];
    pos = links[pos];
  }
  let o = (tok - p.first) * p.c + col;
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
  /**
   * The table view holds rows `[tableStart, tableStart + tableRows)` of the `[V, C]` table
   * (default: all of it). A table over one storage binding is processed one row block per call:
   * the forward writes the positions whose token is in the block, the backward adds to the block's
   * rows, and the union of the calls equals one call over the whole table, bit for bit.
   */
  readonly tableStart?: number;
  /** Rows the table view holds (default `vocab − tableStart`). */
  readonly tableRows?: number;
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
  /** `[2N]` u32: next position of the same token, and first-occurrence flags (see computeLinks). */
  readonly links: TensorView;
  /**
   * Compute `links` from the tokens first (default true). False when `links` already hold them:
   * written from the host (`embeddingLinks`, the same bits in O(N + V)), or computed by the first
   * row block of the same backward pass.
   */
  readonly computeLinks?: boolean;
}

/** Embedding lookup (forward) and deterministic scatter-add gradient (backward). */
export class Embedding extends ElementKernel {
  /** Elements of the `links` scratch (u32) the backward needs: `2·N`. */
  static linksLength(n: number): number {
    return 2 * n;
  }

  /** `out [N, C] = table [V, C] [tokens [N]]`. */
  forward(
    pass: GPUComputePassEncoder,
    args: EmbeddingForwardArgs,
  ): void {
    const { n, c } = args;
    const block = this.#check("embedding forward", args);
    requireLength('embedding forward: binding "table"', args.table, block[4] * c, block.shape);
    requireLength('embedding forward: binding "out"', args.out, n * c, "[N, C]");
    const [wg, items] = [this.wg, this.items];
    const pipeline = this.rt.pipeline(
      `embedding/forward/${wg}x${items}`,
      () => embeddingForwardKernel(wg, items),
    );
    const group = bindTensors(this.rt, pipeline, block.slice(0, 5), [
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
    const { n, c } = args;
    const block = this.#check("embedding backward", args);
    requireLength('embedding backward: binding "dTable"', args.dTable, block[4] * c, block.shape);
    requireLength('embedding backward: binding "dOut"', args.dOut, n * c, "[N, C]");
    requireLength('embedding backward: binding "links"', args.links, 2 * n, "2·N");
    const [wg, items] = [this.wg, this.items];
    const links = this.rt.pipeline(`embedding/links/${wg}`, () => embeddingLinksKernel(wg));
    const grad = this.rt.pipeline(
      `embedding/grad/${wg}x${items}`,
      () => embeddingGradKernel(wg, items),
    );
    const params = block.slice(0, 5);
    if (args.computeLinks !== false) {
      dispatch1d(
        pass,
        links,
        bindTensors(this.rt, links, params, [args.tokens, args.links]),
        n,
        wg,
      );
    }
    const group = bindTensors(this.rt, grad, params, [
      args.tokens,
      args.dTable,
      args.dOut,
      args.links,
    ]);
    dispatch1d(pass, grad, group, n * c, wg, items);
  }

  /** Checks shapes; returns the uniforms `[n, c, vocab, first, rows]` and the table's shape. */
  #check(
    what: string,
    args: EmbeddingDims & { tokens: TensorView },
  ): number[] & { shape: string } {
    const { n, c, vocab } = args;
    const first = args.tableStart ?? 0;
    const rows = args.tableRows ?? vocab - first;
    requireDims(what, { n, c, vocab, tableRows: rows });
    requireDims(what, { tableStart: first }, { allowZero: true });
    if (first + rows > vocab) {
      throw new RangeError(
        `${what}: table rows [${first}, ${first + rows}) go past the vocabulary (${vocab})`,
      );
    }
    requireLength(`${what}: binding "tokens"`, args.tokens, n, "[N]");
    const shape = rows === vocab ? "[V, C]" : `rows [${first}, ${first + rows}) of [V, C]`;
    return Object.assign([n, c, vocab, first, rows], { shape });
  }
}
