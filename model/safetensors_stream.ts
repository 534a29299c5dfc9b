/**
 * A safetensors writer that never holds the file: the header is known from the tensors' dtypes
 * and shapes alone, so it is written first and each tensor's bytes are then appended as its
 * source yields them (a chunk read off the GPU at a time, for a checkpoint save). The bytes are
 * those {@link encodeSafetensors} gives for the same tensors, which the tests check.
 *
 * @module
 */
import { encodeSafetensorsHeader, tensorByteSize, type TensorSpec } from "./safetensors.ts";

/** One tensor of a streamed file: its header entry and a source of its bytes, in order. */
export interface StreamedTensor extends TensorSpec {
  /** Yields the tensor's bytes in pieces; each piece may be reused once the next is asked for. */
  chunks(): AsyncIterable<Uint8Array>;
}

/** Floats a streamed save reads off the GPU and writes at a time (16 MiB of f32). */
export const SAVE_CHUNK_FLOATS = 1 << 22;

/**
 * Writes the tensors to `path` (callers wanting atomicity pass a temporary name and rename it),
 * holding one chunk at a time. Throws a RangeError naming the tensor whose source yields more or
 * fewer bytes than its dtype and shape need; the partial file is then removed.
 */
export async function writeSafetensorsStreamed(
  path: string,
  file: { tensors: readonly StreamedTensor[]; metadata: Record<string, string> | null },
): Promise<void> {
  try {
    {
      using out = await Deno.open(path, { write: true, create: true, truncate: true });
      await writeAll(out, encodeSafetensorsHeader(file.tensors, file.metadata));
      for (const t of file.tensors) {
        const expected = tensorByteSize(t);
        let written = 0;
        for await (const piece of t.chunks()) {
          written += piece.length;
          if (written > expected) break;
          await writeAll(out, piece);
        }
        if (written !== expected) {
          throw new RangeError(
            `tensor "${t.name}" of dtype ${t.dtype} and shape [${t.shape.join(", ")}] needs ` +
              `${expected} bytes, its source gave ${written > expected ? "more" : written}`,
          );
        }
      }
    }
  } catch (e) {
    await Deno.remove(path).catch(() => {});
    throw e;
  }
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
}
