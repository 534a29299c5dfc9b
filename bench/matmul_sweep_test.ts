/**
 * The sweep's tilings, checked without a GPU: each is `--tiling` text that reads back as itself
 * (and so as one awk field in bench/gpu/run.sh's pick), each fits an H100/H200 under NVIDIA's
 * Vulkan limits (so none is skipped there), and each double-buffered one is timed beside its
 * single-buffered twin.
 */
import assert from "node:assert/strict";
import { formatTiling, parseTiling, validateMatmulTiling } from "../shaders/mod.ts";
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

Deno.test("the sweep times each double-buffered tiling beside its single-buffered twin", () => {
  const doubles = SWEEP.filter((t) => t.endsWith(",vec4,db"));
  assert.ok(doubles.length >= 5, SWEEP.join(" "));
  for (const text of doubles) assert.ok(SWEEP.includes(text.slice(0, -",db".length)), text);
  // Register tiles larger than 8×8: 128 outputs per invocation, wide and tall.
  const blocks = SWEEP.map(parseTiling).map((t) => `${t.rows}x${t.cols}`);
  for (const block of ["8x16", "16x8"]) assert.ok(blocks.includes(block), block);
});
