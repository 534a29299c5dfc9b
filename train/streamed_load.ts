/**
 * The mirror of train/streamed_save.ts for a resume: `optimizer.safetensors`' header is checked
 * against the run's optimizer and model (every name, dtype and shape) before any of its data is
 * read, then each tensor is read {@link SAVE_CHUNK_FLOATS} at a time and written straight into
 * the optimizer's state buffers (`Optimizer.prepareLoad`), each write flushed before the next
 * read: the host holds one chunk, where the whole-array reference (train/testing/
 * whole_checkpoint.ts `readTrainingCheckpoint` then `restoreTraining`) holds the whole state
 * (2·4·P bytes for AdamW: 9.2 GiB for a 1B model).
 *
 * @module
 */
import { readSafetensorsHeader, SAVE_CHUNK_FLOATS, type TensorHeader } from "../model/mod.ts";
import type { SegmentedBuffers } from "../optimizer/mod.ts";
import type { TrainingParts } from "./checkpoint.ts";
import { optimizerArrayBuffers } from "./streamed_save.ts";
import {
  checkOptimizerHeader,
  OPTIMIZER_FILE,
  type OptimizerArray,
  type OptimizerGeometry,
  type OptimizerHeaderPlan,
  ownIndexLimits,
  readOptimizerFile,
  TrainerStateError,
} from "./train_state.ts";

/** `optimizer.safetensors` with its header checked: what {@link restoreTrainingStreamed} reads. */
export interface OptimizerFile {
  path: string;
  /** Where the data section starts in the file. */
  dataStart: number;
  geometry: OptimizerGeometry;
  plan: OptimizerHeaderPlan<TensorHeader>;
}

/**
 * Reads and checks `dir/optimizer.safetensors`' header against the run's optimizer `kind`, the
 * trainer's `step` (AdamW's count must equal it) and the model's geometry; no data is read.
 * Errors name the file and what is wrong.
 */
export async function openOptimizerFile(
  dir: string,
  expect: { kind: "adamw" | "distro"; step: number; geometry: OptimizerGeometry },
): Promise<OptimizerFile> {
  const path = `${dir}/${OPTIMIZER_FILE}`;
  const header = await readOptimizerFile(dir, readSafetensorsHeader);
  const plan = checkOptimizerHeader(header, {
    ...expect.geometry,
    kind: expect.kind,
    step: expect.step,
    path,
  });
  return { path, dataStart: header.dataStart, geometry: expect.geometry, plan };
}

/**
 * Loads `optimizer.safetensors` (checked by {@link openOptimizerFile}) into the optimizer of a
 * model holding the checkpoint's weights, a chunk at a time, and sets up what the last step
 * (trained with `lastLr`) left pending (DisTrO's lookahead), as the reference's
 * `restoreTraining` (train/testing/whole_checkpoint.ts) does from host arrays.
 */
export async function restoreTrainingStreamed(
  parts: TrainingParts,
  file: OptimizerFile,
  options: {
    lastLr: number;
    /** Floats read and written at a time (default {@link SAVE_CHUNK_FLOATS}). */
    chunkFloats?: number;
    /**
     * Hears after every chunk the optimizer state's bytes on the GPU so far and their total:
     * AdamW's state of a 1B model is 9.9 GB, a minute or more from disk.
     */
    onProgress?: (doneBytes: number, totalBytes: number) => void;
  },
): Promise<void> {
  const { rt, model, optimizer, signal } = parts;
  const chunkFloats = options.chunkFloats ?? SAVE_CHUNK_FLOATS;
  if (!Number.isInteger(chunkFloats) || chunkFloats < 1) {
    throw new RangeError(`chunkFloats must be a positive integer, got ${chunkFloats}`);
  }
  const { path, plan, geometry } = file;
  // DisTrO's own indices must lie inside their chunk: checked per chunk before it is written.
  const totalk = ownIndexLimits(geometry);
  const state = optimizer.prepareLoad(plan.state);
  const buffers = (array: OptimizerArray) => optimizerArrayBuffers(state, array);
  const largest = plan.tensors.reduce((m, t) => Math.max(m, t.count), 0);
  const chunk = new Uint32Array(Math.min(chunkFloats, largest));
  const bytes = new Uint8Array(chunk.buffer);
  const totalBytes = 4 * plan.tensors.reduce((n, t) => n + t.count, 0);
  let doneBytes = 0;
  {
    using handle = await Deno.open(path, { read: true });
    for (const t of plan.tensors) {
      await handle.seek(file.dataStart + t.stored.begin, Deno.SeekMode.Start);
      const flat = buffers(t.array);
      const limit = totalk.get(t.name);
      for (let done = 0; done < t.count; done += chunk.length) {
        signal?.throwIfAborted();
        const count = Math.min(chunk.length, t.count - done);
        await readExactly(handle, bytes.subarray(0, count * 4), path);
        const part = chunk.subarray(0, count);
        if (t.array === "own_indices" && limit !== undefined) {
          const bad = part.findIndex((i) => i >= limit);
          if (bad >= 0) {
            throw new TrainerStateError(
              `Cannot resume from "${path}": tensor "${t.name}" entry ${done + bad} is ` +
                `${part[bad]}, not below ${limit}`,
            );
          }
        }
        writeRange(rt, flat, t.start + done, part);
        // One staging copy alive at a time (see model/seeded_upload.ts).
        await rt.untilIdle(); // a fence read: no 10 ms completion tick per chunk
        doneBytes += 4 * count;
        options.onProgress?.(doneBytes, totalBytes);
      }
    }
  }
  const step = rt.beginStep("resume from checkpoint");
  optimizer.encodeResume?.(step, { params: model.params, lastLr: options.lastLr });
  await step.submit();
}

/** Writes `data` (4-byte elements) at flat element `start` of `flat`, inside one segment. */
function writeRange(
  rt: TrainingParts["rt"],
  flat: SegmentedBuffers,
  start: number,
  data: Uint32Array,
): void {
  const s = flat.segments.findIndex((seg) => start >= seg.start && start < seg.start + seg.size);
  const seg = flat.segments[s];
  if (seg === undefined || start + data.length > seg.start + seg.size) {
    throw new RangeError(
      `elements [${start}, ${start + data.length}) do not lie in one segment`,
    );
  }
  rt.write(
    { buffer: flat.buffers[s], offset: (start - seg.start) * 4, size: data.byteLength },
    data,
  );
}

async function readExactly(file: Deno.FsFile, into: Uint8Array, path: string): Promise<void> {
  for (let got = 0; got < into.length;) {
    const n = await file.read(into.subarray(got));
    if (n === null) throw new Deno.errors.UnexpectedEof(`Cannot load "${path}": it ended early`);
    got += n;
  }
}
