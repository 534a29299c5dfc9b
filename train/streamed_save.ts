/**
 * A checkpoint save that reads the GPU a chunk at a time: every tensor of `model.safetensors`
 * (or its shards) and `optimizer.safetensors` is read off its buffer in ranges of
 * {@link SAVE_CHUNK_FLOATS} and appended to the file being written, so the host holds about one
 * chunk, where reading the parameters and optimizer state whole (the reference in
 * train/testing/whole_checkpoint.ts, `captureTraining`) holds them all (3·4·P bytes for AdamW:
 * 14 GiB for a 1B model). The files are byte-identical to that reference's
 * `writeTrainingCheckpoint` for the same state (streamed_save_test.ts).
 *
 * @module
 */
import {
  type FloatDtype,
  type LlamaConfig,
  type ParamLayout,
  SAVE_CHUNK_FLOATS,
  type StreamedTensor,
  writeDirAtomically,
  writeModelDir,
  writeSafetensorsStreamed,
} from "../model/mod.ts";
import type { OptimizerStateBuffers, SegmentedBuffers } from "../optimizer/mod.ts";
import type { GpuRuntime } from "../shaders/mod.ts";
import type { TrainingParts } from "./checkpoint.ts";
import {
  encodeTrainerState,
  OPTIMIZER_FILE,
  type OptimizerArray,
  optimizerFilePlan,
  type OptimizerGeometry,
  TRAINER_STATE_FILE,
  type TrainerState,
} from "./train_state.ts";

/**
 * The GPU buffers holding one array of the optimizer file (AdamW's `m` and `v`, DisTrO's `delta`
 * in segments; DisTrO's own result in one buffer each). The streamed save reads them and the
 * streamed load writes them, so both map the file the same way.
 */
export function optimizerArrayBuffers(
  state: OptimizerStateBuffers,
  array: OptimizerArray,
): SegmentedBuffers {
  if (state.kind === "adamw") {
    if (array === "m" || array === "v") return state[array];
  } else if (array === "delta") {
    return state.delta;
  } else if (state.own !== null) {
    const buffer = array === "own_indices" ? state.own.indices : state.own.values;
    return { segments: [{ start: 0, size: buffer.size / 4 }], buffers: [buffer] };
  }
  throw new RangeError(`a ${state.kind} optimizer has no ${array} state`);
}

/** What {@link saveTraining} writes besides the GPU state. */
export interface SaveOptions {
  config: LlamaConfig;
  layout: ParamLayout;
  trainer: TrainerState;
  geometry: OptimizerGeometry;
  /** The last step's learning rate (DisTrO's lookahead is set up again with it). */
  lastLr: number;
  /** Storage dtype of the weights (default F32; only F32 resumes bit for bit). */
  dtype?: FloatDtype;
  maxShardBytes?: number;
  /** Floats read and written at a time (default {@link SAVE_CHUNK_FLOATS}). */
  chunkFloats?: number;
  /**
   * Hears after every chunk the bytes read off the GPU and written so far, of the parameters
   * and the optimizer state together (4 per float): 14.9 GB for a 1B model with AdamW, seconds
   * to minutes.
   */
  onProgress?: (doneBytes: number, totalBytes: number) => void;
}

/**
 * Writes a resumable checkpoint of the run into `dir` atomically, streaming the parameters and
 * the optimizer state off the GPU. DisTrO's lookahead is undone for the save and set up again
 * afterwards (also when the write fails), so the run goes on with the same bits.
 */
export async function saveTraining(
  dir: string,
  parts: TrainingParts,
  options: SaveOptions,
): Promise<void> {
  const { rt, model, optimizer, signal } = parts;
  const dtype = options.dtype ?? "F32";
  const chunkFloats = options.chunkFloats ?? SAVE_CHUNK_FLOATS;
  if (options.trainer.weightsDtype !== dtype) {
    throw new RangeError(
      `trainer state says weights are ${options.trainer.weightsDtype}, writing ${dtype}`,
    );
  }
  const settle = rt.beginStep("settle for checkpoint");
  optimizer.encodeSettle?.(settle, model.params);
  await settle.submit();
  try {
    const state = optimizer.stateBuffers();
    let doneBytes = 0, totalBytes = 0;
    // Counted as the chunks come off the GPU: each tensor is read once, a chunk at a time.
    const read: RangeReader = async (flat, start, count) => {
      const bytes = await readRange(rt, flat, { start, count, signal });
      doneBytes += bytes.byteLength;
      options.onProgress?.(doneBytes, totalBytes);
      return bytes;
    };
    const optimizerFile = streamedOptimizer(state, {
      geometry: options.geometry,
      chunkFloats,
      read,
    });
    totalBytes = 4 * (options.layout.paramCount + optimizerFile.floats);
    await writeDirAtomically(dir, async (tmp) => {
      await writeModelDir(tmp, {
        config: options.config,
        layout: options.layout,
        weights: async (start, count) => new Float32Array(await read(model.params, start, count)),
        dtype,
        maxShardBytes: options.maxShardBytes,
        chunkFloats,
      });
      await writeSafetensorsStreamed(`${tmp}/${OPTIMIZER_FILE}`, optimizerFile);
      // Written last: its presence marks a complete resumable checkpoint.
      await Deno.writeTextFile(`${tmp}/${TRAINER_STATE_FILE}`, encodeTrainerState(options.trainer));
    });
  } finally {
    const resume = rt.beginStep("resume after checkpoint");
    optimizer.encodeResume?.(resume, { params: model.params, lastLr: options.lastLr });
    await resume.submit();
  }
}

/** Reads the bytes of 4-byte elements `[start, start + count)` of `flat` off the GPU. */
type RangeReader = (flat: SegmentedBuffers, start: number, count: number) => Promise<ArrayBuffer>;

/**
 * `optimizer.safetensors`' tensors, each read off its GPU buffer a chunk at a time, and the
 * floats they hold.
 */
function streamedOptimizer(
  state: OptimizerStateBuffers,
  options: { geometry: OptimizerGeometry; chunkFloats: number; read: RangeReader },
): { tensors: StreamedTensor[]; metadata: Record<string, string>; floats: number } {
  const { chunkFloats, read } = options;
  const plan = optimizerFilePlan(
    state.kind === "adamw" ? state : { kind: "distro", hasOwn: state.own !== null },
    options.geometry,
  );
  const buffers = (array: OptimizerArray) => optimizerArrayBuffers(state, array);
  const tensors = plan.tensors.map((t): StreamedTensor => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    async *chunks() {
      const flat = buffers(t.array);
      for (let done = 0; done < t.count; done += chunkFloats) {
        const count = Math.min(chunkFloats, t.count - done);
        yield new Uint8Array(await read(flat, t.start + done, count));
      }
    },
  }));
  const floats = plan.tensors.reduce((n, t) => n + t.count, 0);
  return { tensors, metadata: plan.metadata, floats };
}

/** The bytes of 4-byte elements `[start, start + count)` of `flat`, inside one segment. */
async function readRange(
  rt: GpuRuntime,
  flat: SegmentedBuffers,
  range: { start: number; count: number; signal?: AbortSignal },
): Promise<ArrayBuffer> {
  const { start, count, signal } = range;
  const s = flat.segments.findIndex((seg) => start >= seg.start && start < seg.start + seg.size);
  const seg = flat.segments[s];
  if (seg === undefined || start + count > seg.start + seg.size) {
    throw new RangeError(`elements [${start}, ${start + count}) do not lie in one segment`);
  }
  const offset = (start - seg.start) * 4;
  return await rt.readBytes({ buffer: flat.buffers[s], offset, size: count * 4 }, { signal });
}
