/**
 * The attention's per-row steps as WGSL text: the dot products, the forward's online-softmax step
 * and the backward's dQ and dK/dV steps, each given where its rows are read from, with the
 * registers each walk starts from and the stores it ends with. The row kernels
 * (attention.ts), the tiled kernels (attention_tiled.ts) and the cached attention
 * (cached_attention.ts) all build from these, so they add the same terms in one order: the same
 * bits.
 *
 * @module
 */

/** WGSL for lane `j` (a vec4) of some row. */
export type Lane = (j: number) => string;

const lanes = (dv: number) => Array.from({ length: dv }, (_, j) => j);

/**
 * `name` = the dot product of two D-rows given per vec4 lane `j` (unrolled, one fma chain).
 * Every attention kernel builds its dot products from it, so all add the same terms in one order.
 */
export function rowDot(
  dv: number,
  name: string,
  a: (j: number) => string,
  b: (j: number) => string,
) {
  const chain = lanes(dv).reduce(
    (acc, j) => j === 0 ? `${a(j)} * ${b(j)}` : `fma(${a(j)}, ${b(j)}, ${acc})`,
    "",
  );
  return `let ${name}_v = ${chain};
    let ${name} = ${name}_v.x + ${name}_v.y + ${name}_v.z + ${name}_v.w;`;
}

/** `let`/`var` declarations of one register per vec4 lane: `prefix0 .. prefix{dv-1}`. */
export function regs(dv: number, kind: "let" | "var", prefix: string, init: (j: number) => string) {
  return lanes(dv).map((j) => `  ${kind} ${prefix}${j} = ${init(j)};`).join("\n");
}

/**
 * The registers of one query row are named with a prefix `r` (`${r}q0..`, `${r}acc0..`, `${r}m`,
 * `${r}l`, `${r}qo`, ...): empty when an invocation owns one row, one per row when it owns several
 * (the tiled kernels' `queries` option).
 */
export type RegisterPrefix = string;

/** One statement per vec4 lane. */
export function each(dv: number, stmt: (j: number) => string, indent = "    "): string {
  return lanes(dv).map((j) => indent + stmt(j)).join("\n");
}

/**
 * One key of the forward's walk: key and value row `ko` (of `k`, `v`) scored against the query
 * registers `q0..`, folded into the running max `m`, normaliser `l` and accumulators `acc0..`.
 * Shared with the tiled kernels and shaders/cached_attention.ts: the same bits.
 */
export function onlineSoftmaxStep(
  dv: number,
  kRow: Lane = (j) => `k[ko + ${j}u]`,
  vRow: Lane = (j) => `v[ko + ${j}u]`,
  r: RegisterPrefix = "",
): string {
  return `${rowDot(dv, "qk", (j) => `${r}q${j}`, kRow)}
    let score = qk * p.scale;
    let mn = max(${r}m, score);
    let corr = exp(${r}m - mn);
    let e = exp(score - mn);
    ${r}l = ${r}l * corr + e;
${each(dv, (j) => `${r}acc${j} = fma(vec4<f32>(e), ${vRow(j)}, ${r}acc${j} * corr);`)}
    ${r}m = mn;`;
}

/**
 * One key of the dQ walk: key and value rows (`kRow`, `vRow`) against the query and output
 * gradient registers `q0..`, `do0..`, added into `acc0..`. Shared by the row and tiled kernels.
 */
export function dqStep(dv: number, kRow: Lane, vRow: Lane, r: RegisterPrefix = ""): string {
  return `${rowDot(dv, "qk", (j) => `${r}q${j}`, kRow)}
    let prob = exp(qk * p.scale - ${r}lrow);
    ${rowDot(dv, "dp", (j) => `${r}do${j}`, vRow)}
    let ds = vec4<f32>(prob * (dp - ${r}drow));
${each(dv, (j) => `${r}acc${j} = fma(ds, ${kRow(j)}, ${r}acc${j});`)}`;
}

/**
 * One query of the dK/dV walk: query and output-gradient rows (`qRow`, `doRow`) with the row's
 * log-sum-exp and Δ (`lseAt`, `deltaAt`) against the key and value registers `k0..`, `v0..`,
 * added into `dka0..` and `dva0..`. Shared by the row and tiled kernels.
 */
export function dkvStep(
  dv: number,
  rows: { qRow: Lane; doRow: Lane; lseAt: string; deltaAt: string },
): string {
  const { qRow, doRow, lseAt, deltaAt } = rows;
  return `${rowDot(dv, "qk", qRow, (j) => `k${j}`)}
      let prob = exp(qk * p.scale - ${lseAt});
      ${rowDot(dv, "dp", doRow, (j) => `v${j}`)}
      let ds = vec4<f32>(prob * (dp - ${deltaAt}));
      let pv = vec4<f32>(prob);
${each(dv, (j) => `dva${j} = fma(pv, ${doRow(j)}, dva${j});`, "      ")}
${each(dv, (j) => `dka${j} = fma(ds, ${qRow(j)}, dka${j});`, "      ")}`;
}

/** The forward's registers: query row `q0..` (at `qo`), accumulators `acc0..`, max `m`, sum `l`. */
export function forwardRegisters(dv: number, r: RegisterPrefix = ""): string {
  return `${regs(dv, "let", `${r}q`, (j) => `q[${r}qo + ${j}u]`)}
${regs(dv, "var", `${r}acc`, () => "vec4<f32>()")}
  var ${r}m = -3.0e38;
  var ${r}l = 0.0;`;
}

/** The forward's output row at `qo`: the accumulators over the normaliser `l`. */
export function forwardOutput(dv: number, indent: string, r: RegisterPrefix = ""): string {
  return `${indent}let inv = 1.0 / ${r}l;
${each(dv, (j) => `out[${r}qo + ${j}u] = ${r}acc${j} * inv;`, indent)}`;
}

/**
 * The dQ walk's registers for query position `pos`: its lse and Δ (`lrow`, `drow`), query and
 * output-gradient rows `q0..`, `do0..` (at `qo`) and accumulators `acc0..`.
 */
export function dqRegisters(dv: number, pos: string, r: RegisterPrefix = ""): string {
  return `  let ${r}row = (bb * p.h + hh) * p.t + ${pos};
  let ${r}lrow = lse[${r}row];
  let ${r}drow = delta[${r}row];
${regs(dv, "let", `${r}q`, (j) => `q[${r}qo + ${j}u]`)}
${regs(dv, "let", `${r}do`, (j) => `dout[${r}qo + ${j}u]`)}
${regs(dv, "var", `${r}acc`, () => "vec4<f32>()")}`;
}

/** The dQ row at `qo`: the accumulators times the score scale. */
export function dqOutput(dv: number, indent: string, r: RegisterPrefix = ""): string {
  return each(dv, (j) => `dq[${r}qo + ${j}u] = ${r}acc${j} * p.scale;`, indent);
}

/** The dK/dV walk's registers: key and value rows `k0..`, `v0..` (at `ko`), accumulators. */
export function dkvRegisters(dv: number): string {
  return `${regs(dv, "let", "k", (j) => `k[ko + ${j}u]`)}
${regs(dv, "let", "v", (j) => `v[ko + ${j}u]`)}
${regs(dv, "var", "dka", () => "vec4<f32>()")}
${regs(dv, "var", "dva", () => "vec4<f32>()")}`;
}

/** The dK and dV rows at `ko`: the key accumulators times the score scale, the value ones. */
export function dkvOutput(dv: number, indent: string): string {
  return `${each(dv, (j) => `dk[ko + ${j}u] = dka${j} * p.scale;`, indent)}
${each(dv, (j) => `dv[ko + ${j}u] = dva${j};`, indent)}`;
}
