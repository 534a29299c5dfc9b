import assert from "node:assert/strict";
import { resolvePrecision } from "./precision.ts";
import { GpuRuntime, isCpuAdapter } from "../shaders/mod.ts";

Deno.test("resolvePrecision: explicit choices, auto by adapter, f16 refused without the feature, bf16 not", async () => {
  using rt = await GpuRuntime.create();
  assert.equal(resolvePrecision("f32", rt), "f32");
  const auto = resolvePrecision("auto", rt);
  assert.equal(auto, rt.hasF16 && !isCpuAdapter(rt.info) ? "f16" : "f32");
  if (isCpuAdapter(rt.info)) assert.equal(auto, "f32", "CPU adapters train faster in f32");
  using plain = await GpuRuntime.create({ f16: false });
  assert.equal(resolvePrecision("auto", plain), "f32");
  assert.throws(() => resolvePrecision("f16", plain), /precision "f16" needs the "shader-f16"/);
  if (rt.hasF16) assert.equal(resolvePrecision("f16", rt), "f16");
  // bf16 needs no device feature.
  assert.equal(resolvePrecision("bf16", plain), "bf16");
  assert.throws(() => resolvePrecision("bf17" as "bf16", rt), /f32, f16, bf16 or auto, got "bf17"/);
});
