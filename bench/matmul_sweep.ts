/**
 * The tilings `bench/matmul_gpu.ts --sweep` times (bench/gpu/run.sh's `sweep` part), apart from
 * the script so a test can check them without a GPU.
 *
 * @module
 */

/**
 * Workgroup-tiled shapes worth timing on a GPU (`--sweep`), in `--tiling` text: the `tiled-vec4`
 * kernel (4×4 output blocks read as vec4, the next K slice prefetched) with one slice of
 * workgroup memory and double-buffered (`,db`), tiles of 64 to 128 × 256, depth 8-16. 128 × 128
 * tiles of 8×8 per invocation are what tuned SGEMMs use; 8×16 and 16×8 hold 128 outputs per
 * invocation. The scalar `tiled` kernel stays at the GPU profile's former tiling, as a control:
 * its other tilings ran 4-13 TFLOP/s on the H200 (2026-11-28), all under `tiled-vec4`'s 16-20. A
 * tiling the adapter cannot run (workgroup memory, invocations) is skipped with the reason.
 */
export const SWEEP: readonly string[] = [
  "4,4,16,16,16",
  "4,4,16,16,16,vec4",
  "8,8,16,16,8,vec4",
  "8,8,16,16,16,vec4",
  "8,4,16,16,8,vec4",
  "4,8,16,16,8,vec4",
  "8,8,16,8,8,vec4",
  "8,8,8,8,16,vec4",
  "8,16,8,16,8,vec4",
  "16,8,16,8,8,vec4",
  "8,16,16,16,8,vec4",
  "4,4,16,16,16,vec4,db",
  "8,8,16,16,8,vec4,db",
  "8,8,16,16,16,vec4,db",
  "8,8,16,8,8,vec4,db",
  "8,8,8,8,16,vec4,db",
  "8,16,8,16,8,vec4,db",
  "16,8,16,8,8,vec4,db",
  "8,16,16,16,8,vec4,db",
];
