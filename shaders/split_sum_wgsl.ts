/**
 * The one WGSL expression that adds a split-K product's partial sums (shaders/split_k.ts): every
 * kernel that turns partials into an output (the reduce, the batched table reduce, a consumer
 * that reads the product straight from the partials) splices this text, so each adds the same
 * terms in the same order, p₀ + p₁ + … + p_{S−1}, and gives the same f32 bits.
 *
 * @module
 */

/** Where the partials of one output lie, as WGSL expressions (u32 unless said). */
export interface SplitSumOperands {
  /** Name of the variable declared to hold the sum (f32). */
  readonly sum: string;
  /** The storage array of partials. */
  readonly partials: string;
  /** Index of slice 0's partial. */
  readonly first: string;
  /** Elements between consecutive slices' partials (m·n). */
  readonly stride: string;
  /** Number of slices S. */
  readonly slices: string;
}

/**
 * WGSL statements declaring `var sum` as the output's partials added in slice order, starting
 * from slice 0's (`s` is the loop index; the caller's scope must not use that name).
 */
export function splitSumWgsl(o: SplitSumOperands): string {
  return `var ${o.sum} = ${o.partials}[${o.first}];
  for (var s = 1u; s < ${o.slices}; s++) { ${o.sum} += ${o.partials}[${o.first} + s * ${o.stride}]; }`;
}
