/**
 * A seeded start that never holds the whole model on the host: each tensor's initial values
 * (model/params.ts `initTensorSlice`, the same bits as `initParams`) are generated a chunk of
 * {@link SEEDED_CHUNK_FLOATS} at a time and written straight into the tensor's segment buffer.
 * Each write is flushed before the next chunk is made, so the host holds one chunk and the
 * driver one chunk's staging copy: 32 MiB in all, where `initParams` then an upload holds the
 * model twice (4.6 GiB each for a 1B model).
 *
 * @module
 */
import type { LlamaConfig } from "./hf_config.ts";
import { initTensorSlice, SEEDED_CHUNK_FLOATS } from "./params.ts";
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
  options: {
    config: Pick<LlamaConfig, "initializerRange">;
    seed: number;
    /** Floats per write (default {@link SEEDED_CHUNK_FLOATS}). */
    chunkFloats?: number;
    /** Hears the bytes written after every chunk. */
    onProgress?: UploadProgress;
    signal?: AbortSignal;
  },
): Promise<void> {
  const { config, seed, signal } = options;
  const chunkFloats = options.chunkFloats ?? SEEDED_CHUNK_FLOATS;
  if (!Number.isInteger(chunkFloats) || chunkFloats < 1) {
    throw new RangeError(`chunkFloats must be a positive integer, got ${chunkFloats}`);
  }
  const largest = params.layout.entries.reduce((m, e) => Math.max(m, e.size), 0);
  const chunk = new Float32Array(Math.min(chunkFloats, largest));
  const totalBytes = params.layout.entries.reduce((n, e) => n + e.size, 0) * 4;
  let doneBytes = 0;
  for (const entry of params.layout.entries) {
    for (let start = 0; start < entry.size; start += chunk.length) {
      signal?.throwIfAborted();
      const part = chunk.subarray(0, Math.min(chunk.length, entry.size - start));
      initTensorSlice(entry, { config, seed, start }, part);
      const view = params.slice(entry.offset + start, part.length);
      rt.write(view, part);
      // writeBuffer copies into a staging buffer that lives until a submission completes:
      // flushing each chunk keeps one staging copy alive, not the whole model's.
      rt.device.queue.submit([]);
      await rt.device.queue.onSubmittedWorkDone();
      doneBytes += part.length * 4;
      options.onProgress?.(doneBytes, totalBytes);
    }
  }
}
