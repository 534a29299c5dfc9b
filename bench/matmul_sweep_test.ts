/**
 * The sweep's tilings, checked without a GPU: each is `--tiling` text that reads back as itself
 * (and so as one awk field in bench/gpu/run.sh's pick), each fits an H100/H200 under NVIDIA's
 * Vulkan limits (so none is skipped there), each variant is timed beside its plain twin, and the
 * list stays as long as it was.
 */
import assert from "node:assert/strict";
import {
  formatTiling,
  type MatmulTiling,
  parseTiling,
  validateMatmulTiling,
} from "../shaders/mod.ts";
import { SWEEP } from "./matmul_sweep.ts";

/**
 * NVIDIA's Vulkan driver on an H100/H200: the 48 KiB of workgroup memory docs/kernels.md cites
 * (bench/gpu/adapter.ts prints the device's own figures into env.txt).
 */
const NVIDIA = {
  maxComputeWorkgroupStorageSize: 48 * 1024,
  maxComputeInvocationsPerWorkgroup: 1024,
};

Deno.test("every sweep tiling is one field of --tiling text that a GPU can run", () => {
  assert.equal(new Set(SWEEP).size, SWEEP.length, "no tiling twice");
  for (const text of SWEEP) {
    assert.doesNotMatch(text, /\s/, text);
    const tiling = parseTiling(text);
    assert.equal(formatTiling(tiling), text);
    validateMatmulTiling(tiling, NVIDIA);
  }
});

Deno.test("the sweep times each variant beside its plain twin, and every tiling unrolled", () => {
  const tilings = SWEEP.map(parseTiling);
  const plain = (t: MatmulTiling) =>
    formatTiling({
      ...t,
      buffers: undefined,
      unrollK: undefined,
      vec4Loads: undefined,
      kRows: undefined,
    });
  for (const t of tilings) assert.ok(SWEEP.includes(plain(t)), formatTiling(t));
  // The H200's four best at 4096³ (2026-11-30) and the new shapes, each plain and unrolled.
  const vec4 = tilings.filter((t) => t.strategy === "tiled-vec4").map(plain);
  for (const best of new Set(vec4)) {
    assert.ok(SWEEP.includes(`${best},u`), `${best},u`);
  }
  for (const best of ["8,8,16,16,8", "8,8,16,8,8", "8,8,16,16,16", "4,4,16,16,16"]) {
    assert.ok(SWEEP.includes(`${best},vec4`), best);
  }
  // vec4 loads and double buffering lost everywhere on the H200: one control each, no more.
  assert.equal(tilings.filter((t) => t.vec4Loads).length, 1);
  assert.equal(tilings.filter((t) => t.buffers === 2).length, 1);
  // Each entry is three products at 4096³ on a leased GPU (19 took 44 s of the part's 150).
  assert.ok(SWEEP.length <= 26, `${SWEEP.length} tilings`);
  // A K row per workgroup array pays where the K loop is unrolled: only with `u`.
  assert.ok(tilings.filter((t) => t.kRows).every((t) => t.unrollK));
});
