/**
 * The tilings `bench/matmul_gpu.ts --sweep` times (bench/gpu/run.sh's `sweep` part), apart from
 * the script so a test can check them without a GPU.
 *
 * @module
 */

/**
 * Workgroup-tiled shapes worth timing on a GPU (`--sweep`), in `--tiling` text: the `tiled-vec4`
 * kernel (4×4 output blocks read as vec4, the next K slice prefetched) at the four tilings the
 * H200 ranked first at 4096³ (2026-11-30: 8×8 on 16×16, depth 8; on 16×8, depth 8; on 16×16,
 * depth 16; and the profile's reference, 4×4 on 16×16, depth 16), each beside its unrolled K loop
 * (`,u`), its vec4 storage loads (`,g4`) and both (`,u,g4`), the variants no GPU has timed yet
 * (docs/kernels.md, "The `tiled-vec4` kernel"). Double buffering (`,db`) lost in every layout on
 * the H200, so one double-buffered tiling stays as a control, alone and with both variants. The
 * scalar `tiled` kernel stays at the GPU profile's former tiling, as a control too. The list is as
 * long as it was (each entry costs GPU time: three layouts at 4096³). A tiling the adapter cannot
 * run (workgroup memory, invocations) is skipped with the reason.
 */
export const SWEEP: readonly string[] = [
  "4,4,16,16,16",
  "4,4,16,16,16,vec4",
  "4,4,16,16,16,vec4,u",
  "4,4,16,16,16,vec4,g4",
  "4,4,16,16,16,vec4,u,g4",
  "8,8,16,16,8,vec4",
  "8,8,16,16,8,vec4,u",
  "8,8,16,16,8,vec4,g4",
  "8,8,16,16,8,vec4,u,g4",
  "8,8,16,16,8,vec4,db",
  "8,8,16,16,8,vec4,db,u,g4",
  "8,8,16,8,8,vec4",
  "8,8,16,8,8,vec4,u",
  "8,8,16,8,8,vec4,g4",
  "8,8,16,8,8,vec4,u,g4",
  "8,8,16,16,16,vec4",
  "8,8,16,16,16,vec4,u",
  "8,8,16,16,16,vec4,g4",
  "8,8,16,16,16,vec4,u,g4",
];
