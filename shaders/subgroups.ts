/**
 * What the device's subgroups are, for bench/gpu/adapter.ts (env.txt of a GPU call): one
 * workgroup in which every invocation records `@builtin(subgroup_size)` and `subgroupAdd(1u)`.
 * No training kernel uses subgroups (docs/kernels.md, "The tiled-vec4 kernel", says why); this
 * probe is the one kernel that needs them, and it refuses by name when the device lacks them.
 *
 * @module
 */
import type { GpuRuntime } from "./gpu.ts";
import { bindTensors, dispatch } from "./kernel.ts";

/** What one probe saw. */
export interface SubgroupProbe {
  /** Invocations in the probe's workgroup. */
  readonly invocations: number;
  /** The distinct `subgroup_size` values the invocations read, ascending. */
  readonly sizes: number[];
  /** Whether every `subgroupAdd(1u)` equalled its invocation's `subgroup_size` (full subgroups). */
  readonly addMatchesSize: boolean;
}

/**
 * The probe's WGSL for a workgroup of `wg` invocations: uniform `count` (unused but for the
 * shared binding layout), binding 1 `out [wg, 2]` u32: size, then the subgroup sum of ones. No
 * `enable subgroups;`: Naga (Deno 2.9.6) refuses the directive and takes the builtins without it.
 */
export function subgroupProbeKernel(wg: number): string {
  return `struct Params { count: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(${wg})
fn main(@builtin(local_invocation_index) li: u32, @builtin(subgroup_size) size: u32) {
  let ones = subgroupAdd(1u);
  if (li < p.count) {
    out[2u * li] = size;
    out[2u * li + 1u] = ones;
  }
}
`;
}

/**
 * Runs the probe on `rt` with a workgroup of up to 256 invocations. Throws a RangeError naming
 * the adapter when the device has no `subgroups` (`rt.hasSubgroups` false).
 */
export async function probeSubgroups(rt: GpuRuntime): Promise<SubgroupProbe> {
  if (!rt.hasSubgroups) {
    throw new RangeError(
      `the subgroup probe needs the "subgroups" feature, which adapter ` +
        `"${rt.info.description}" did not grant (or subgroups: false was given)`,
    );
  }
  const wg = Math.min(256, rt.limits.maxComputeInvocationsPerWorkgroup);
  const pipeline = rt.pipeline(`subgroups/probe/${wg}`, () => subgroupProbeKernel(wg));
  const out = rt.buffer("subgroup probe", wg * 2 * 4);
  try {
    const step = rt.beginStep("subgroup probe");
    dispatch(step.pass, pipeline, bindTensors(rt, pipeline, [wg, 0, 0, 0], [out]), [1]);
    await step.submit();
    const words = await rt.readU32(out);
    const sizes = new Set<number>();
    let addMatchesSize = true;
    for (let i = 0; i < wg; i++) {
      sizes.add(words[2 * i]);
      if (words[2 * i + 1] !== words[2 * i]) addMatchesSize = false;
    }
    return { invocations: wg, sizes: [...sizes].sort((x, y) => x - y), addMatchesSize };
  } finally {
    rt.destroyBuffer(out);
  }
}
