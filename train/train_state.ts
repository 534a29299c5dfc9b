/**
 * The training-state half of a resumable checkpoint, beside the Hugging Face model files
 * (`config.json`, `model.safetensors`): pure encoders and validating decoders, no I/O
 * (train/checkpoint.ts reads and writes the folder). docs/training.md documents the format.
 *
 * - `trainer_state.json`: the format tag and version, the optimizer steps done (`step`), the
 *   optimizer kind, the batch geometry and data position (`total_batch`, `micro_batch`,
 *   `sequence_length`, `data.sequences`, `data.shuffle_seed`, `data.next_sequence`), the learning-rate schedule the
 *   run used, and the dtype of the saved weights.
 * - `optimizer.safetensors`: the optimizer's tensors, per parameter, named after the
 *   parameter: AdamW `{param}.exp_avg` and `{param}.exp_avg_sq` (F32, the parameter's shape);
 *   DisTrO `{param}.delta` (F32, the parameter's shape) and, once a step was taken,
 *   `{param}.own_indices` (U32) and `{param}.own_values` (F32), both `[chunks, k]`. The
 *   `__metadata__` repeats the format, the optimizer kind and (AdamW) its step count.
 *
 * @module
 */
import type { LrSchedule } from "../common/mod.ts";
import {
  type FloatDtype,
  type ParamLayout,
  type SafetensorsFile,
  type StoredTensor,
} from "../model/mod.ts";
import type { ChunkLayout, OptimizerState } from "../optimizer/mod.ts";

/** File of the trainer state inside a checkpoint folder. */
export const TRAINER_STATE_FILE = "trainer_state.json";
/** File of the optimizer tensors inside a checkpoint folder. */
export const OPTIMIZER_FILE = "optimizer.safetensors";
/** The `format` tag of both files. */
export const STATE_FORMAT = "psyche-ts/trainer-state";
/** The version this code writes and reads. */
export const STATE_VERSION = 1;

/** What `trainer_state.json` holds. */
export interface TrainerState {
  /** Optimizer steps done; the resumed run's first step is `step + 1`. */
  step: number;
  optimizer: "adamw" | "distro";
  /** Sequences per step (G). */
  totalBatch: number;
  /**
   * Sequences per forward/backward pass; absent in checkpoints written before it was recorded.
   * A resume that keeps it sums the micro-batches' gradients in the same order: the same bits.
   */
  microBatch?: number;
  /** Tokens per sequence (T). */
  sequenceLength: number;
  /** Sequences in the dataset, its shuffle seed (null: file order) and the next to read. */
  data: { sequences: number; shuffleSeed: number | null; nextSequence: number };
  /** The schedule of the run that saved (the resumed run uses its own flags' schedule). */
  lrSchedule: LrSchedule;
  /** Dtype of `model.safetensors`: a resume is bit-exact only from F32 weights. */
  weightsDtype: FloatDtype;
}

/** A checkpoint folder's training state that cannot be used; the message names what is wrong. */
export class TrainerStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TrainerStateError";
  }
}

/**
 * Runs `read` on `dir`'s optimizer file; a missing file becomes a {@link TrainerStateError}
 * naming the folder (other errors pass through).
 */
export async function readOptimizerFile<T>(
  dir: string,
  read: (path: string) => Promise<T>,
): Promise<T> {
  try {
    return await read(`${dir}/${OPTIMIZER_FILE}`);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new TrainerStateError(`Cannot resume from "${dir}": ${OPTIMIZER_FILE} is missing`);
  }
}

/** The sequence step `step + 1` reads first: `step·G mod N` (train/batches.ts). */
export function nextSequence(step: number, totalBatch: number, sequences: number): number {
  return (step * totalBatch) % sequences;
}

/** `trainer_state.json`'s text. */
export function encodeTrainerState(s: TrainerState): string {
  return JSON.stringify(
    {
      format: STATE_FORMAT,
      version: STATE_VERSION,
      step: s.step,
      optimizer: s.optimizer,
      total_batch: s.totalBatch,
      ...(s.microBatch === undefined ? {} : { micro_batch: s.microBatch }),
      sequence_length: s.sequenceLength,
      data: {
        sequences: s.data.sequences,
        shuffle_seed: s.data.shuffleSeed,
        next_sequence: s.data.nextSequence,
      },
      lr_schedule: s.lrSchedule,
      weights_dtype: s.weightsDtype,
    },
    null,
    2,
  ) + "\n";
}

/** Parses and checks `trainer_state.json`; `file` names it in errors. */
export function decodeTrainerState(text: string, file = TRAINER_STATE_FILE): TrainerState {
  const fail = (what: string): never => {
    throw new TrainerStateError(`Cannot resume from "${file}": ${what}`);
  };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    fail(`not JSON (${(e as Error).message})`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) fail("not a JSON object");
  const o = raw as Record<string, unknown>;
  if (o.format !== STATE_FORMAT) {
    fail(`"format" is ${JSON.stringify(o.format)}, expected "${STATE_FORMAT}"`);
  }
  if (o.version !== STATE_VERSION) {
    fail(`"version" is ${JSON.stringify(o.version)}, this build reads version ${STATE_VERSION}`);
  }
  const int = (v: unknown, key: string, min: number): number => {
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) {
      fail(`"${key}" must be an integer >= ${min}, found ${JSON.stringify(v)}`);
    }
    return v as number;
  };
  const step = int(o.step, "step", 1);
  if (o.optimizer !== "adamw" && o.optimizer !== "distro") {
    fail(`"optimizer" must be "adamw" or "distro", found ${JSON.stringify(o.optimizer)}`);
  }
  const totalBatch = int(o.total_batch, "total_batch", 1);
  const microBatch = o.micro_batch === undefined ? undefined : int(o.micro_batch, "micro_batch", 1);
  if (microBatch !== undefined && totalBatch % microBatch !== 0) {
    fail(`"micro_batch" ${microBatch} does not divide "total_batch" ${totalBatch}`);
  }
  const sequenceLength = int(o.sequence_length, "sequence_length", 2);
  const d = o.data as Record<string, unknown> | null;
  if (typeof d !== "object" || d === null || Array.isArray(d)) fail(`"data" is not an object`);
  const sequences = int(d!.sequences, "data.sequences", 1);
  const seed = d!.shuffle_seed;
  if (seed !== null && (typeof seed !== "number" || !Number.isInteger(seed) || seed < 0)) {
    fail(`"data.shuffle_seed" must be null or an integer >= 0, found ${JSON.stringify(seed)}`);
  }
  const next = int(d!.next_sequence, "data.next_sequence", 0);
  if (next !== nextSequence(step, totalBatch, sequences)) {
    fail(
      `"data.next_sequence" is ${next}, but step ${step} of ${totalBatch} sequences over ` +
        `${sequences} ends at ${nextSequence(step, totalBatch, sequences)}`,
    );
  }
  const schedule = o.lr_schedule as Record<string, unknown> | null;
  if (typeof schedule !== "object" || schedule === null || typeof schedule.kind !== "string") {
    fail(`"lr_schedule" is not a schedule object`);
  }
  if (!["F32", "BF16", "F16"].includes(o.weights_dtype as string)) {
    fail(`"weights_dtype" must be F32, BF16 or F16, found ${JSON.stringify(o.weights_dtype)}`);
  }
  return {
    step,
    optimizer: o.optimizer as "adamw" | "distro",
    totalBatch,
    ...(microBatch === undefined ? {} : { microBatch }),
    sequenceLength,
    data: { sequences, shuffleSeed: seed as number | null, nextSequence: next },
    lrSchedule: schedule as unknown as LrSchedule,
    weightsDtype: o.weights_dtype as FloatDtype,
  };
}

/** How `optimizer.safetensors` maps onto the flat buffers: the parameters and DisTrO's chunks. */
export interface OptimizerGeometry {
  layout: ParamLayout;
  /** DisTrO's chunk layout per parameter (in `layout.entries` order); unused for AdamW. */
  chunks?: readonly ChunkLayout[];
}

/** Which array of {@link OptimizerState} a tensor of `optimizer.safetensors` is cut from. */
export type OptimizerArray = "m" | "v" | "delta" | "own_indices" | "own_values";

/** One tensor of `optimizer.safetensors`: its header entry and where its values come from. */
export interface OptimizerTensor {
  name: string;
  dtype: "F32" | "U32";
  shape: number[];
  /** Elements `[start, start + count)` of `array`. */
  array: OptimizerArray;
  start: number;
  count: number;
}

/**
 * The tensors of `optimizer.safetensors` in file order and its `__metadata__`, from what the
 * state is (not its values): the one description both the host-array encoder
 * ({@link optimizerToSafetensors}) and the streamed save from the GPU (train/streamed_save.ts)
 * write from.
 */
export function optimizerFilePlan(
  state: { kind: "adamw"; step: number } | { kind: "distro"; hasOwn: boolean },
  geometry: OptimizerGeometry,
): { tensors: OptimizerTensor[]; metadata: Record<string, string> } {
  const { layout } = geometry;
  const tensors: OptimizerTensor[] = [];
  const metadata: Record<string, string> = { format: STATE_FORMAT, optimizer: state.kind };
  const whole = (name: string, array: OptimizerArray, e: ParamLayout["entries"][number]) =>
    tensors.push({ name, dtype: "F32", shape: e.shape, array, start: e.offset, count: e.size });
  switch (state.kind) {
    case "adamw":
      metadata.step = String(state.step);
      for (const e of layout.entries) {
        whole(`${e.name}.exp_avg`, "m", e);
        whole(`${e.name}.exp_avg_sq`, "v", e);
      }
      break;
    case "distro": {
      const chunks = distroChunks(geometry);
      metadata.has_result = String(state.hasOwn);
      let entry = 0;
      for (const [n, e] of layout.entries.entries()) {
        whole(`${e.name}.delta`, "delta", e);
        const { chunks: c, k } = chunks[n];
        if (state.hasOwn) {
          const span = { shape: [c, k], start: entry, count: c * k };
          tensors.push({
            name: `${e.name}.own_indices`,
            dtype: "U32",
            array: "own_indices",
            ...span,
          });
          tensors.push({
            name: `${e.name}.own_values`,
            dtype: "F32",
            array: "own_values",
            ...span,
          });
        }
        entry += c * k;
      }
      break;
    }
  }
  return { tensors, metadata };
}

/** The optimizer state as `optimizer.safetensors`' tensors, per parameter. */
export function optimizerToSafetensors(
  state: OptimizerState,
  geometry: OptimizerGeometry,
): SafetensorsFile {
  const plan = optimizerFilePlan(
    state.kind === "adamw" ? state : { kind: "distro", hasOwn: state.own !== null },
    geometry,
  );
  const arrays = (array: OptimizerArray): Float32Array | Uint32Array => {
    if (state.kind === "adamw") {
      if (array === "m" || array === "v") return state[array];
    } else if (array === "delta") {
      return state.delta;
    } else if (state.own !== null) {
      return array === "own_indices" ? state.own.indices : state.own.values;
    }
    throw new RangeError(`a ${state.kind} state has no ${array}`);
  };
  const tensors = new Map<string, StoredTensor>();
  for (const t of plan.tensors) {
    const values = arrays(t.array).slice(t.start, t.start + t.count);
    tensors.set(t.name, { dtype: t.dtype, shape: t.shape, bytes: new Uint8Array(values.buffer) });
  }
  return { tensors, metadata: plan.metadata };
}

function distroChunks(geometry: OptimizerGeometry): readonly ChunkLayout[] {
  const chunks = geometry.chunks;
  if (chunks === undefined || chunks.length !== geometry.layout.entries.length) {
    throw new RangeError("DisTrO state needs the chunk layout of every parameter");
  }
  return chunks;
}

/**
 * The optimizer state of `optimizer.safetensors`, checked against the expected `kind` and the
 * model's geometry ({@link checkOptimizerHeader}): a TrainerStateError names the missing,
 * unexpected or misshaped tensor, the optimizer kind that does not match, or a DisTrO index
 * outside its chunk. `step` is the trainer's (AdamW's count must equal it).
 */
export function optimizerFromSafetensors(
  file: SafetensorsFile,
  expect: OptimizerGeometry & { kind: "adamw" | "distro"; step: number; path?: string },
): OptimizerState {
  const { state, tensors } = checkOptimizerHeader(file, expect);
  const { layout } = expect;
  if (state.kind === "adamw") {
    const arrays = {
      m: new Float32Array(layout.totalSize),
      v: new Float32Array(layout.totalSize),
    };
    for (const t of tensors) {
      arrays[t.array as "m" | "v"].set(new Float32Array(t.stored.bytes.slice().buffer), t.start);
    }
    return { kind: "adamw", step: state.step, m: arrays.m, v: arrays.v };
  }
  const entries = distroChunks(expect).reduce((a, c) => a + c.chunks * c.k, 0);
  const arrays = {
    delta: new Float32Array(layout.totalSize),
    own_indices: new Uint32Array(entries),
    own_values: new Float32Array(entries),
  };
  const limits = ownIndexLimits(expect);
  for (const t of tensors) {
    const values = t.dtype === "U32"
      ? new Uint32Array(t.stored.bytes.slice().buffer)
      : new Float32Array(t.stored.bytes.slice().buffer);
    const limit = limits.get(t.name);
    if (limit !== undefined) {
      const bad = values.findIndex((i) => i >= limit);
      if (bad >= 0) {
        throw new TrainerStateError(
          `Cannot resume from "${expect.path ?? OPTIMIZER_FILE}": tensor "${t.name}" entry ` +
            `${bad} is ${values[bad]}, not below ${limit}`,
        );
      }
    }
    arrays[t.array as "delta" | "own_indices" | "own_values"].set(values, t.start);
  }
  const { delta, own_indices: indices, own_values: values } = arrays;
  return { kind: "distro", delta, own: state.hasOwn ? { indices, values } : null };
}

/**
 * The bound every entry of DisTrO's `PARAM.own_indices` tensors must stay below (its chunk's
 * size), by tensor name: the indices are checked as they are read, not in the header.
 */
export function ownIndexLimits(geometry: OptimizerGeometry): ReadonlyMap<string, number> {
  const limits = new Map<string, number>();
  geometry.chunks?.forEach((c, n) => {
    limits.set(`${geometry.layout.entries[n].name}.own_indices`, c.totalk);
  });
  return limits;
}

/** What {@link checkOptimizerHeader} found: the state's kind and each tensor, planned and stored. */
export interface OptimizerHeaderPlan<T> {
  state: { kind: "adamw"; step: number } | { kind: "distro"; hasOwn: boolean };
  /** In file order, each with its entry in the file (`T`: a header's, or a decoded tensor). */
  tensors: (OptimizerTensor & { stored: T })[];
}

/**
 * Checks `optimizer.safetensors`' header (metadata, and every tensor's name, dtype and shape)
 * against the expected `kind` and geometry, before any of its data is read, and gives the plan
 * to read it by (model/safetensors.ts `TensorHeader` offsets per tensor). The errors are
 * {@link optimizerFromSafetensors}'s; the index range of DisTRO's `own_indices` is checked as
 * they are read (train/streamed_load.ts).
 */
export function checkOptimizerHeader<T extends { dtype: string; shape: readonly number[] }>(
  header: { tensors: ReadonlyMap<string, T>; metadata: Record<string, string> | null },
  expect: OptimizerGeometry & { kind: "adamw" | "distro"; step: number; path?: string },
): OptimizerHeaderPlan<T> {
  const where = expect.path ?? OPTIMIZER_FILE;
  const fail = (what: string): never => {
    throw new TrainerStateError(`Cannot resume from "${where}": ${what}`);
  };
  const meta = header.metadata ?? {};
  if (meta.format !== STATE_FORMAT) {
    fail(`__metadata__.format is ${JSON.stringify(meta.format)}, expected "${STATE_FORMAT}"`);
  }
  if (meta.optimizer !== expect.kind) {
    fail(
      `it holds the state of ${JSON.stringify(meta.optimizer)}, but this run uses ` +
        `--optimizer ${expect.kind}`,
    );
  }
  let state: { kind: "adamw"; step: number } | { kind: "distro"; hasOwn: boolean };
  if (expect.kind === "adamw") {
    const step = Number(meta.step);
    if (meta.step !== String(step) || step !== expect.step) {
      fail(
        `AdamW's step count ${JSON.stringify(meta.step)} differs from the trainer's ${expect.step}`,
      );
    }
    state = { kind: "adamw", step };
  } else {
    if (meta.has_result !== "true" && meta.has_result !== "false") {
      fail(
        `__metadata__.has_result must be "true" or "false", found ${
          JSON.stringify(meta.has_result)
        }`,
      );
    }
    state = { kind: "distro", hasOwn: meta.has_result === "true" };
  }
  const plan = optimizerFilePlan(state, expect);
  const tensors = plan.tensors.map((p) => {
    const t = header.tensors.get(p.name);
    if (t === undefined) return fail(`tensor "${p.name}" is missing`);
    if (t.dtype !== p.dtype) fail(`tensor "${p.name}" has dtype ${t.dtype}, expected ${p.dtype}`);
    if (t.shape.length !== p.shape.length || t.shape.some((d, i) => d !== p.shape[i])) {
      fail(
        `tensor "${p.name}" has shape [${t.shape.join(", ")}], expected [${
          p.shape.join(", ")
        }] (a checkpoint of another model shape?)`,
      );
    }
    return { ...p, stored: t };
  });
  const used = new Set(plan.tensors.map((t) => t.name));
  for (const name of header.tensors.keys()) {
    if (!used.has(name)) {
      fail(`unexpected tensor "${name}" (not part of this model's ${expect.kind} state)`);
    }
  }
  return { state, tensors };
}
