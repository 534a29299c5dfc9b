/**
 * Which tiling a matmul runs: the profile's reference tiling (`matmul`), or the tiling of the
 * first `matmulByShape` rule that claims the product's layout and size. Pure: a function of the
 * profile and `(layout, m, n, k, batch)` alone, never of timings on the local machine.
 *
 * Why a choice of tiling cannot change a result: every workgroup-tiled tiling (`tiled` and
 * `tiled-vec4`, any tile and depth) starts each output's accumulator at 0 (or at C for
 * `accumulate: "chain"`) and adds its K products one at a time, in K order, with `fma`; only the
 * grouping of outputs into invocations differs. The zero padding of a ragged K adds
 * `fma(0, 0, acc) = acc + 0`, which is `acc` except for `acc = −0`: an accumulator started at +0
 * never becomes −0, so only a chained sum whose C holds −0 and whose every product is a zero can
 * tell two depths apart (`matmul_by_shape_test.ts` pins that corner). Split-K is where tiles would matter: how
 * many slices a product takes depends on its tile count, and a split sum has other bits than an
 * unsplit one. So split-K always plans with the reference tiling (shaders/matmul.ts), whichever
 * tiling runs: a product's slicing, and so its bits, is the reference tiling's, and the table
 * changes times only. A rule's depth must divide the reference depth, so every slice the
 * reference plans is whole tile depths of the tiling that runs it.
 *
 * @example The GPU profile's table at three of the 20M model's shapes
 * ```ts
 * import { GPU_PROFILE } from "./profile.ts";
 * import { pickMatmulTiling } from "./matmul_picker.ts";
 * const nt = (m: number, n: number) => ({ layout: "nt" as const, m, n, k: 256, batch: 1 });
 * // Forward of a 256-wide projection at 4 x 256 tokens: 64 reference tiles, narrow.
 * if (pickMatmulTiling(GPU_PROFILE, nt(1024, 256)) !== GPU_PROFILE.matmul) throw new Error();
 * // The same at 16 x 1024 tokens: 1024 reference tiles, medium, 8x8 on a 64 x 128 tile.
 * if (pickMatmulTiling(GPU_PROFILE, nt(16384, 256)).workgroup[1] !== 8) throw new Error();
 * // The LM head's logits, [4160, 32000]: 65 x 500 reference tiles, wide, 8x8 on 128 x 128.
 * if (pickMatmulTiling(GPU_PROFILE, nt(4160, 32000)).workgroup[1] !== 16) throw new Error();
 * ```
 *
 * @module
 */

import type { MatmulShapeRule, MatmulTiling, TuningProfile } from "./profile.ts";

/** The fields of one matmul the choice depends on. */
export interface MatmulShape {
  readonly layout: "nn" | "nt" | "tn";
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly batch: number;
}

/** The part of a profile the choice reads. */
export type MatmulTable = Pick<TuningProfile, "matmul" | "matmulByShape">;

/** Output tiles of `tiling` over `[m, n]`, times the batch: the workgroups one dispatch launches. */
export function tileWorkgroups(tiling: MatmulTiling, shape: MatmulShape): number {
  const tileRows = tiling.rows * tiling.workgroup[1], tileCols = tiling.cols * tiling.workgroup[0];
  return Math.ceil(shape.m / tileRows) * Math.ceil(shape.n / tileCols) * shape.batch;
}

/** The first rule of the table that claims `shape`, or undefined (the reference tiling runs). */
export function matmulRuleFor(table: MatmulTable, shape: MatmulShape): MatmulShapeRule | undefined {
  const workgroups = tileWorkgroups(table.matmul, shape);
  return table.matmulByShape.find((r) =>
    r.layouts.includes(shape.layout) && workgroups >= r.minWorkgroups
  );
}

/** The tiling a matmul of `shape` runs under `table`: its rule's, else the reference. */
export function pickMatmulTiling(table: MatmulTable, shape: MatmulShape): MatmulTiling {
  return matmulRuleFor(table, shape)?.tiling ?? table.matmul;
}

/**
 * Throws a RangeError naming the rule unless the table can run: rules only over a
 * workgroup-tiled reference, each rule's tiling workgroup-tiled with a depth dividing the
 * reference's (so the reference's split-K slices are whole tile depths of it), a non-empty set
 * of layouts and a non-negative integer `minWorkgroups`.
 */
export function validateMatmulTable(table: MatmulTable): void {
  const ref = table.matmul;
  for (const rule of table.matmulByShape) {
    const bad = (why: string) => new RangeError(`matmul rule "${rule.name}": ${why}`);
    if (ref.strategy === "register") {
      throw bad("a table needs a workgroup-tiled reference tiling, not register");
    }
    const t = rule.tiling;
    if (t.strategy === "register") throw bad("its tiling must be workgroup-tiled, not register");
    if (!Number.isInteger(t.depth) || t.depth < 1 || ref.depth % t.depth !== 0) {
      throw bad(`depth ${t.depth} must divide the reference tiling's depth ${ref.depth}`);
    }
    const layouts = ["nn", "nt", "tn"];
    if (rule.layouts.length === 0 || rule.layouts.some((l) => !layouts.includes(l))) {
      throw bad(`layouts must be a non-empty list of nn, nt, tn, got ${rule.layouts.join()}`);
    }
    if (!Number.isInteger(rule.minWorkgroups) || rule.minWorkgroups < 0) {
      throw bad(`minWorkgroups must be a non-negative integer, got ${rule.minWorkgroups}`);
    }
  }
}
