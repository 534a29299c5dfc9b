/**
 * The memory plan at the edges: reads the adapter's limits and the machine's memory, prints the
 * plan (model/memory_plan.ts) and refuses a run that cannot fit, before weights are loaded or
 * buffers made.
 *
 * @module
 */
import {
  formatMemoryPlan,
  type MemoryFix,
  type MemoryLimits,
  type MemoryPlanInput,
  type MemoryVerdict,
} from "./memory_plan.ts";
import { type GpuRuntime, isCpuAdapter, requestGpuAdapter } from "../shaders/mod.ts";

/** The run cannot fit this adapter or machine; the message names what would make it fit. */
export class MemoryPlanError extends Error {
  /** The verdict behind the refusal. */
  readonly verdict: MemoryVerdict;
  /** Builds the error. */
  constructor(message: string, verdict: MemoryVerdict) {
    super(message);
    this.name = "MemoryPlanError";
    this.verdict = verdict;
  }
}

/** `Deno.systemMemoryInfo()`, or nulls where it is unavailable (no permission, no /proc). */
function systemMemory(): { systemTotal: number | null; systemAvailable: number | null } {
  try {
    const info = Deno.systemMemoryInfo();
    return { systemTotal: info.total, systemAvailable: info.available };
  } catch {
    return { systemTotal: null, systemAvailable: null };
  }
}

/** The limits a runtime was granted, with the machine's memory. */
export function runtimeMemoryLimits(rt: GpuRuntime): MemoryLimits {
  return {
    maxBufferSize: rt.limits.maxBufferSize,
    maxStorageBufferBindingSize: rt.limits.maxStorageBufferBindingSize,
    unified: isCpuAdapter(rt.info),
    ...systemMemory(),
  };
}

/**
 * The limits of the adapter `GpuRuntime.create` would pick (it requests the adapter's maxima),
 * with the machine's memory and whether the adapter has shader-f16; null without WebGPU.
 */
export async function adapterMemoryLimits(): Promise<
  (MemoryLimits & { hasF16: boolean }) | null
> {
  const adapter = await requestGpuAdapter();
  if (!adapter) return null;
  return {
    maxBufferSize: adapter.limits.maxBufferSize,
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    unified: isCpuAdapter(adapter.info),
    hasF16: adapter.features.has("shader-f16"),
    ...systemMemory(),
  };
}

/**
 * Writes the plan's lines and throws {@link MemoryPlanError} when it cannot fit; `flags` names
 * the setting behind each fix (`--micro-batch`, ...).
 */
export function reportMemoryPlan(
  input: MemoryPlanInput,
  limits: MemoryLimits,
  options: { flags: Record<MemoryFix["kind"], string>; write: (line: string) => void },
): MemoryVerdict {
  const { lines, verdict, refusal } = formatMemoryPlan(input, limits, options);
  for (const line of lines) options.write(line);
  if (refusal !== null) throw new MemoryPlanError(refusal, verdict);
  return verdict;
}

/**
 * Bytes of the largest weights file of an HF model folder (`model.safetensors`, else the
 * largest `model-*.safetensors` shard), or null when it has none: the plan counts one file's
 * bytes held while converting to f32.
 */
export async function largestWeightsFile(dir: string): Promise<number | null> {
  let largest: number | null = null;
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !/^model(-\d{5}-of-\d{5})?\.safetensors$/.test(e.name)) continue;
      const { size } = await Deno.stat(`${dir}/${e.name}`);
      largest = Math.max(largest ?? 0, size);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return largest;
}
