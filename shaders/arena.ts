/**
 * A buffer arena: scratch buffers (activations, temporary gradients) reused across training steps
 * instead of created and destroyed every step. Buffers are kept in free lists by exact byte size,
 * which suits training, where every step asks for the same sizes in the same order.
 *
 * @example
 * ```ts
 * import { BufferArena } from "./arena.ts";
 * import { GpuRuntime } from "./gpu.ts";
 * using rt = await GpuRuntime.create();
 * using arena = new BufferArena(rt);
 * for (let step = 0; step < 3; step++) {
 *   const h = arena.acquire("layer0.h", 4 * 1024);  // fresh on step 0, recycled after
 *   // ... encode the step's kernels with h, submit ...
 *   arena.releaseAll();                             // every acquired buffer is free again
 * }
 * if (arena.created !== 1) throw new Error("one buffer serves every step");
 * ```
 *
 * @module
 */

import { type GpuRuntime, STORAGE_USAGE } from "./gpu.ts";

/** Reusable storage buffers keyed by size. Dispose it to destroy every buffer it made. */
export class BufferArena {
  readonly #rt: GpuRuntime;
  readonly #free = new Map<number, GPUBuffer[]>();
  readonly #inUse = new Set<GPUBuffer>();
  #created = 0;

  constructor(rt: GpuRuntime) {
    this.#rt = rt;
  }

  /**
   * A buffer of at least `bytes` bytes (contents undefined). A free buffer first created under the
   * same `label` is preferred, so a step that acquires in the same order gets the same buffers
   * back (WebGPU labels are fixed at creation: a recycled buffer keeps its first label).
   */
  acquire(label: string, bytes: number): GPUBuffer {
    const size = Math.max(16, Math.ceil(bytes / 16) * 16);
    const list = this.#free.get(size) ?? [];
    const same = list.findIndex((b) => b.label === label);
    let buffer = same >= 0 ? list.splice(same, 1)[0] : list.pop();
    if (!buffer) {
      buffer = this.#rt.buffer(label, size, STORAGE_USAGE);
      this.#created++;
    }
    this.#inUse.add(buffer);
    return buffer;
  }

  /** Return one buffer to its free list. */
  release(buffer: GPUBuffer): void {
    if (!this.#inUse.delete(buffer)) {
      throw new Error(`Buffer "${buffer.label}" was not acquired from this arena`);
    }
    const list = this.#free.get(buffer.size) ?? [];
    list.push(buffer);
    this.#free.set(buffer.size, list);
  }

  /** Return every acquired buffer (end of a step, after its submit). */
  releaseAll(): void {
    for (const b of [...this.#inUse]) this.release(b);
  }

  /** Buffers created so far (steady-state training creates none after the first step). */
  get created(): number {
    return this.#created;
  }

  /** Destroy every buffer of the arena, free or in use. */
  [Symbol.dispose](): void {
    for (const b of this.#inUse) this.#rt.destroyBuffer(b);
    for (const list of this.#free.values()) for (const b of list) this.#rt.destroyBuffer(b);
    this.#inUse.clear();
    this.#free.clear();
  }
}
