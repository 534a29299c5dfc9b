/**
 * Prints what the WebGPU adapter offers, for `env.txt` of bench/gpu/run.sh: its description,
 * features (`shader-f16`, `timestamp-query`; Deno 2.9.6 leaves `subgroups` out of this list even
 * where a device gets it), subgroup sizes, the limits the kernels are shaped by, then whether the
 * runtime's device got `subgroups` and what the subgroup probe (shaders/subgroups.ts) saw.
 *
 * Run: `deno run -A bench/gpu/adapter.ts`
 *
 * @module
 */
import { GpuRuntime, probeSubgroups, requestGpuAdapter } from "../../shaders/mod.ts";

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
// The runtime asks for its own adapter and device, subgroups included.
using rt = await GpuRuntime.create();
console.log(`device: subgroups ${rt.hasSubgroups}`);
if (rt.hasSubgroups) {
  const probe = await probeSubgroups(rt);
  console.log(
    `subgroup probe (${probe.invocations} invocations): subgroup_size ${probe.sizes.join(", ")}, ` +
      `subgroupAdd(1) ${probe.addMatchesSize ? "equals" : "differs from"} subgroup_size`,
  );
}
