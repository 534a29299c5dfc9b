/**
 * A resume that never holds the whole model on the host: each f32 tensor of the checkpoint's
 * weights file(s) is read {@link SAVE_CHUNK_FLOATS} at a time at the byte range its (already
 * validated) header gives, and written straight into its place in the parameter buffers, each
 * write flushed before the next read (as model/seeded_upload.ts does for a seeded start).
 *
 * @module
 */
import type { F32TensorSource } from "./checkpoint.ts";
import type { ParamBuffers } from "./param_buffers.ts";
import { SAVE_CHUNK_FLOATS } from "./safetensors_stream.ts";
import type { GpuRuntime } from "../shaders/mod.ts";
import type { UploadProgress } from "./weights_upload.ts";

/**
 * Uploads the tensors of `sources` (model/checkpoint.ts `f32WeightSources`) into `params`,
 * whose padding must be zero (a fresh {@link ParamBuffers} is). Throws naming the file when it
 * ends before a tensor does (it shrank since its header was checked).
 */
export async function uploadF32Weights(
  rt: GpuRuntime,
  params: ParamBuffers,
  sources: readonly F32TensorSource[],
  options?: { chunkFloats?: number; onProgress?: UploadProgress; signal?: AbortSignal },
): Promise<void> {
  const chunkFloats = options?.chunkFloats ?? SAVE_CHUNK_FLOATS;
  if (!Number.isInteger(chunkFloats) || chunkFloats < 1) {
    throw new RangeError(`chunkFloats must be a positive integer, got ${chunkFloats}`);
  }
  const largest = sources.reduce((m, s) => Math.max(m, s.size), 0);
  const chunk = new Float32Array(Math.min(chunkFloats, largest));
  const bytes = new Uint8Array(chunk.buffer);
  const totalBytes = sources.reduce((n, s) => n + s.size, 0) * 4;
  let doneBytes = 0;
  const files = new Map<string, Deno.FsFile>();
  try {
    for (const s of sources) {
      let file = files.get(s.path);
      if (file === undefined) {
        file = await Deno.open(s.path, { read: true });
        files.set(s.path, file);
      }
      await file.seek(s.fileOffset, Deno.SeekMode.Start);
      for (let start = 0; start < s.size; start += chunk.length) {
        options?.signal?.throwIfAborted();
        const count = Math.min(chunk.length, s.size - start);
        await readExactly(file, bytes.subarray(0, count * 4), s.path);
        rt.write(params.slice(s.offset + start, count), chunk.subarray(0, count));
        // One staging copy alive at a time, not the whole model's (see seeded_upload.ts).
        await rt.untilIdle(); // a fence read: no 10 ms completion tick per chunk
        doneBytes += count * 4;
        options?.onProgress?.(doneBytes, totalBytes);
      }
    }
  } finally {
    for (const f of files.values()) f.close();
  }
}

async function readExactly(file: Deno.FsFile, into: Uint8Array, path: string): Promise<void> {
  for (let got = 0; got < into.length;) {
    const n = await file.read(into.subarray(got));
    if (n === null) throw new Deno.errors.UnexpectedEof(`Cannot load "${path}": it ended early`);
    got += n;
  }
}
