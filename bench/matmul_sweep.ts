/**
 * The tilings `bench/matmul_gpu.ts --sweep` times (bench/gpu/run.sh's `sweep` part), apart from
 * the script so a test can check them without a GPU.
 *
 * @module
 */

/**
 * Workgroup-tiled shapes worth timing on a GPU (`--sweep`), in `--tiling` text: the `tiled-vec4`
 * kernel (4×4 output blocks read as vec4, the next K slice prefetched), each tiling beside its
 * unrolled K loop (`,u`). On the H200 (2026-11-30, second lease) `u` took the reference (4×4 on
 * 16×16, depth 16) from 18-20 to 27-29 TFLOP/s at 4096³ and 8×8 on 16×16, depth 16 to 30.4 in
 * `nn`, and slowed some 8×8 `tn` runs; vec4 storage loads (`,g4`) and double buffering (`,db`) made
 * every tiling slower. So the list holds the four best tilings of the first lease and three new
 * shapes around the reference (8×4 and 4×8 outputs per invocation, and depth 32), each plain and
 * unrolled; one `g4` and one `db` tiling stay as controls, and so does the scalar `tiled` kernel.
 * Last, the shape CLBlast's tuner found fastest for SGEMM on an NVIDIA RTX 2070: 128 × 128 tiles
 * on 128 invocations, each owning 16 × 8 (or 8 × 16) outputs, so a K step reads 6 vec4 from
 * workgroup memory for 128 FMAs where 8×8 reads 4 for 64; at depth 16, and at 8 (fewer prefetch
 * registers beside the 128 accumulators). Then three unrolled tilings with a workgroup array per K
 * row (`,kr`): naga clamps every dynamic workgroup index, and an unrolled read's flat index differs
 * by K step, so each read pays integer work beside its FMAs; a K row per array leaves one dynamic
 * index per operand block, the same at every K step. Each entry costs GPU time, three layouts at
 * 4096³: the 19 of the second lease took 44 s of the part's 150. A tiling the adapter cannot run
 * (workgroup memory, invocations) is skipped with the reason.
 */
export const SWEEP: readonly string[] = [
  "4,4,16,16,16",
  "4,4,16,16,16,vec4",
  "4,4,16,16,16,vec4,u",
  "4,4,16,16,16,vec4,g4",
  "8,8,16,16,8,vec4",
  "8,8,16,16,8,vec4,u",
  "8,8,16,16,8,vec4,db",
  "8,8,16,8,8,vec4",
  "8,8,16,8,8,vec4,u",
  "8,8,16,16,16,vec4",
  "8,8,16,16,16,vec4,u",
  "8,4,16,16,16,vec4",
  "8,4,16,16,16,vec4,u",
  "4,8,16,16,16,vec4",
  "4,8,16,16,16,vec4,u",
  "4,4,16,16,32,vec4",
  "4,4,16,16,32,vec4,u",
  "16,8,16,8,16,vec4",
  "16,8,16,8,16,vec4,u",
  "16,8,16,8,8,vec4",
  "16,8,16,8,8,vec4,u",
  "8,16,8,16,16,vec4",
  "8,16,8,16,16,vec4,u",
  "4,4,16,16,16,vec4,u,kr",
  "8,8,16,16,16,vec4,u,kr",
  "16,8,16,8,16,vec4,u,kr",
];
