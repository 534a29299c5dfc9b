/**
 * Each side's expected peak memory, printed before it starts, and the refusal when the machine's
 * available memory (MemAvailable) is below it: a 1B comparison needs about 20 GiB per side, and
 * an OOM kill half-way through says less than a refusal naming the numbers. Pure: the caller
 * passes the available memory.
 *
 * Our side is model/memory_plan.ts's plan of `deno task train` (fp32, AdamW, one micro-batch,
 * weights streamed from their files) plus one readback chunk for the gradient norms and the
 * process's own footprint. PyTorch's is its four parameter-sized arrays (weights, gradients,
 * AdamW's exp_avg and exp_avg_sq), two temporaries the size of the largest tensor (AdamW's
 * single-tensor step: `exp_avg_sq.sqrt() / bias_correction`), the activations autograd keeps,
 * and the interpreter with torch loaded.
 *
 * @module
 */
import {
  countParameters,
  formatBytes,
  type LlamaConfig,
  llamaTensorShapes,
  type MemoryItem,
  planMemory,
  SAVE_CHUNK_FLOATS,
} from "../../model/mod.ts";

/**
 * Our process's own footprint besides the plan's buffers: Deno, V8's heap, lavapipe and the
 * compiled pipelines (about 0.45 GiB measured with the tiny model; docs/benchmarks.md).
 */
export const ENGINE_PROCESS_BYTES = 512 * 2 ** 20;
/** Python with torch and OpenBLAS loaded (about 0.3 GiB measured with the tiny model). */
export const TORCH_PROCESS_BYTES = 384 * 2 ** 20;

/** One side's expected peak and what it is made of. */
export interface SidePlan {
  side: string;
  items: MemoryItem[];
  peakBytes: number;
}

/** The batch shape both sides run. */
export interface PlanShape {
  batch: number;
  seqLen: number;
  /** Our side recomputes activations (`--recompute`); PyTorch never does. */
  recompute?: boolean;
}

const F32 = 4;

function sidePlan(side: string, items: MemoryItem[]): SidePlan {
  return { side, items, peakBytes: items.reduce((s, i) => s + i.bytes, 0) };
}

/**
 * Our side's plan. `unified`: the adapter's buffers are host memory (lavapipe, an integrated
 * GPU), so they count in the peak; on a discrete GPU only the host items do.
 */
export function enginePlan(config: LlamaConfig, shape: PlanShape, unified: boolean): SidePlan {
  const plan = planMemory({
    config,
    microBatch: shape.batch,
    seqLen: shape.seqLen,
    slots: 1,
    optimizer: "adamw",
    precision: "f32",
    recompute: shape.recompute ?? false,
    // F32 weights stream from their files into the parameter buffers, as a resume does.
    streamedResume: true,
    // On lavapipe (unified) the CPU profile transposes matmul operands into scratch, and its LM
    // head is cut at WebGPU's default 128 MiB binding.
    transposeScratch: unified,
    maxBindingBytes: unified ? 128 * 2 ** 20 : undefined,
  });
  const [params, grads, moments, ...rest] = plan.device;
  const largest = llamaTensorShapes(config)
    .reduce((m, [, s]) => Math.max(m, s.reduce((a, b) => a * b, 1)), 0);
  const items: MemoryItem[] = [];
  if (unified) {
    items.push(
      {
        label: "parameters, gradients, AdamW m and v",
        bytes: params.bytes + grads.bytes + moments.bytes,
      },
      { label: "activations, scratch, logits chunk", bytes: rest.reduce((s, i) => s + i.bytes, 0) },
    );
  }
  items.push(
    { label: "weights load, one chunk and its staging", bytes: plan.hostBytes },
    {
      label: "gradient norms, one readback chunk",
      bytes: F32 * Math.min(SAVE_CHUNK_FLOATS, largest),
    },
    { label: "Deno, lavapipe, pipelines", bytes: ENGINE_PROCESS_BYTES },
  );
  return sidePlan("ours", items);
}

/** PyTorch's plan on the CPU (on CUDA the arrays are device memory: only the process counts). */
export function torchPlan(config: LlamaConfig, shape: PlanShape, device: "cpu" | "cuda"): SidePlan {
  const P = countParameters(config);
  const sizes = llamaTensorShapes(config).map(([, s]) => s.reduce((a, b) => a * b, 1));
  const largest = Math.max(...sizes);
  const N = shape.batch * shape.seqLen;
  const { hiddenSize: C, intermediateSize: F, headDim: D, vocabSize: V } = config;
  const H = config.numHeads, KVH = config.numKvHeads;
  // What autograd keeps per layer: norm inputs and outputs, q, k, v and their rotations, the
  // GQA-expanded k and v, the scores and their softmax, and the MLP's four [N, F] arrays.
  const perLayer = N * (6 * C + 6 * H * D + 4 * KVH * D + 4 * F) +
    3 * shape.batch * H * shape.seqLen * shape.seqLen;
  // Logits, their log-softmax, and the logits' gradient.
  const head = 3 * N * V + 3 * N * C;
  const items: MemoryItem[] = [];
  if (device === "cpu") {
    items.push(
      { label: "weights, gradients, exp_avg, exp_avg_sq", bytes: 4 * F32 * P },
      { label: "AdamW temporaries (2 x largest tensor)", bytes: 2 * F32 * largest },
      { label: "activations autograd keeps", bytes: F32 * (config.numLayers * perLayer + head) },
    );
  }
  items.push(
    { label: "load, one chunk", bytes: F32 * Math.min(SAVE_CHUNK_FLOATS, largest) },
    { label: "Python, torch, BLAS", bytes: TORCH_PROCESS_BYTES },
  );
  return sidePlan("PyTorch", items);
}

/** One line: the side's expected peak, its parts, and the memory available now. */
export function formatSidePlan(plan: SidePlan, available: number | null): string {
  const parts = plan.items.map((i) => `${i.label} ${formatBytes(i.bytes)}`).join(", ");
  return `memory, ${plan.side}: expected peak ${formatBytes(plan.peakBytes)} (${parts}); ` +
    (available === null ? "MemAvailable unknown" : `MemAvailable ${formatBytes(available)}`);
}

/**
 * Why the side must not start (its peak is over the available memory), naming both numbers and
 * what to change; null when it fits or the available memory is unknown.
 */
export function memoryRefusal(plan: SidePlan, available: number | null): string | null {
  if (available === null || plan.peakBytes <= available) return null;
  return `${plan.side} would need about ${formatBytes(plan.peakBytes)} at its peak, but ` +
    `MemAvailable is ${formatBytes(available)}: stop other work first, or compare a smaller ` +
    `model, --batch or --seq-len (refused before starting rather than killed for memory mid-run)`;
}
