/**
 * WGSL sources of the DisTrO kernels (bindings and maths in distro_gpu.ts and
 * docs/distro.md). Every kernel reads one parameter's `Spec` uniform:
 *
 * - the parameter is `rows × cols` (1-D parameters: `cols = 1`), cut into `n1 × n2` chunks,
 *   `colChunks` per block row, `chunks` in all, `totalk = n1·n2` coefficients each, `k` kept;
 * - `fb1`/`fb2` (`qb1`/`qb2`) are offsets of the f32 (fixed-point i32) DCT tables of sizes
 *   n1 and n2 in the shared basis buffers, row-major `C[u·n + i]`;
 * - `entry` is the offset of this parameter's `chunks·k` entries in the result buffers and
 *   `param` its index (into the apply metadata); `fbt2` the offset of the transposed f32
 *   table `C₂ᵀ` (a multiple of 4, for the vec4 DCT); `inv_n2` is `1/n2` as f32; `qm12` is
 *   `max|Q₁|·max|Q₂|` rounded up to f32 (the float filter's bound, apply_wgsl.ts).
 *
 * Element `e = r·cols + col` lies in chunk `c = (r/n1)·colChunks + col/n2` at `(i, j) =
 * (r mod n1, col mod n2)`; coefficient `t = u·n2 + v` of chunk `c` is stored at `c·totalk + t`.
 *
 * @module
 */
import { main1d } from "../../shaders/mod.ts";

/** Largest `compression_topk` the top-k kernel holds in registers. */
export const MAX_GPU_TOPK = 64;

/** Most coefficient rows per chunk the row-skipping top-k handles (`compression_chunk` ≤ 256). */
export const MAX_GPU_TOPK_ROWS = 256;

const SPEC_STRUCT = /* wgsl */ `
struct Spec {
  rows: u32, cols: u32, n1: u32, n2: u32,
  col_chunks: u32, chunks: u32, totalk: u32, k: u32,
  fb1: u32, fb2: u32, qb1: u32, qb2: u32,
  entry: u32, param: u32, fbt2: u32, inv_n2: f32,
  qm12: f32, _s0: u32, _s1: u32, _s2: u32,
};`;

const SPEC_HELPERS = /* wgsl */ `
// (t / n2, t mod n2) for a coefficient index t < n1·n2 <= 65536 without an integer division
// (slow on CPU adapters): (t + 0.5)/n2 < 256 is computed with relative error < 2^-22, far below
// the 0.5/n2 >= 2^-9 distance of its fractional part from an integer, so the floor is exact.
fn split_uv(t: u32) -> vec2<u32> {
  let u = u32((f32(t) + 0.5) * spec.inv_n2);
  return vec2<u32>(u, t - u * spec.n2);
}

struct Place { c: u32, i: u32, j: u32 };
fn place(e: u32) -> Place {
  let r = e / spec.cols;
  let col = e % spec.cols;
  return Place((r / spec.n1) * spec.col_chunks + col / spec.n2, r % spec.n1, col % spec.n2);
}
`;

/** The `Spec` uniform at binding 0 and the index helpers every DisTrO kernel shares. */
export const SPEC_WGSL = `${SPEC_STRUCT}
@group(0) @binding(0) var<uniform> spec: Spec;
${SPEC_HELPERS}`;
const SPEC = SPEC_WGSL;

/**
 * A table dispatch's binding 0: `rows` (a power of two) `Spec`s, one per block, in a uniform
 * array, each with `_s0` its first workgroup (padding rows: `0xffffffff`) and `_s1` its first
 * element in the bound parameter-shaped views; {@link tableMain} copies the row of the
 * workgroup's block into the private `spec`, so the kernel body reads `spec` as the
 * one-parameter kernel does, and so computes the same bits: only addressing differs.
 */
export function tableSpecWgsl(rows: number): string {
  if (!Number.isInteger(Math.log2(rows)) || rows > MAX_TABLE_ROWS) {
    throw new RangeError(`table dispatch: ${rows} rows, not a power of two <= ${MAX_TABLE_ROWS}`);
  }
  // Unrolled binary search (no loop: llvmpipe counts loop iterations against a limit).
  const steps: string[] = [];
  for (let half = rows / 2; half >= 1; half /= 2) {
    steps.push(`  if (table[r + ${half}u]._s0 <= w) { r += ${half}u; }`);
  }
  return `${SPEC_STRUCT}
@group(0) @binding(0) var<uniform> table: array<Spec, ${rows}>;
var<private> spec: Spec;
// The last row whose first workgroup is at most w: the block workgroup w works on.
fn find_row(w: u32) -> u32 {
  var r = 0u;
${steps.join("\n")}
  return r;
}
${SPEC_HELPERS}`;
}

/** Most rows of a table dispatch (80 bytes each, within a 64 KiB uniform binding). */
export const MAX_TABLE_ROWS = 512;

/**
 * The opening lines of a table dispatch's `main` (after the signature with `wid` and `nwg`):
 * `spec` set to the workgroup's block, `tw` the workgroup's index within that block.
 */
export const TABLE_ROW = /* wgsl */ `
  let w = wid.x + wid.y * nwg.x;
  spec = table[find_row(w)];
  let tw = w - spec._s0;`;

/** {@link main1d} for a table dispatch: `i` counts the invocations of the workgroup's block. */
function tableMain1d(wg: number): string {
  return `@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {${TABLE_ROW}
  let i = tw * ${wg}u + li;`;
}

/** The spec header and `main` of a one-parameter kernel (`table` 0) or of a table dispatch. */
export function specAndMain(wg: number, table: number): { spec: string; main: string } {
  return table === 0
    ? { spec: SPEC, main: main1d(wg) }
    : { spec: tableSpecWgsl(table), main: tableMain1d(wg) };
}

/**
 * The feedback kernels' per-step scalars at binding 1 (8 words): `grad_sumsq` is copied in from
 * the model's buffer inside the step, so the kernels stay within 8 storage bindings. With them,
 * `clip_scale()`: the gradient-norm clipping factor every feedback kernel applies to g.
 */
export const FEEDBACK_HYPER = /* wgsl */ `struct Hyper {
  lr: f32, wd_factor: f32, decay: f32, max_norm: f32, has_prev: u32, grad_sumsq: f32,
};
@group(0) @binding(1) var<storage, read> hyper: Hyper;
fn clip_scale() -> f32 {
  if (hyper.max_norm > 0.0) {
    return min(1.0, hyper.max_norm / (sqrt(hyper.grad_sumsq) + 1e-6));
  }
  return 1.0;
}`;

/** The flat streaming kernels' binding 0: `n4`, the number of vec4 they cover. */
const FLAT_DIMS = /* wgsl */ `
struct Dims { n4: u32, _p0: u32, _p1: u32, _p2: u32 };
@group(0) @binding(0) var<uniform> dims: Dims;`;

/**
 * Lookahead over the whole flat buffer, 4 floats per invocation:
 * `saved = θ; θ = θ − prevLr·sign(δ)`.
 * Bindings: 0 dims `{n4}`, 1 hyper `[prevLr]`, 2 θ (rw), 3 δ, 4 saved (w), all vec4.
 */
export function lookaheadKernel(wg: number): string {
  return /* wgsl */ `${FLAT_DIMS}
@group(0) @binding(1) var<storage, read> hyper: array<f32>;
@group(0) @binding(2) var<storage, read_write> theta: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> delta: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> saved: array<vec4<f32>>;
${main1d(wg)}
  if (i >= dims.n4) { return; }
  let p = theta[i];
  saved[i] = p;
  theta[i] = p - hyper[0] * sign(delta[i]);
}
`;
}

/**
 * The lookahead apart from θ, 4 floats per invocation: `P = θ − prevLr·sign(δ)` and, with
 * `decays`, `θ = θ·wdFactor` (the weight decay of the step about to be trained, the same single
 * multiplication as {@link weightDecayKernel}). Training reads P; θ never holds the lookahead.
 * Bindings: 0 dims `{n4}`, 1 hyper `[prevLr, wdFactor]`, 2 θ (rw with `decays`), 3 δ, 4 P (w),
 * all vec4.
 */
export function lookaheadApartKernel(wg: number, decays: boolean): string {
  return /* wgsl */ `${FLAT_DIMS}
@group(0) @binding(1) var<storage, read> hyper: array<f32>;
@group(0) @binding(2) var<storage, ${decays ? "read_write" : "read"}> theta: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> delta: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> ahead: array<vec4<f32>>;
${main1d(wg)}
  if (i >= dims.n4) { return; }
  let p = theta[i];
  ahead[i] = p - hyper[0] * sign(delta[i]);
  ${decays ? "theta[i] = p * hyper[1];" : ""}
}
`;
}

/**
 * θ's weight decay alone, in place, 4 floats per invocation: `θ = θ·wdFactor`, the same single
 * multiplication as {@link lookaheadApartKernel}'s, for a client with no batch in a round.
 * Bindings: 0 dims `{n4}`, 1 hyper `[_, wdFactor]`, 2 θ (rw, vec4).
 */
export function decayInPlaceKernel(wg: number): string {
  return /* wgsl */ `${FLAT_DIMS}
@group(0) @binding(1) var<storage, read> hyper: array<f32>;
@group(0) @binding(2) var<storage, read_write> theta: array<vec4<f32>>;
${main1d(wg)}
  if (i >= dims.n4) { return; }
  theta[i] = theta[i] * hyper[1];
}
`;
}

/**
 * Decoupled weight decay, 4 floats per invocation: `θ = θ₀·wdFactor` with θ₀ the parameters
 * saved before the lookahead (so this also undoes it exactly).
 * Bindings: 0 dims `{n4}`, 1 hyper (`FEEDBACK_HYPER`), 2 θ₀, 3 θ (w), both vec4.
 */
export function weightDecayKernel(wg: number): string {
  return /* wgsl */ `${FLAT_DIMS}
${FEEDBACK_HYPER}
@group(0) @binding(2) var<storage, read> source: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> theta: array<vec4<f32>>;
${main1d(wg)}
  if (i >= dims.n4) { return; }
  theta[i] = source[i] * hyper.wd_factor;
}
`;
}

/**
 * Error feedback and momentum for one parameter, per element:
 * `δ = decay·(δ − decode(own previous result)) + lr·clip·g` (the weight decay of θ is
 * {@link weightDecayKernel}). Bindings: 0 spec, 1 hyper
 * `{lr, wd_factor, decay, max_norm, has_prev, grad_sumsq}`, 2 g, 3 δ (rw), 4 f32 basis,
 * 5 own indices, 6 own values.
 */
export function feedbackKernel(wg: number): string {
  return /* wgsl */ `${SPEC}
${FEEDBACK_HYPER}
@group(0) @binding(2) var<storage, read> grads: array<f32>;
@group(0) @binding(3) var<storage, read_write> delta: array<f32>;
@group(0) @binding(4) var<storage, read> fbasis: array<f32>;
@group(0) @binding(5) var<storage, read> own_idx: array<u32>;
@group(0) @binding(6) var<storage, read> own_val: array<f32>;
${main1d(wg)}
  if (i >= spec.rows * spec.cols) { return; }
  let at = place(i);
  var d = delta[i];
  if (hyper.has_prev != 0u) {
    var sent = 0.0;
    let base = spec.entry + at.c * spec.k;
    for (var r = 0u; r < spec.k; r++) {
      let uv = split_uv(own_idx[base + r]);
      sent += own_val[base + r] * fbasis[spec.fb1 + uv.x * spec.n1 + at.i] *
        fbasis[spec.fb2 + uv.y * spec.n2 + at.j];
    }
    d = d - sent;
  }
  let scale = clip_scale();
  delta[i] = hyper.decay * d + hyper.lr * (scale * grads[i]);
}
`;
}

/**
 * First half of the blocked DCT, per element: `T[r0+u][col] = Σ_i C₁[u][i]·X[r0+i][col]`
 * (parameter-shaped). Bindings: 0 spec, 1 X, 2 T (w), 3 f32 basis.
 */
export function dctRowsKernel(wg: number): string {
  return /* wgsl */ `${SPEC}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> t: array<f32>;
@group(0) @binding(3) var<storage, read> fbasis: array<f32>;
${main1d(wg)}
  if (i >= spec.rows * spec.cols) { return; }
  let r = i / spec.cols;
  let col = i % spec.cols;
  let u = r % spec.n1;
  let r0 = r - u;
  var s = 0.0;
  for (var a = 0u; a < spec.n1; a++) {
    s += fbasis[spec.fb1 + u * spec.n1 + a] * x[(r0 + a) * spec.cols + col];
  }
  t[i] = s;
}
`;
}

/**
 * Second half, per coefficient: `Y[c][u·n2+v] = Σ_j T[row][c0+j]·C₂[v][j]` (chunk-major).
 * Bindings: 0 spec, 1 T, 2 Y (w), 3 f32 basis.
 */
export function dctColsKernel(wg: number): string {
  return /* wgsl */ `${SPEC}
@group(0) @binding(1) var<storage, read> t: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> fbasis: array<f32>;
${main1d(wg)}
  if (i >= spec.chunks * spec.totalk) { return; }
  let c = i / spec.totalk;
  let q = i % spec.totalk;
  let u = q / spec.n2;
  let v = q % spec.n2;
  let row = (c / spec.col_chunks) * spec.n1 + u;
  let base = row * spec.cols + (c % spec.col_chunks) * spec.n2;
  var s = 0.0;
  for (var j = 0u; j < spec.n2; j++) {
    s += t[base + j] * fbasis[spec.fb2 + v * spec.n2 + j];
  }
  y[i] = s;
}
`;
}

/** `(key a, id a)` ranks below `(key b, id b)`: a smaller key, or an equal key and a larger id. */
const RANKS_BELOW = /* wgsl */ `fn ranks_below(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
  return ka < kb || (ka == kb && ia > ib);
}`;

/** Moves the list may make in all before a bounded top-k kernel turns it into a heap. */
export const TOPK_LIST_MOVES = 16384;

/**
 * Worst-case loop iterations of one invocation of the unbounded top-k kernels (every
 * coefficient entering the list and moving all k others), row maxima included.
 */
export function topkListIterations(n1: number, totalk: number, k: number): number {
  return (n1 + totalk) * (k + 2) + k;
}

/** Sinks `(key, id)` from the top of the min-heap `keys[0..size)` (lowest rank on top). */
function siftDown(size: string, key: string, id: string, pad: string): string {
  return `${pad}{
${pad}  var pos = 0u;
${pad}  loop {
${pad}    let c = 2u * pos + 1u;
${pad}    if (c >= ${size}) { break; }
${pad}    var m = c;
${pad}    if (c + 1u < ${size} && ranks_below(keys[c + 1u], ids[c + 1u], keys[c], ids[c])) { m = c + 1u; }
${pad}    if (!ranks_below(keys[m], ids[m], ${key}, ${id})) { break; }
${pad}    keys[pos] = keys[m];
${pad}    ids[pos] = ids[m];
${pad}    pos = m;
${pad}  }
${pad}  keys[pos] = ${key};
${pad}  ids[pos] = ${id};
${pad}}`;
}

/**
 * The insertion step of the top-k kernels: `key` enters the kept list as index `t`. The list
 * is sorted by rank (key, then the lower index first), filled from the top; a late entry
 * usually lands near the bottom and moves few others. Indices arrive ascending, so a key
 * equal to the lowest kept one ranks below it and is skipped (ties to the lower index). `low`
 * is the lowest kept key once the list is full.
 *
 * An entry can move all k others, though: ascending magnitudes do that for every coefficient,
 * which from k = 16 on a 64×64 chunk runs past llvmpipe's limit of 65,535 loop iterations per
 * invocation, and the adapter then ends the scan silently. With `bounded`, a list that has
 * made {@link TOPK_LIST_MOVES} moves is reversed, which makes it a min-heap (the lowest rank on
 * top), and every later entry replaces the top and sinks at most the heap's height (6 for
 * k = 64); {@link topkBody} then heap-sorts it. A heap throughout is slower on usual data
 * (docs/benchmarks.md, "Behind the code").
 */
function topkInsert(bounded: boolean, t: string, pad: string): string {
  const p = bounded ? pad + "  " : pad;
  const list = `${p}var pos = filled;
${p}if (filled == k) { pos = k - 1u; } else { filled++; }
${p}loop {
${p}  if (pos == 0u || keys[pos - 1u] >= key) { break; }
${p}  keys[pos] = keys[pos - 1u];
${p}  ids[pos] = ids[pos - 1u];
${p}  pos--;${bounded ? `\n${p}  moves++;` : ""}
${p}}
${p}keys[pos] = key;
${p}ids[pos] = ${t};
${p}if (filled == k) { low = keys[k - 1u]; }`;
  const skip = `${pad}if (filled == k && key <= low) { continue; }`;
  if (!bounded) return `${skip}\n${list}`;
  return `${skip}
${pad}if (heap_mode) {
${siftDown("k", "key", t, p)}
${pad}  low = keys[0];
${pad}} else {
${list}
${pad}  if (filled == k && moves > ${TOPK_LIST_MOVES}u) {
${pad}    for (var a = 0u; a < k / 2u; a++) {
${pad}      let b = k - 1u - a;
${pad}      let ka = keys[a];
${pad}      let ia = ids[a];
${pad}      keys[a] = keys[b];
${pad}      ids[a] = ids[b];
${pad}      keys[b] = ka;
${pad}      ids[b] = ia;
${pad}    }
${pad}    heap_mode = true;
${pad}    low = keys[0];
${pad}  }
${pad}}`;
}

/**
 * Four coefficients read as one vec4 (`load`, indices `first + 0..3`) offered to the list: the
 * group is skipped with one compare when none of its keys can enter.
 */
function topkInsertGroup(bounded: boolean, load: string, first: string, pad: string): string {
  return `${pad}let q = bitcast<vec4<u32>>(${load}) & vec4<u32>(0x7fffffffu);
${pad}if (filled == k && all(q <= vec4<u32>(low))) { continue; }
${pad}for (var s = 0u; s < 4u; s++) {
${pad}  let key = q[s];
${topkInsert(bounded, `${first} + s`, pad + "  ")}
${pad}}`;
}

/**
 * The top-k kernels' private list and its output in rank order, around a `scan` of the chunk
 * `i`. With `bounded`, a list that became a heap is heap-sorted first: the top, the lowest
 * rank, swapped to the end of the shrinking heap.
 */
function topkBody(bounded: boolean, scan: string, value: string, table = 0): string {
  const state = bounded ? "\n  var moves = 0u;\n  var heap_mode = false;" : "";
  const sort = bounded
    ? `
  for (var n = k - 1u; heap_mode && n > 0u; n--) {
    let top_key = keys[n];
    let top_id = ids[n];
    keys[n] = keys[0];
    ids[n] = ids[0];
${siftDown("n", "top_key", "top_id", "    ")}
  }`
    : "";
  return `  if (i >= spec.chunks) { return; }
  let k = spec.k;
  let base = ${table === 0 ? "" : "spec._s1 + "}i * spec.totalk;
  var keys: array<u32, ${MAX_GPU_TOPK}>;
  var ids: array<u32, ${MAX_GPU_TOPK}>;
  var filled = 0u;
  var low = 0u;${state}
${scan}${sort}
  let out = spec.entry + i * k;
  for (var r = 0u; r < k; r++) {
    out_idx[out + r] = ids[r];
    out_val[out + r] = ${value};
  }
}
`;
}

/**
 * Per-chunk top-k, one invocation per chunk. Key: the f32 bits without the sign (orders like |x|,
 * NaN highest); ties to the lower index; entries written by rank. With `vec4` (totalk a multiple of
 * 4) the coefficients are read 4 at a time and a group of 4 that cannot enter the list (all keys ≤
 * the k-th, kept in a register) is skipped with one compare (faster on llvmpipe than one at a time
 * or 16: docs/benchmarks.md, "Behind the code"). Bindings: 0 spec, 1 Y (`vec4<f32>` when `vec4`), 2
 * indices (w), 3 values (w).
 */
export function topkKernel(wg: number, vec4 = false, bounded = false, table = 0): string {
  const { spec, main } = specAndMain(wg, table);
  // An equal key found later ranks below (ties to the lower index): skip it.
  const scan = vec4
    ? `  for (var t4 = 0u; t4 < spec.totalk / 4u; t4++) {
${topkInsertGroup(bounded, "y[base / 4u + t4]", "t4 * 4u", "    ")}
  }`
    : `  for (var t = 0u; t < spec.totalk; t++) {
    let key = bitcast<u32>(y[base + t]) & 0x7fffffffu;
${topkInsert(bounded, "t", "    ")}
  }`;
  const value = vec4 ? "y[(base + ids[r]) / 4u][(base + ids[r]) % 4u]" : "y[base + ids[r]]";
  return /* wgsl */ `${spec}
@group(0) @binding(1) var<storage, read> y: array<${vec4 ? "vec4<f32>" : "f32"}>;
@group(0) @binding(2) var<storage, read_write> out_idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> out_val: array<f32>;
${RANKS_BELOW}
${main}
${topkBody(bounded, scan, value, table)}`;
}

/**
 * Per-chunk top-k that reads only the rows that can hold a winner: the same key, order and
 * tie-break as {@link topkKernel}, from the maximum key of every coefficient row `u` of the
 * chunk (`rowMax[c·n1 + u]`, written by the DCT's row pass, fast_dct_wgsl.ts).
 *
 * With τ the k-th largest row maximum, a coefficient in a row whose maximum is below τ has a
 * key below the k row maxima ≥ τ, so it ranks below k others and is never picked: scanning
 * only the rows with maximum ≥ τ, in index order, gives exactly the full scan's list. For a
 * 64×64 chunk with k = 8 that reads 8 to a few more of the 64 rows instead of all. Chunks with
 * fewer than k rows scan every row (τ = 0). Needs n2 a multiple of 4. Bindings: 0 spec,
 * 1 Y (vec4), 2 indices (w), 3 values (w), 4 row maxima (u32).
 */
export function topkRowsKernel(wg: number, bounded = false, table = 0): string {
  const { spec, main } = specAndMain(wg, table);
  const scan = `  let rows = ${table === 0 ? "" : "spec._s2 + "}i * spec.n1;
  var tau = 0u;
  if (spec.n1 >= k) {
    for (var u = 0u; u < spec.n1; u++) {
      let key = row_max[rows + u];
${topkInsert(bounded, "u", "      ")}
    }
    tau = low;
    filled = 0u;
    low = 0u;${bounded ? "\n    heap_mode = false;" : ""}
  }
  // The rows to read, in index order: a lane then loops over its own rows only (skipping
  // inside one loop over all rows ran every row that any of the SIMD lanes needed).
  var picked: array<u32, ${MAX_GPU_TOPK_ROWS}>;
  var count = 0u;
  for (var u = 0u; u < spec.n1; u++) {
    if (row_max[rows + u] >= tau) {
      picked[count] = u;
      count++;
    }
  }
  let q4 = spec.n2 / 4u;
  for (var n = 0u; n < count; n++) {
    let u = picked[n];
    let row = base / 4u + u * q4;
    for (var t4 = 0u; t4 < q4; t4++) {
${topkInsertGroup(bounded, "y[row + t4]", "(u * q4 + t4) * 4u", "      ")}
    }
  }`;
  return /* wgsl */ `${spec}
@group(0) @binding(1) var<storage, read> y: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out_idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> out_val: array<f32>;
@group(0) @binding(4) var<storage, read> row_max: array<u32>;
${RANKS_BELOW}
${main}
${topkBody(bounded, scan, "y[(base + ids[r]) / 4u][(base + ids[r]) % 4u]", table)}`;
}

/**
 * Fixed-point coefficients of the client's own result (single-node apply), per chunk:
 * 1-bit: `q = ∓2^15` by sign bit; else `q = round(v / 2^e · 2^15)` (half away from zero)
 * with `2^e` the smallest power of two >= the chunk's largest |v| — `aggregateFixed` of
 * one result. Bindings: 0 spec, 1 hyper `{lr, one_bit}`, 2 own values, 3 q (w).
 */
export function ownFixedKernel(wg: number, table = 0): string {
  const { spec, main } = specAndMain(wg, table);
  return /* wgsl */ `${spec}
struct Hyper { lr: f32, one_bit: u32 };
@group(0) @binding(1) var<storage, read> hyper: Hyper;
@group(0) @binding(2) var<storage, read> own_val: array<f32>;
@group(0) @binding(3) var<storage, read_write> q: array<i32>;

fn ceil_log2(x: f32) -> i32 {
  let bits = bitcast<u32>(x);
  let field = (bits >> 23u) & 0xffu;
  let mant = bits & 0x7fffffu;
  if (field == 0u) { return -149 + 32 - i32(countLeadingZeros(mant - 1u)); }
  return i32(field) - 127 + select(1, 0, mant == 0u);
}
${main}
  if (i >= spec.chunks) { return; }
  let base = spec.entry + i * spec.k;
  if (hyper.one_bit != 0u) {
    for (var r = 0u; r < spec.k; r++) {
      q[base + r] = select(32768, -32768, (bitcast<u32>(own_val[base + r]) >> 31u) == 1u);
    }
    return;
  }
  var top = 0.0;
  for (var r = 0u; r < spec.k; r++) { top = max(top, abs(own_val[base + r])); }
  if (top == 0.0) {
    for (var r = 0u; r < spec.k; r++) { q[base + r] = 0; }
    return;
  }
  let shift = 15 - ceil_log2(top);
  for (var r = 0u; r < spec.k; r++) {
    // Two steps: WGSL leaves ldexp undefined for exponents above 128 (shift reaches 164).
    let v = ldexp(ldexp(own_val[base + r], shift / 2), shift - shift / 2);
    let a = abs(v);
    let f = floor(a);
    let m = i32(f) + select(0, 1, a - f >= 0.5);
    q[base + r] = select(m, -m, v < 0.0);
  }
}
`;
}

/**
 * The apply kernels' bindings 1-7 (hyper `{lr}`, per-parameter metas, θ read-write as
 * `theta` elements, the fixed basis, indices, q values, per-chunk offsets), shared by the
 * exact kernels here and the filtered per-chunk kernel (chunk_wgsl.ts).
 */
export function applyBindings(theta: "f32" | "vec4<f32>"): string {
  return `struct Meta { offsets: u32, entry: u32, stride_k: u32, _p: u32 };
@group(0) @binding(1) var<storage, read> hyper: array<f32>;
@group(0) @binding(2) var<storage, read> metas: array<Meta>;
@group(0) @binding(3) var<storage, read_write> theta: array<${theta}>;
@group(0) @binding(4) var<storage, read> qbasis: array<i32>;
@group(0) @binding(5) var<storage, read> idx: array<u32>;
@group(0) @binding(6) var<storage, read> qv: array<i32>;
@group(0) @binding(7) var<storage, read> offsets: array<u32>;
`;
}

/**
 * Where an uploaded aggregate's entries of a block start in the bound `idx`/`q`: a
 * one-parameter dispatch binds the block's own window (offsets count from its start); a table
 * dispatch binds its group's window, `meta.entry` words after which the block's begins.
 */
export function aggregateBase(table: number): string {
  return table === 0 ? "" : "m.entry + ";
}

/**
 * Exact apply, per element: `X = Σ q·Q₁[u][i]·Q₂[v][j]` over the chunk's entries in a
 * 64-bit two's-complement accumulator emulated with (u32 low, i32 high) words, then
 * `θ = θ − lr·sign(X)`. Each term is split so every i32 product is exact:
 * `P = Q₁Q₂` (|P| <= 2^28) `= ph·2^16 + pl`, `q·pl < 2^31`, `q·ph < 2^27`.
 * Entries of chunk `c`: `[meta.entry + c·k, +k)` when `meta.stride_k` is set (own result),
 * else `[offsets[meta.offsets + c], offsets[meta.offsets + c + 1])` (uploaded aggregate).
 * Bindings: 0 spec, 1 hyper `{lr}`, 2 meta `[param]{offsets, entry, stride_k, _}`, 3 θ (rw),
 * 4 fixed basis (i32), 5 indices, 6 q (i32), 7 offsets.
 */
export function applyKernel(wg: number, table = 0): string {
  const { spec, main } = specAndMain(wg, table);
  const at = table === 0 ? "i" : "i + spec._s1";
  const aggBase = aggregateBase(table);
  return /* wgsl */ `${spec}
${applyBindings("f32")}
struct Acc { lo: u32, hi: i32 };
fn add64(a: Acc, lo: u32, hi: i32) -> Acc {
  let s = a.lo + lo;
  return Acc(s, a.hi + hi + select(0, 1, s < lo));
}
${main}
  if (i >= spec.rows * spec.cols) { return; }
  let at = place(i);
  let m = metas[spec.param];
  var start: u32;
  var end: u32;
  if (m.stride_k != 0u) {
    start = m.entry + at.c * m.stride_k;
    end = start + m.stride_k;
  } else {
    start = ${aggBase}offsets[m.offsets + at.c];
    end = ${aggBase}offsets[m.offsets + at.c + 1u];
  }
  var acc = Acc(0u, 0);
  for (var e = start; e < end; e++) {
    let uv = split_uv(idx[e]);
    let p = qbasis[spec.qb1 + uv.x * spec.n1 + at.i] * qbasis[spec.qb2 + uv.y * spec.n2 + at.j];
    let q = qv[e];
    let lowPart = q * (p & 0xffff);
    let highPart = q * (p >> 16u);
    acc = add64(acc, bitcast<u32>(lowPart), lowPart >> 31u);
    acc = add64(acc, bitcast<u32>(highPart) << 16u, highPart >> 16u);
  }
  var s = 0.0;
  if (acc.hi < 0) { s = -1.0; } else if (acc.hi > 0 || acc.lo != 0u) { s = 1.0; }
  theta[${at}] = theta[${at}] - hyper[0] * s;
}
`;
}

/**
 * Register-blocked first half of the blocked DCT for chunks whose width n2 is a multiple of 4 (CPU
 * adapters run each invocation as a SIMD lane: vec4 accumulators, no workgroup memory): `Z[r][bc·n2
 * + v] = Σ_j X[r][bc·n2 + j]·C₂[v][j]`, parameter-shaped, `rows` rows per invocation and 4
 * consecutive v, reading the transposed table `C₂ᵀ[j·n2 + v]` at `fbt2`. Bindings: 0 spec, 1 X
 * (f32), 2 Z (vec4, w), 3 f32 basis (vec4).
 */
export function dctColsVec4Kernel(wg: number, rows: number): string {
  return /* wgsl */ `${SPEC}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> z: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> fbasis: array<vec4<f32>>;
${main1d(wg)}
  let per_row = spec.cols / 4u;
  if (i >= (spec.rows / ${rows}u) * per_row) { return; }
  let r0 = (i / per_row) * ${rows}u;
  let col0 = (i % per_row) * 4u;
  let start = col0 - col0 % spec.n2;
  let v0 = col0 % spec.n2;
  var acc: array<vec4<f32>, ${rows}>;
  for (var j = 0u; j < spec.n2; j++) {
    let cv = fbasis[(spec.fbt2 + j * spec.n2 + v0) / 4u];
    for (var rr = 0u; rr < ${rows}u; rr++) {
      acc[rr] += x[(r0 + rr) * spec.cols + start + j] * cv;
    }
  }
  for (var rr = 0u; rr < ${rows}u; rr++) {
    z[((r0 + rr) * spec.cols + col0) / 4u] = acc[rr];
  }
}
`;
}

/**
 * Register-blocked second half, for n2 a multiple of 4: `Y[c][u·n2 + v] =
 * Σ_a C₁[u][a]·Z[br·n1 + a][bc·n2 + v]` into chunk-major coefficients, `rows` values of u
 * (dividing n1) and 4 consecutive v per invocation.
 * Bindings: 0 spec, 1 Z (vec4), 2 Y (vec4, w), 3 f32 basis (`C₁[u·n1 + a]` at fb1).
 */
export function dctRowsVec4Kernel(wg: number, rows: number): string {
  return /* wgsl */ `${SPEC}
@group(0) @binding(1) var<storage, read> z: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> fbasis: array<f32>;
${main1d(wg)}
  let v4 = spec.n2 / 4u;
  let per_chunk = (spec.n1 / ${rows}u) * v4;
  if (i >= spec.chunks * per_chunk) { return; }
  let c = i / per_chunk;
  let rest = i % per_chunk;
  let u0 = (rest / v4) * ${rows}u;
  let v0 = (rest % v4) * 4u;
  let row0 = (c / spec.col_chunks) * spec.n1;
  let col = (c % spec.col_chunks) * spec.n2 + v0;
  var acc: array<vec4<f32>, ${rows}>;
  for (var a = 0u; a < spec.n1; a++) {
    let zv = z[((row0 + a) * spec.cols + col) / 4u];
    for (var rr = 0u; rr < ${rows}u; rr++) {
      acc[rr] += fbasis[spec.fb1 + (u0 + rr) * spec.n1 + a] * zv;
    }
  }
  for (var rr = 0u; rr < ${rows}u; rr++) {
    y[(c * spec.totalk + (u0 + rr) * spec.n2 + v0) / 4u] = acc[rr];
  }
}
`;
}

/**
 * {@link applyKernel} for chunk widths divisible by 4: 4 consecutive elements of one chunk
 * row per invocation, with the same exact split products and per-lane 64-bit accumulators
 * (vec4 low words, vec4 high words). Bindings as the scalar kernel, θ as `array<vec4<f32>>`.
 */
export function applyVec4Kernel(wg: number, table = 0): string {
  const { spec, main } = specAndMain(wg, table);
  const at = table === 0 ? "i" : "i + spec._s1 / 4u";
  const aggBase = aggregateBase(table);
  return /* wgsl */ `${spec}
${applyBindings("vec4<f32>")}${main}
  if (i >= spec.rows * spec.cols / 4u) { return; }
  let at = place(i * 4u);
  let m = metas[spec.param];
  var start: u32;
  var end: u32;
  if (m.stride_k != 0u) {
    start = m.entry + at.c * m.stride_k;
    end = start + m.stride_k;
  } else {
    start = ${aggBase}offsets[m.offsets + at.c];
    end = ${aggBase}offsets[m.offsets + at.c + 1u];
  }
  let one = vec4<i32>(1);
  let zero = vec4<i32>(0);
  var lo = vec4<u32>(0u);
  var hi = vec4<i32>(0);
  for (var e = start; e < end; e++) {
    let uv = split_uv(idx[e]);
    let a = qbasis[spec.qb1 + uv.x * spec.n1 + at.i];
    let o = spec.qb2 + uv.y * spec.n2 + at.j;
    let p = a * vec4<i32>(qbasis[o], qbasis[o + 1u], qbasis[o + 2u], qbasis[o + 3u]);
    let q = qv[e];
    let lowPart = q * (p & vec4<i32>(0xffff));
    let highPart = q * (p >> vec4<u32>(16u));
    let l1 = bitcast<vec4<u32>>(lowPart);
    var s = lo + l1;
    hi = hi + (lowPart >> vec4<u32>(31u)) + select(zero, one, s < l1);
    lo = s;
    let l2 = bitcast<vec4<u32>>(highPart) << vec4<u32>(16u);
    s = lo + l2;
    hi = hi + (highPart >> vec4<u32>(16u)) + select(zero, one, s < l2);
    lo = s;
  }
  let positive = (hi > zero) | ((hi == zero) & (lo != vec4<u32>(0u)));
  let sgn = select(select(vec4<f32>(0.0), vec4<f32>(1.0), positive), vec4<f32>(-1.0), hi < zero);
  theta[${at}] = theta[${at}] - hyper[0] * sgn;
}
`;
}
