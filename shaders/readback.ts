/**
 * GPU readback without Deno's fixed completion delay: staging buffers that are reused, and whose
 * bytes are taken as soon as the GPU is done rather than when the map promise resolves.
 *
 * Why: Deno 2.9's `GPUBuffer.mapAsync` (ext/webgpu/buffer.rs; `onSubmittedWorkDone` in queue.rs
 * is the same) polls the device with `PollType::wait_indefinitely()` and then sleeps a fixed
 * `tokio::time::sleep(10 ms)` before it looks at whether the map finished. The op is polled
 * eagerly, so that first poll runs inside the `mapAsync()` call: when the call returns the GPU
 * work is done and wgpu has mapped the buffer, yet the promise resolves only after the sleep,
 * ~10 ms later even for an empty queue. `getMappedRange` asks wgpu, not the promise, whether the
 * buffer is mapped, so calling it right after `mapAsync()` returns the finished bytes at once.
 *
 * That is safe only on a buffer that Deno has mapped before: Deno's `getMappedRange` unwraps the
 * map mode it records when a map promise resolves, and a buffer that never had one would panic.
 * So a fresh staging buffer takes the slow path once (awaiting the promise), and is then kept in
 * a pool and reused. Wherever the early read is refused (the GPU not done, a validation error, a
 * destroyed buffer or device, a Deno that checks the promise state) it falls back to awaiting the
 * promise, which rejects with the same error as before. Bit-neutral by construction: it changes
 * only when the bytes are taken, never which bytes.
 *
 * @module
 */

import { GpuStageError } from "./errors.ts";

/** Staging buffers up to this size are pooled; larger reads use a fresh buffer (and the wait). */
export const POOLED_STAGING_MAX_BYTES = 16 << 20;
/** Idle buffers kept per size class (a power of two): enough for reads awaited together. */
const IDLE_PER_CLASS = 4;
const STAGING_USAGE = GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;

/** Copies into a staging buffer (its first `size` bytes) with the given encoder. */
export type EncodeCopy = (encoder: GPUCommandEncoder, staging: GPUBuffer) => void;

/** Options of {@link ReadbackPool.read}. */
export interface ReadOptions {
  /** Stops the wait (rejecting with its reason); the copy already submitted still runs. */
  readonly signal?: AbortSignal;
  /** Names the staging buffer and the copy's command buffer. */
  readonly label?: string;
  /** Await the map promise even on a reused buffer: the old pattern, kept for the benchmark. */
  readonly awaitPromise?: boolean;
}

/**
 * Staging buffers for reads from one device. `read` submits a copy into a staging buffer and hands
 * the bytes to a callback; `[Symbol.dispose]` destroys the idle buffers.
 */
export class ReadbackPool implements Disposable {
  readonly #device: GPUDevice;
  /** Idle buffers by byte size; every one has been mapped by Deno before (safe to read early). */
  readonly #idle = new Map<number, GPUBuffer[]>();
  #disposed = false;
  #earlyReads = 0;

  constructor(device: GPUDevice) {
    this.#device = device;
  }

  /** How many reads took their bytes before the map promise resolved (for tests and benches). */
  get earlyReads(): number {
    return this.#earlyReads;
  }

  /**
   * Submits `encode`'s copy into a staging buffer of at least `size` bytes, waits for it and hands
   * its first `size` bytes to `consume`, which must use them during the call (they are unmapped
   * after). Waits for all work submitted before, as a map does.
   */
  async read<T>(
    size: number,
    encode: EncodeCopy,
    consume: (bytes: Uint8Array) => T,
    options: ReadOptions = {},
  ): Promise<T> {
    options.signal?.throwIfAborted();
    // Maps cover multiples of 4 bytes; a zero-byte read still maps 4.
    const mapSize = Math.max(4, Math.ceil(size / 4) * 4);
    const reused = this.#take(mapSize);
    const label = options.label ?? "";
    const staging = reused ?? this.#create(mapSize, label);
    // Where the buffer goes after the read: back to the pool, or destroyed (a failed or aborted
    // map; destroying also ends a pending one).
    let after: "pool" | "destroy" = "destroy";
    try {
      // The copy's own scope: a failed copy (a destroyed source) throws here, before a map that
      // would hand back a reused buffer's stale bytes. Pushed and popped with no await between.
      this.#device.pushErrorScope("validation");
      let scope: Promise<GPUError | null>;
      try {
        const encoder = this.#device.createCommandEncoder({ label: `readback ${label}` });
        encode(encoder, staging);
        this.#device.queue.submit([encoder.finish()]);
      } finally {
        scope = this.#device.popErrorScope();
      }
      // One event loop turn while the copy runs: reads no longer wait out Deno's sleep, so
      // without it a loop of reads would run on microtasks alone and starve timers and sockets.
      const [error] = await Promise.all([scope, nextTurn()]);
      if (error) throw new GpuStageError(`readback ${label}`, "validation", error.message);
      options.signal?.throwIfAborted();
      const mapped = staging.mapAsync(GPUMapMode.READ, 0, mapSize);
      mapped.catch(() => {}); // awaited below, or abandoned (destroyed) on abort: never unhandled
      const early = reused && !options.awaitPromise ? mappedNow(staging, mapSize) : undefined;
      if (early) {
        this.#earlyReads++;
        try {
          return consume(new Uint8Array(early, 0, size));
        } finally {
          staging.unmap();
          // Reusable at once: Deno's map op still ends after its sleep, but then only sets the
          // informational mapState (and the map mode, already "read"); wgpu saw the unmap.
          after = "pool";
        }
      }
      await untilAborted(mapped, options.signal);
      try {
        return consume(new Uint8Array(staging.getMappedRange(0, mapSize), 0, size));
      } finally {
        staging.unmap();
        if (mapSize <= POOLED_STAGING_MAX_BYTES) after = "pool";
      }
    } finally {
      if (after === "pool") this.#give(staging);
      else staging.destroy();
    }
  }

  /** Destroy the idle staging buffers; buffers still in a read are destroyed when it ends. */
  [Symbol.dispose](): void {
    this.#disposed = true;
    for (const list of this.#idle.values()) for (const b of list) b.destroy();
    this.#idle.clear();
  }

  #take(mapSize: number): GPUBuffer | undefined {
    if (mapSize > POOLED_STAGING_MAX_BYTES) return undefined;
    return this.#idle.get(sizeClass(mapSize))?.pop();
  }

  #create(mapSize: number, label: string): GPUBuffer {
    const pooled = mapSize <= POOLED_STAGING_MAX_BYTES;
    return this.#device.createBuffer({
      label: `staging ${label}`,
      size: pooled ? sizeClass(mapSize) : mapSize,
      usage: STAGING_USAGE,
    });
  }

  #give(staging: GPUBuffer): void {
    const list = this.#idle.get(staging.size) ?? [];
    if (this.#disposed || list.length >= IDLE_PER_CLASS) return staging.destroy();
    list.push(staging);
    this.#idle.set(staging.size, list);
  }
}

/** The smallest power of two that holds `bytes` (at least 256, a copy's natural granule). */
function sizeClass(bytes: number): number {
  return Math.max(256, 2 ** Math.ceil(Math.log2(bytes)));
}

/** Resolves after one turn of the event loop (timers and I/O run): ~0.07 ms on lavapipe's host. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The mapped bytes if wgpu has already mapped `staging`, else undefined. */
function mappedNow(staging: GPUBuffer, mapSize: number): ArrayBuffer | undefined {
  try {
    return staging.getMappedRange(0, mapSize);
  } catch {
    return undefined; // not mapped yet, or refused: the promise decides
  }
}

/** `promise`, or a rejection with the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => {
    signal.removeEventListener("abort", onAbort);
  });
}
