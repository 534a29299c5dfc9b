/**
 * A seeded start that never holds the whole model on the host: each tensor's initial values
 * (model/params.ts `initTensorSlice`, the same bits as `initParams`) are generated a chunk of
 * `SEEDED_CHUNK_FLOATS` at a time, on worker threads for a large model (model/seeded_init.ts),
 * and written straight into the tensor's segment buffer.
 * Each write is flushed before the next is made, so the driver holds one chunk's staging copy and
 * the host the chunks the workers are making (model/seeded_init.ts: one per worker), where
 * `initParams` then an upload holds the model twice (4.6 GiB each for a 1B model).
 *
 * @module
 */
import { seededChunks, type SeededInitOptions } from "./seeded_init.ts";
import type { ParamBuffers } from "./param_buffers.ts";
import type { GpuRuntime } from "../shaders/mod.ts";
import type { UploadProgress } from "./weights_upload.ts";

/**
 * Writes the seeded initial parameters (HF's init: normal(0, initializer_range) matrices and
 * embedding, unit norm gains) into `params`, whose padding must already be zero (a fresh
 * {@link ParamBuffers} is). Resolves once every write has reached the device.
 */
export async function uploadSeededParams(
  rt: GpuRuntime,
  params: ParamBuffers,
  options: SeededInitOptions & {
    /** Hears the bytes written after every chunk. */
    onProgress?: UploadProgress;
  },
): Promise<void> {
  const totalBytes = params.layout.entries.reduce((n, e) => n + e.size, 0) * 4;
  let doneBytes = 0;
  for await (const chunk of seededChunks(params.layout, options)) {
    rt.write(params.slice(chunk.entry.offset + chunk.start, chunk.length), chunk.values);
    // writeBuffer copies into a staging buffer that lives until a submission completes:
    // flushing each chunk keeps one staging copy alive, not the whole model's.
    await rt.untilIdle(); // a fence read: no 10 ms completion tick per chunk
    doneBytes += chunk.length * 4;
    options.onProgress?.(doneBytes, totalBytes);
  }
}
