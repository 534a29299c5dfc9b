/**
 * Prints what the WebGPU adapter offers, for `env.txt` of bench/gpu/run.sh: its description,
 * features (`subgroups` decides whether subgroup operations can be used at all; `shader-f16`,
 * `timestamp-query`), subgroup sizes, and the limits the kernels are shaped by.
 *
 * Run: `deno run -A bench/gpu/adapter.ts`
 *
 * @module
 */
import { requestGpuAdapter } from "../../shaders/mod.ts";

const LIMITS = [
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxStorageBufferBindingSize",
  "maxBufferSize",
] as const;

const adapter = await requestGpuAdapter();
if (!adapter) {
  console.log("adapter: none");
  Deno.exit(1);
}
const info = adapter.info as GPUAdapterInfo & {
  subgroupMinSize?: number;
  subgroupMaxSize?: number;
};
console.log(
  `adapter: ${info.description} (vendor ${info.vendor}, fallback ${info.isFallbackAdapter})`,
);
console.log(`features: ${[...adapter.features].sort().join(" ")}`);
console.log(`subgroup sizes: ${info.subgroupMinSize ?? "?"}..${info.subgroupMaxSize ?? "?"}`);
console.log(`limits: ${LIMITS.map((l) => `${l} ${adapter.limits[l]}`).join(", ")}`);
