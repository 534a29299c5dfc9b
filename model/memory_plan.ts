/**
 * The memory plan of a training run, worked out from the config before any weight is loaded:
 * parameters, gradients, optimizer state, activations and scratch on the device, the host's
 * share while loading, and the peak, checked against the adapter's buffer limits and the
 * machine's memory. Pure: the caller supplies the limits (model/memory_check.ts reads them).
 *
 * The figures follow what the code allocates (model/llama.ts, model/lm_head.ts,
 * optimizer/adamw.ts, optimizer/gpu/distro_gpu.ts), with B sequences of T tokens per
 * micro-batch (N = B·T rows), C hidden, F intermediate, H/KVH heads of D, V vocabulary:
 * ```
 * parameters, gradients   4·P each (P = tensors padded to 64 floats), each in as many buffers
 *                         (segments of whole tensors) as maxBufferSize requires
 * AdamW                   m, v: 4·P each
 * DisTrO                  momentum with error feedback δ 4·P, saved/lookahead θ 4·P,
 *                         top-k entries 5·4·E (E ≈ Σ chunks·topk), DCT scratch 2·4·wave
 *                         tensor, or 2 × one storage binding when that is smaller (a tensor over
 *                         one binding is transformed in blocks of chunk rows)
 * activations (saved)     per layer h1 h2 xm [N,C], q att [N,H·D], k v [N,KVH·D], gate up act
 *                         [N,F], rstd ×2 [N], lse [N,H]; plus L+1 residuals [N,C], final norm;
 *                         with recomputation (model/recompute.ts) one layer's set, not L
 * backward scratch        N·(3C + 2H·D + 2KVH·D + 3F) floats
 * LM head                 logits chunk R·V (R ≈ 32 MiB / 4V rows)
 * matmul transposes       CPU profile: A and B of the largest nn/nt products (matmul_scratch.ts)
 * host, weights loaded     f32 weights 4·P, the largest weights file, one upload staging 4·P
 * host, seeded streamed    one init chunk per worker and a staging copy (16 MiB each at most)
 * host, checkpoint saves   one chunk read back and its staging copy (16 MiB each at most)
 * f16/bf16 precision      16-bit copies of the matmul weights (each padded to 128 elements),
 *                         16-bit saved norm/SwiGLU outputs
 * ```
 * The parameters, gradients, each optimizer state and the 16-bit weight copies are split into
 * segment buffers of whole tensors (model/params.ts `paramSegments`), so only each tensor must
 * fit `maxBufferSize`, as must each activation; tensors bound whole (layer weights, activations) are checked against
 * `maxStorageBufferBindingSize` (the embedding and LM head are split by row blocks).
 *
 * @module
 */
import { halfLayout, halfSegments, matmulWeightNames } from "./half_weights.ts";
import { countParameters, type LlamaConfig } from "./hf_config.ts";
import {
  llamaParamLayout,
  llamaTensorShapes,
  PARAM_ALIGN,
  paramSegments,
  SEEDED_CHUNK_FLOATS,
} from "./params.ts";
import type { ModelPrecision } from "./precision.ts";
import { transposeScratchBytes } from "./matmul_scratch.ts";
import { type RowBlock, rowBlocks } from "../shaders/mod.ts";
import { SAVE_CHUNK_FLOATS } from "./safetensors_stream.ts";

/** What the run will hold. */
export interface MemoryPlanInput {
  config: LlamaConfig;
  /** B: sequences per forward/backward. */
  microBatch: number;
  /** T: tokens per sequence. */
  seqLen: number;
  /** Micro-batches one submission holds token slots for (total batch / micro-batch). */
  slots: number;
  /**
   * The rows may carry position ids and packed documents (a `Preprocessed` dataset): each slot
   * then also holds a u32 position and a u32 document span per token (model/rows.ts). Default
   * false.
   */
  packedRows?: boolean;
  optimizer: "adamw" | "distro";
  /** DisTrO's chunk and top-k (default 64 and 4). */
  distro?: { chunk: number; topk: number };
  /** Matmul operand storage (f16 or bf16 adds weight copies, halves some activations). */
  precision: ModelPrecision;
  /**
   * Recompute activations in the backward (default false): one layer's activation set is kept
   * instead of L (the L+1 residuals stay).
   */
  recompute?: boolean;
  /** Bytes of the largest weights file read while loading (null or absent: seeded init). */
  loadFileBytes?: number | null;
  /**
   * The initial weights are seeded and streamed to the device a chunk at a time
   * (model/seeded_upload.ts, `deno task train` without weights): the host holds one chunk and
   * its staging copy, not the model. Default false: the host builds or loads the f32 weights
   * whole, then uploads them through one staging copy.
   */
  seededStream?: boolean;
  /**
   * Worker threads making the seeded chunks (model/seeded_init.ts `seededWorkerCount`): each
   * holds one chunk. Default 0, the chunks made one at a time on the main thread.
   */
  seededWorkers?: number;
  /**
   * A resume from F32 weights: they and the optimizer state are read from their files a chunk
   * at a time into the device buffers (model/streamed_load.ts, train/streamed_load.ts), so the
   * host holds one chunk and its staging copy. Default false.
   */
  streamedResume?: boolean;
  /**
   * Checkpoints are saved (`deno task train` without `--no-save`): each save streams the
   * parameters and optimizer state off the device a chunk at a time (train/streamed_save.ts),
   * so the host holds one chunk and its readback copy. Default false.
   */
  saves?: boolean;
  /** Most bytes of one LM-head logits chunk: the adapter profile's (default: the CPU's, 32 MiB). */
  logitsChunkBytes?: number;
  /**
   * The profile's `splitK.scratchBytes` (0 on CPU adapters, which never split; the default): the
   * matmul holds two scratches of split-K partials, each at most this, counted whole (an upper
   * bound). One grows to the largest product reduced at once; the other, made at the budget's
   * size, holds the weight gradients whose reduces wait for one dispatch (shaders/matmul.ts).
   */
  splitKScratchBytes?: number;
  /**
   * The matmul transposes its operands into scratch (the CPU profile's register tiling; the GPU
   * profile's tiled kernel does not): the model reserves it at its largest products
   * (model/matmul_scratch.ts). Default false.
   */
  transposeScratch?: boolean;
  /**
   * The adapter's `maxStorageBufferBindingSize`: DisTrO's DCT scratch holds one block of a tensor
   * larger than a binding (optimizer/chunk_blocks.ts), not the tensor. Default: unbounded.
   * {@link checkMemoryPlan} fills it in from its limits.
   */
  maxBindingBytes?: number;
}

/**
 * The most bytes of each of DisTrO's two DCT scratch buffers, unless one block of a tensor needs
 * more (optimizer/gpu/distro_gpu.ts): the scratch holds a wave of blocks laid out as in θ, whose
 * kernels run as one dispatch per pipeline, so the cap trades dispatches for memory on large
 * models (a 20M model is one wave; the Llama-1B on lavapipe is held to one 128 MiB binding anyway).
 */
export const DISTRO_WAVE_BYTES = 256 * 2 ** 20;

/** Chunk rows are a multiple of this, so row offsets stay 256-byte aligned. */
const LOGITS_ROW_ALIGN = 64;

/**
 * Rows of one LM-head logits chunk `[R, V]` for `rows` = B·T: as many as `chunkBytes` holds, a
 * multiple of 64 (at least 64), and at most `rows`.
 */
export function logitsChunkRows(rows: number, vocab: number, chunkBytes: number): number {
  const fit = Math.floor(chunkBytes / (vocab * F32) / LOGITS_ROW_ALIGN) * LOGITS_ROW_ALIGN;
  return Math.min(rows, Math.max(LOGITS_ROW_ALIGN, fit));
}

/**
 * The LM head's vocabulary blocks (model/lm_head.ts): a block's head rows `[Vb, C]` and logits
 * `[R, Vb]` must each fit `maxBytes`; blocks are a multiple of 4 rows so every part can run the
 * variant of the whole product; with 16-bit weights (`half`) they start at multiples of the
 * alignment in the 16-bit copy too. One block when the whole head fits.
 */
export function lmHeadBlocks(
  vocab: number,
  hidden: number,
  chunkRows: number,
  limits: { maxBytes: number; alignBytes: number; half: boolean },
): RowBlock[] {
  return rowBlocks(vocab, F32 * Math.max(hidden, chunkRows), {
    maxBytes: limits.maxBytes,
    alignBytes: limits.half ? 2 * limits.alignBytes : limits.alignBytes,
    multipleOf: 4,
  });
}

/** One line of the plan. */
export interface MemoryItem {
  label: string;
  bytes: number;
}

/** What the adapter and the machine offer. */
export interface MemoryLimits {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  /** The machine's total memory (`Deno.systemMemoryInfo().total`), or null if unknown. */
  systemTotal: number | null;
  /** Memory available to a new process (`.available`), or null if unknown. */
  systemAvailable: number | null;
  /** Device buffers live in system memory (CPU adapters such as lavapipe, integrated GPUs). */
  unified: boolean;
}

/** The plan: device items, host items, the largest buffer and binding, and the peak. */
export interface MemoryPlan {
  input: MemoryPlanInput;
  /** Trainable parameters (tied embeddings counted once). */
  parameters: number;
  device: MemoryItem[];
  deviceBytes: number;
  host: MemoryItem[];
  hostBytes: number;
  /** All parameters (as large as the gradients and each optimizer state), in segment buffers. */
  parameterBuffer: MemoryItem;
  /** The largest tensor with its padding: the least a parameter segment buffer must hold. */
  largestTensor: MemoryItem;
  /** The largest activation, a buffer bound whole (must fit both limits). */
  largestActivation: MemoryItem;
  /** The largest per-layer weight, bound whole (must fit `maxStorageBufferBindingSize`). */
  largestLayerTensor: MemoryItem;
  /** The largest buffer that cannot be split: a tensor or an activation (must fit `maxBufferSize`). */
  largestBuffer: MemoryItem;
  /** The largest tensor bound whole to one shader binding. */
  largestBinding: MemoryItem;
}

const F32 = 4;

/** The device and host memory a run of `input` needs. */
export function planMemory(input: MemoryPlanInput): MemoryPlan {
  const { config, microBatch: B, seqLen: T, slots } = input;
  for (const [name, v] of [["microBatch", B], ["seqLen", T], ["slots", slots]] as const) {
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${name} must be >= 1, got ${v}`);
  }
  const { hiddenSize: C, intermediateSize: F, headDim: D, vocabSize: V } = config;
  const H = config.numHeads, KVH = config.numKvHeads, L = config.numLayers;
  const N = B * T;
  // A tied model has no lm_head.weight (its head is the embedding matrix).
  const shapes = llamaTensorShapes(config);
  const sizes = shapes.map(([name, shape]) => ({ name, shape, size: product(shape) }));
  const P = sizes.reduce((s, t) => s + Math.ceil(t.size / PARAM_ALIGN) * PARAM_ALIGN, 0);
  const largestTensor = sizes.reduce((a, b) => (b.size > a.size ? b : a));
  const half = input.precision !== "f32";
  const mmBytes = half ? 2 : F32; // activations only matmuls read
  const perLayer = N * C * mmBytes * 2 + // h1, h2
    N * F * mmBytes + // act
    F32 * (N * 2 + // rstd1, rstd2
        N * H * D * 2 + // q, att
        N * KVH * D * 2 + // k, v
        N * H + // lse
        N * C + // xm
        N * F * 2); // gate, up
  const sets = input.recompute ? 1 : L;
  const activations = sets * perLayer + F32 * ((L + 1) * N * C + N * C + N);
  const scratch = F32 * N * (3 * C + 2 * H * D + 2 * KVH * D + 3 * F);
  const chunkRows = logitsChunkRows(N, V, input.logitsChunkBytes ?? 32 * 2 ** 20);
  const device: MemoryItem[] = [
    { label: "parameters (f32 masters)", bytes: F32 * P },
    { label: "gradients", bytes: F32 * P },
  ];
  if (input.optimizer === "adamw") {
    device.push({ label: "AdamW moments m, v", bytes: 2 * F32 * P });
  } else {
    const { chunk, topk } = input.distro ?? { chunk: 64, topk: 4 };
    // A wave of blocks: the parameters, at most a binding and the wave cap, at least one block.
    const binding = (input.maxBindingBytes ?? Infinity) / F32;
    const dctBlock = Math.min(largestTensor.size, binding);
    const wave = Math.max(dctBlock, Math.min(P, binding, DISTRO_WAVE_BYTES / F32));
    const entries = sizes.reduce(
      (s, t) => s + Math.ceil(t.size / (t.shape.length === 2 ? chunk * chunk : chunk)) * topk,
      0,
    );
    device.push(
      { label: "DisTrO momentum + error feedback (δ)", bytes: F32 * P },
      { label: "DisTrO saved parameters (lookahead)", bytes: F32 * P },
      {
        label: "DisTrO top-k and DCT scratch",
        // Two scratch buffers and the row maxima (one word per coefficient row of a chunk).
        bytes: F32 * (5 * entries + 2 * wave + Math.ceil(wave / chunk)),
      },
    );
  }
  device.push(
    {
      // Short enough for the plan's label column either way.
      label: input.recompute
        ? `activations saved (${B}×${T} tokens, recomputed)`
        : `activations saved for backward (${B}×${T} tokens)`,
      bytes: activations,
    },
    { label: "backward scratch", bytes: scratch },
    { label: `LM head logits chunk (${chunkRows}×${V})`, bytes: F32 * chunkRows * V },
    // Per slot: tokens, targets, losses [N] and the embedding gradient's links [2N]; then the
    // gathered losses [slots·N] and the squared gradient norm.
    { label: `token slots (${slots})`, bytes: F32 * (5 * N * slots + N * slots + 4) },
  );
  if (input.packedRows) {
    device.push({ label: "token positions and documents", bytes: 3 * 4 * N * slots });
  }
  if ((input.splitKScratchBytes ?? 0) > 0) {
    // Immediate and deferred reduces each have a scratch of at most the budget.
    device.push({ label: "split-K partials (at most)", bytes: 2 * input.splitKScratchBytes! });
  }
  if (input.transposeScratch) {
    // The LM head's blocks at 256-byte offsets, WebGPU's default alignment.
    const blocks = lmHeadBlocks(V, C, chunkRows, {
      maxBytes: input.maxBindingBytes ?? Infinity,
      alignBytes: 256,
      half,
    });
    const { a, b } = transposeScratchBytes({
      config,
      rows: N,
      chunkRows,
      headBlockRows: Math.max(...blocks.map((x) => x.rows)),
      weightBytes: half ? 2 : F32,
    });
    device.push({ label: "matmul transpose scratch", bytes: a + b });
  }
  if (half) {
    const copies = halfLayout(llamaParamLayout(config), matmulWeightNames(config));
    device.push(
      { label: `${input.precision} copies of the matmul weights`, bytes: 2 * copies.totalSize },
      { label: `f32 staging before ${input.precision} copies`, bytes: F32 * N * Math.max(C, F) },
    );
  }
  const host: MemoryItem[] = [];
  if (input.seededStream) {
    const chunk = F32 * Math.min(SEEDED_CHUNK_FLOATS, largestTensor.size);
    const workers = input.seededWorkers ?? 0;
    host.push(
      workers === 0 ? { label: "seeded init, one chunk at a time", bytes: chunk } : {
        label: `seeded init, ${workers} chunks at a time (one per worker)`,
        bytes: workers * chunk,
      },
      { label: "upload staging (one chunk)", bytes: chunk },
    );
  } else if (input.streamedResume) {
    const chunk = F32 * Math.min(SAVE_CHUNK_FLOATS, largestTensor.size);
    host.push(
      { label: "resume: weights and optimizer state, one chunk at a time", bytes: chunk },
      { label: "upload staging (one chunk)", bytes: chunk },
    );
  } else {
    host.push({ label: "f32 weights in host memory", bytes: F32 * P });
    if (input.loadFileBytes) {
      // readModelDir reads and converts a tensor at a time (model/checkpoint.ts): at most the
      // largest tensor's f32 bytes, and never more than the file.
      host.push({
        label: "largest tensor while converting",
        bytes: Math.min(input.loadFileBytes, F32 * largestTensor.size),
      });
    }
    host.push({ label: "upload staging (one parameter copy)", bytes: F32 * P });
  }
  if (input.saves) {
    const chunk = F32 * Math.min(SAVE_CHUNK_FLOATS, largestTensor.size);
    host.push(
      { label: "checkpoint save, one chunk at a time", bytes: chunk },
      { label: "save readback staging (one chunk)", bytes: chunk },
    );
  }
  const deviceBytes = sum(device);
  const hostBytes = sum(host);
  const activation = largest([
    { label: `[N, F] activation (N = ${N})`, bytes: F32 * N * F },
    { label: `[N, H·D] activation (N = ${N})`, bytes: F32 * N * H * D },
  ]);
  const layerTensor = largest(
    sizes.filter((t) => t.name.startsWith("model.layers."))
      .map((t) => ({ label: `tensor ${t.name}`, bytes: F32 * t.size })),
  );
  const params = { label: "parameters", bytes: F32 * P };
  const tensor = {
    label: `tensor ${largestTensor.name}`,
    bytes: F32 * Math.ceil(largestTensor.size / PARAM_ALIGN) * PARAM_ALIGN,
  };
  return {
    input,
    parameters: countParameters(config),
    device,
    deviceBytes,
    host,
    hostBytes,
    parameterBuffer: params,
    largestTensor: tensor,
    largestActivation: activation,
    largestLayerTensor: layerTensor,
    largestBuffer: largest([tensor, activation]),
    largestBinding: largest([layerTensor, activation]),
  };
}

/** A limit the plan exceeds, and what would make it fit (null when no setting can). */
export interface MemoryProblem {
  message: string;
  fix: MemoryFix | null;
}

/** A setting that would make the plan fit. */
export type MemoryFix =
  | { kind: "recompute" }
  | { kind: "microBatch" | "seqLen"; value: number; recompute?: true };

/** The verdict: fits, or the problems (each with its fix); warnings never block. */
export interface MemoryVerdict {
  fits: boolean;
  problems: MemoryProblem[];
  warnings: string[];
  /** Device + host when memory is unified, else host. */
  peakBytes: number;
  /**
   * Buffers the parameters take (as do the gradients and each optimizer state): 1 when they
   * fit `maxBufferSize`; null when a tensor alone is over it.
   */
  parameterSegments: number | null;
  /**
   * Buffers the 16-bit weight copies take (f16/bf16 precision; null with f32, or when a tensor
   * alone is over `maxBufferSize`). They are split like the parameters, on whole tensors.
   */
  halfCopySegments: number | null;
}

/** `input` with the binding limit of `limits`, unless it names one. */
function withBindingLimit(input: MemoryPlanInput, limits: MemoryLimits): MemoryPlanInput {
  return { maxBindingBytes: limits.maxStorageBufferBindingSize, ...input };
}

/** Whether `input`'s plan fits `limits`: every problem names the smallest change that fixes it. */
export function checkMemoryPlan(input: MemoryPlanInput, limits: MemoryLimits): MemoryVerdict {
  input = withBindingLimit(input, limits);
  const plan = planMemory(input);
  const peak = (p: MemoryPlan) => p.hostBytes + (limits.unified ? p.deviceBytes : 0);
  const activationLimit = Math.min(limits.maxBufferSize, limits.maxStorageBufferBindingSize);
  const problems: MemoryProblem[] = [];
  const warnings: string[] = [];
  let parameterSegments: number | null = null;
  let halfCopySegments: number | null = null;
  if (plan.largestTensor.bytes > limits.maxBufferSize) {
    problems.push({
      message: `the ${plan.largestTensor.label} takes ${formatBytes(plan.largestTensor.bytes)}, ` +
        `over the adapter's maxBufferSize of ${formatBytes(limits.maxBufferSize)} ` +
        `(parameters are split into buffers between tensors, never inside one)`,
      fix: null,
    });
  } else {
    const layout = llamaParamLayout(input.config);
    parameterSegments = paramSegments(layout, limits.maxBufferSize).length;
    if (input.precision !== "f32") {
      // A 16-bit copy is no larger than its f32 master, so it fits a buffer when that does.
      const names = matmulWeightNames(input.config);
      halfCopySegments = halfSegments(layout, { names, maxBufferBytes: limits.maxBufferSize })
        .length;
    }
  }
  if (plan.largestLayerTensor.bytes > limits.maxStorageBufferBindingSize) {
    problems.push({
      message: `the ${plan.largestLayerTensor.label} takes ` +
        `${formatBytes(plan.largestLayerTensor.bytes)}, over the adapter's ` +
        `maxStorageBufferBindingSize of ${formatBytes(limits.maxStorageBufferBindingSize)} ` +
        `(layer weights are bound whole)`,
      fix: null,
    });
  }
  // Settings only change activations and the peak: recomputation alone first (it keeps the
  // batch shape), else the largest micro-batch that fits (with recomputation if need be), else
  // the longest sequence (halving) at micro-batch 1.
  const fitsWith = (p: MemoryPlan) =>
    p.largestActivation.bytes <= activationLimit &&
    (limits.systemTotal === null || peak(p) <= limits.systemTotal);
  // What changes the training least comes first: recomputation and the micro-batch leave the
  // maths alone (gradients are accumulated), a shorter sequence does not.
  const smallerBatch = (recompute: boolean): MemoryFix | null => {
    for (let b = input.microBatch - 1; b >= 1; b--) {
      if (fitsWith(planMemory({ ...input, recompute, microBatch: b }))) {
        return { kind: "microBatch", value: b, ...alsoRecompute(recompute) };
      }
    }
    return null;
  };
  const shorterSequence = (recompute: boolean): MemoryFix | null => {
    for (let t = Math.floor(input.seqLen / 2); t >= 2; t = Math.floor(t / 2)) {
      if (fitsWith(planMemory({ ...input, recompute, microBatch: 1, seqLen: t }))) {
        return { kind: "seqLen", value: t, ...alsoRecompute(recompute) };
      }
    }
    return null;
  };
  // Marks a fix that also needs the recomputation the run did not ask for.
  const alsoRecompute = (recompute: boolean) =>
    recompute && !input.recompute ? { recompute: true as const } : {};
  const fix = (): MemoryFix | null => {
    if (input.recompute) return smallerBatch(true) ?? shorterSequence(true);
    if (fitsWith(planMemory({ ...input, recompute: true }))) return { kind: "recompute" };
    return smallerBatch(false) ?? smallerBatch(true) ?? shorterSequence(false) ??
      shorterSequence(true);
  };
  const over: string[] = [];
  if (plan.largestActivation.bytes > activationLimit) {
    over.push(
      `the ${plan.largestActivation.label} takes ${formatBytes(plan.largestActivation.bytes)}, ` +
        `over the adapter's ${
          limits.maxBufferSize < limits.maxStorageBufferBindingSize
            ? "maxBufferSize"
            : "maxStorageBufferBindingSize"
        } of ${formatBytes(activationLimit)}`,
    );
  }
  if (limits.systemTotal !== null && peak(plan) > limits.systemTotal) {
    over.push(
      `the peak of ${formatBytes(peak(plan))} is over this machine's ` +
        `${formatBytes(limits.systemTotal)} of memory`,
    );
  } else if (limits.systemAvailable !== null && peak(plan) > limits.systemAvailable) {
    warnings.push(
      `the peak of ${formatBytes(peak(plan))} is over the ${
        formatBytes(limits.systemAvailable)
      } available now: expect swapping, or stop other work first`,
    );
  }
  if (over.length > 0) {
    // When the parameters cannot fit at all, no setting helps: skip the search.
    problems.push({ message: over.join("; "), fix: problems.length > 0 ? null : fix() });
  }
  return {
    fits: problems.length === 0,
    problems,
    warnings,
    peakBytes: peak(plan),
    parameterSegments,
    halfCopySegments,
  };
}

/** The plan as printable lines; `flags` names the setting behind each fix (e.g. CLI flags). */
export function formatMemoryPlan(
  input: MemoryPlanInput,
  limits: MemoryLimits,
  options: { flags: Record<MemoryFix["kind"], string> },
): { lines: string[]; verdict: MemoryVerdict; refusal: string | null } {
  const plan = planMemory(withBindingLimit(input, limits));
  const verdict = checkMemoryPlan(input, limits);
  const copies = plan.device.find((i) => i.label.endsWith("copies of the matmul weights"));
  // A label longer than the column still gets a space before its figure.
  const pad = (label: string) => `  ${label.padEnd(45)} `;
  const lines = [
    `memory plan: ${formatCount(plan.parameters)} parameters, ${input.optimizer}, ` +
    `${input.precision}, micro-batch ${input.microBatch} × ${input.seqLen} tokens` +
    (input.recompute ? ", activations recomputed" : ""),
    ...plan.device.map((i) => pad(i.label) + formatBytes(i.bytes).padStart(10)),
    pad("device total") + formatBytes(plan.deviceBytes).padStart(10),
    ...plan.host.map((i) => pad(`host: ${i.label}`) + formatBytes(i.bytes).padStart(10)),
    pad(limits.unified ? "peak (device buffers are system memory)" : "peak host") +
    formatBytes(verdict.peakBytes).padStart(10),
    pad("parameter buffers (so gradients, each state)") +
    (verdict.parameterSegments === null
      ? "none fits"
      : `${verdict.parameterSegments}`.padStart(10) +
        ` of at most ${formatBytes(Math.min(limits.maxBufferSize, plan.parameterBuffer.bytes))}`),
    ...(copies === undefined || verdict.halfCopySegments === null ? [] : [
      pad(`${input.precision} weight copy buffers`) +
      `${verdict.halfCopySegments}`.padStart(10) +
      ` of at most ${formatBytes(Math.min(limits.maxBufferSize, copies.bytes))}`,
    ]),
    pad(`largest buffer: ${plan.largestBuffer.label}`) +
    `${formatBytes(plan.largestBuffer.bytes).padStart(10)} of maxBufferSize ` +
    formatBytes(limits.maxBufferSize),
    pad(`largest binding: ${plan.largestBinding.label}`) +
    `${formatBytes(plan.largestBinding.bytes).padStart(10)} of maxStorageBufferBindingSize ` +
    formatBytes(limits.maxStorageBufferBindingSize),
  ];
  if (limits.systemTotal !== null) {
    lines.push(
      pad("machine memory") + formatBytes(limits.systemTotal).padStart(10) +
        (limits.systemAvailable === null
          ? ""
          : ` (${formatBytes(limits.systemAvailable)} available)`),
    );
  }
  for (const w of verdict.warnings) lines.push(`  warning: ${w}`);
  if (verdict.fits) return { lines, verdict, refusal: null };
  const reasons = verdict.problems.map((p) => {
    if (p.fix === null) return p.message;
    if (p.fix.kind === "recompute") {
      return `${p.message}; ${options.flags.recompute} would fit (the same training, about a ` +
        "third more compute: each layer's activations are recomputed in the backward)";
    }
    const also = p.fix.recompute ? `${options.flags.recompute} and ` : "";
    return `${p.message}; ${also}${options.flags[p.fix.kind]} ${p.fix.value} would fit`;
  });
  const fixable = verdict.problems.length === 1 && verdict.problems[0].fix !== null;
  if (!fixable) {
    reasons.push(
      `no smaller ${options.flags.microBatch} or ${options.flags.seqLen}${
        input.recompute ? "" : `, with or without ${options.flags.recompute},`
      } makes it fit: it needs ` +
        `a smaller model or a larger adapter/machine`,
    );
  }
  return { lines, verdict, refusal: `the model does not fit: ${reasons.join("; ")}` };
}

function product(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function sum(items: readonly MemoryItem[]): number {
  return items.reduce((s, i) => s + i.bytes, 0);
}

function largest(items: readonly MemoryItem[]): MemoryItem {
  return items.reduce((a, b) => (b.bytes > a.bytes ? b : a));
}

/** Bytes in binary units with three significant digits: `1.50 GiB`, `640 MiB`, `1000 MiB`. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes, u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  // 1000-1023 of a unit: whole numbers (toPrecision(3) would write 1.00e+3).
  const figure = v >= 1000 ? v.toFixed(0) : v.toPrecision(3);
  return u === 0 ? `${v} B` : `${figure} ${units[u]}`;
}

/** A count with a metric suffix: `1.24B`, `19.6M`. */
export function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toPrecision(3)}B`;
  if (n >= 1e6) return `${(n / 1e6).toPrecision(3)}M`;
  if (n >= 1e3) return `${(n / 1e3).toPrecision(3)}K`;
  return String(Math.round(n));
}
