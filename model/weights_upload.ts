/**
 * Weights held on the host, written into the parameter buffers a chunk at a time, each write
 * flushed before the next: the driver holds one chunk's staging copy, and the caller hears how
 * far the upload got. A model given to {@link LlamaModel} as `weights` is instead copied through
 * buffers mapped at creation, the whole segment at once (3.96 GiB for a 1B model); on the H200
 * that path was measured at 27 MB/s and the 1B model printed nothing for minutes
 * (docs/gpu-benchmarks.md). Both paths stay, so a GPU session can measure them side by side
 * (`bench/step_profile.ts --upload mapped|chunked`).
 *
 * @module
 */
import type { ParamBuffers } from "./param_buffers.ts";
import { SEEDED_CHUNK_FLOATS } from "./params.ts";
import type { GpuRuntime } from "../shaders/mod.ts";

/** How far an upload got: bytes written and reached the device, of the total. */
export type UploadProgress = (doneBytes: number, totalBytes: number) => void;

/**
 * Writes `weights` (`[layout.totalSize]`) into `params` chunk by chunk, each flushed; `onProgress`
 * hears after every chunk. Resolves once every write has reached the device.
 */
export async function uploadParams(
  rt: GpuRuntime,
  params: ParamBuffers,
  weights: Float32Array,
  options: { chunkFloats?: number; onProgress?: UploadProgress; signal?: AbortSignal } = {},
): Promise<void> {
  const total = params.layout.totalSize;
  if (weights.length !== total) {
    throw new RangeError(`weights hold ${weights.length} floats, the layout needs ${total}`);
  }
  const chunkFloats = options.chunkFloats ?? SEEDED_CHUNK_FLOATS;
  if (!Number.isInteger(chunkFloats) || chunkFloats < 1) {
    throw new RangeError(`chunkFloats must be a positive integer, got ${chunkFloats}`);
  }
  for (const segment of params.segments) {
    const end = segment.start + segment.size;
    for (let start = segment.start; start < end; start += chunkFloats) {
      options.signal?.throwIfAborted();
      const count = Math.min(chunkFloats, end - start);
      rt.write(params.slice(start, count), weights.subarray(start, start + count));
      // One staging copy alive at a time (model/seeded_upload.ts says why).
      await rt.untilIdle(); // a fence read: no 10 ms completion tick per chunk
      options.onProgress?.((start + count) * 4, total * 4);
    }
  }
}

/**
 * A throttle for a long upload's progress: `report` hears at most every `everyMs` (and always at
 * the end) the bytes done, the total and the rate so far in MB/s. Pure apart from the clock.
 */
export function throttledProgress(
  report: (doneBytes: number, totalBytes: number, mbPerSec: number) => void,
  now: () => number,
  everyMs = 5000,
): UploadProgress {
  const started = now();
  let last = started;
  return (done, total) => {
    const t = now();
    if (done < total && t - last < everyMs) return;
    last = t;
    report(done, total, done / 1e6 / Math.max((t - started) / 1000, 1e-9));
  };
}

/** A line like `upload: 1.20 of 4.61 GiB (26%), 310 MB/s`, for a person. */
export function uploadProgressLine(
  what: string,
  doneBytes: number,
  totalBytes: number,
  mbPerSec: number,
): string {
  const [unit, scale] = totalBytes >= 2 ** 30 ? ["GiB", 2 ** 30] : ["MiB", 2 ** 20];
  return `${what}: ${(doneBytes / scale).toFixed(2)} of ${(totalBytes / scale).toFixed(2)} ` +
    `${unit} (${(100 * doneBytes / totalBytes).toFixed(0)}%), ${mbPerSec.toFixed(0)} MB/s`;
}

/** {@link throttledProgress} writing {@link uploadProgressLine}s. */
export function uploadProgressLines(
  what: string,
  write: (line: string) => void,
  now: () => number,
  everyMs = 5000,
): UploadProgress {
  return throttledProgress((d, t, r) => write(uploadProgressLine(what, d, t, r)), now, everyMs);
}
