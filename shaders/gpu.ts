/**
 * The WebGPU runtime every kernel runs on: one adapter and device with the limits training needs,
 * the tuning profile chosen for that adapter, a pipeline cache, an immutable uniform cache,
 * labelled buffers, steps (one command encoder per training step), readback and error scopes
 * that name the stage that failed.
 *
 * @example
 * ```ts
 * import { GpuRuntime } from "./gpu.ts";
 * import { Elementwise } from "./elementwise.ts";
 * using rt = await GpuRuntime.create();
 * const ew = new Elementwise(rt);                     // kernels are built once
 * const x = rt.buffer("x", new Float32Array([1, 2, 3]));
 * const step = rt.beginStep("demo");
 * ew.scale(step.pass, { x, n: 3, alpha: 2 });        // kernels encode; no submit per kernel
 * await step.submit();                                // one submit; errors thrown here
 * const host = await rt.read({ buffer: x, size: 12 });
 * if (host[2] !== 6) throw new Error("expected 6");
 * ```
 *
 * @module
 */

import { GpuDeviceLostError, GpuStageError, GpuUnavailableError } from "./errors.ts";
import { type MatmulTiling, profileFor, type TuningProfile } from "./profile.ts";
import { requestGpuAdapter } from "./runtime_dir.ts";
import { ProfilingPass, type SectionTiming } from "./dispatch_profile.ts";
import { ReadbackPool } from "./readback.ts";

export type { SectionTiming } from "./dispatch_profile.ts";

/**
 * A range of a GPU buffer seen as f32 (or u32) elements. A bare `GPUBuffer` means the whole buffer.
 * `offset` and `size` are in bytes, as in WebGPU; `offset` must be a multiple of the device's
 * `minStorageBufferOffsetAlignment` (256 on most GPUs, 32 on lavapipe), so parameter tensors laid
 * out in one large buffer should start at multiples of 256 bytes (64 floats).
 */
export type TensorView = GPUBuffer | {
  readonly buffer: GPUBuffer;
  /** Start, in bytes (default 0). */
  readonly offset?: number;
  /** Length, in bytes (default: to the end of the buffer). */
  readonly size?: number;
};

/**
 * Bind groups a runtime keeps (GpuRuntime.bindGroup): a 1B step makes about a thousand, and a
 * run's steps the same ones again.
 */
export const BIND_GROUP_CACHE_LIMIT = 8192;

/** The buffer, byte offset and byte size of a view, with defaults filled in. */
export function resolveView(view: TensorView): { buffer: GPUBuffer; offset: number; size: number } {
  if (view instanceof GPUBuffer) return { buffer: view, offset: 0, size: view.size };
  const offset = view.offset ?? 0;
  const size = view.size ?? view.buffer.size - offset;
  if (offset < 0 || size < 0 || offset + size > view.buffer.size) {
    throw new RangeError(
      `View of buffer "${view.buffer.label}" is out of range: offset ${offset} + size ${size} > ${view.buffer.size} bytes`,
    );
  }
  return { buffer: view.buffer, offset, size };
}

/** Number of 4-byte elements a view covers. */
export function viewLength(view: TensorView): number {
  return Math.floor(resolveView(view).size / 4);
}

/** Default usage of runtime-created storage buffers: storage, copy source and copy destination. */
export const STORAGE_USAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC |
  GPUBufferUsage.COPY_DST;

/** Options of {@link GpuRuntime.create}. */
export interface GpuRuntimeOptions {
  /** Override the tuning profile chosen from the adapter (tests vary kernel shapes this way). */
  readonly profile?: TuningProfile;
  /**
   * Override the profile's matmul tiling alone, for every shape (benchmarks try a kernel shape on
   * a whole step this way, `--tiling`): the profile's `matmulByShape` table is dropped.
   */
  readonly matmulTiling?: MatmulTiling;
  /** Passed to `requestAdapter`. */
  readonly powerPreference?: GPUPowerPreference;
  /** Request `shader-f16` when the adapter has it (default true). */
  readonly f16?: boolean;
  /** Request `timestamp-query` when the adapter has it (default true), for timed sections. */
  readonly timestamps?: boolean;
  /**
   * Try to request `subgroups` (default true); a refusal only leaves `rt.hasSubgroups` false.
   * Asked whatever `adapter.features` says: Deno 2.9.6 leaves it out of that list on adapters
   * that grant it (lavapipe, NVIDIA's Vulkan driver).
   */
  readonly subgroups?: boolean;
  /** Label of the device. */
  readonly label?: string;
  /**
   * Distinct uniform blocks kept before the cache is recycled (default 4096). Training repeats
   * the same shapes, so the cache stays small; varying scalars (a per-step `alpha`) would grow it.
   */
  readonly uniformCacheLimit?: number;
  /**
   * Lower `maxStorageBufferBindingSize` to this many bytes (default: the adapter's maximum).
   * Everything that splits work by binding size reads `rt.limits`, so tests force the splitting
   * of embedding, LM head, logits, optimizer state and reductions on a tiny model this way; a
   * binding over it is refused as one over the device's limit would be.
   */
  readonly maxBindingBytes?: number;
  /**
   * Time every dispatch (shaders/dispatch_profile.ts): each step's `pass` runs each dispatch in a
   * timed pass of its own, and every step's timings are appended to `rt.dispatchTimings`. For
   * profiling tools only; needs `timestamp-query`.
   */
  readonly profileDispatches?: boolean;
  /**
   * Lower `maxBufferSize` to this many bytes (default: the adapter's maximum). Parameters,
   * gradients and optimizer state split into as many buffers as it requires (model/params.ts
   * `paramSegments`), so tests force that split on a tiny model this way.
   */
  readonly maxBufferBytes?: number;
}

/**
 * `adapter.requestDevice(descriptor)` with the `optional` features added to its required ones;
 * when that is refused (a runtime that does not know a feature's name rejects it with a
 * TypeError, an adapter without it rejects the request), the plain descriptor is asked for
 * instead, so an optional feature never costs the device. A refused request leaves the adapter
 * unconsumed (WebGPU's requestDevice), so it can be asked again.
 *
 * @example
 * ```ts
 * import { requestDeviceWith } from "./gpu.ts";
 * const asked: string[][] = [];
 * const adapter = {
 *   requestDevice(d?: GPUDeviceDescriptor) {
 *     const features = [...(d?.requiredFeatures ?? [])];
 *     asked.push(features);
 *     return features.includes("subgroups")
 *       ? Promise.reject(new TypeError("unknown feature"))
 *       : Promise.resolve({} as GPUDevice);
 *   },
 * };
 * await requestDeviceWith(adapter, { requiredFeatures: ["shader-f16"] }, ["subgroups"]);
 * if (JSON.stringify(asked) !== '[["shader-f16","subgroups"],["shader-f16"]]') throw new Error();
 * ```
 */
export async function requestDeviceWith(
  adapter: Pick<GPUAdapter, "requestDevice">,
  descriptor: GPUDeviceDescriptor,
  optional: readonly GPUFeatureName[],
): Promise<GPUDevice> {
  const required = [...(descriptor.requiredFeatures ?? [])];
  const extra = optional.filter((f) => !required.includes(f));
  if (extra.length > 0) {
    try {
      return await adapter.requestDevice({
        ...descriptor,
        requiredFeatures: [...required, ...extra],
      });
    } catch {
      // Refused: ask again without the optional features, whose absence the caller records.
    }
  }
  return await adapter.requestDevice(descriptor);
}

/** Limits requested at the adapter's maximum: large storage bindings and buffers for training. */
const WANTED_LIMITS = [
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupSizeZ",
  "maxComputeWorkgroupsPerDimension",
  "maxStorageBuffersPerShaderStage",
] as const;

/**
 * A plain copy of `limits` (WebGPU's object cannot be subclassed or wrapped: its getters check
 * their receiver) with `maxStorageBufferBindingSize` at most `maxBindingBytes`.
 */
function cappedLimits(
  limits: GPUSupportedLimits,
  caps: { maxBindingBytes?: number; maxBufferBytes?: number },
): GPUSupportedLimits {
  const { maxBindingBytes, maxBufferBytes } = caps;
  const copy: Record<string, number> = {};
  for (const key in limits) {
    const value = (limits as unknown as Record<string, unknown>)[key];
    if (typeof value === "number") copy[key] = value;
  }
  if (maxBindingBytes !== undefined) {
    copy.maxStorageBufferBindingSize = Math.min(copy.maxStorageBufferBindingSize, maxBindingBytes);
  }
  if (maxBufferBytes !== undefined) {
    copy.maxBufferSize = Math.min(copy.maxBufferSize, maxBufferBytes);
  }
  return Object.freeze(copy) as unknown as GPUSupportedLimits;
}

/** `DENO_WEBGPU_BACKEND`, or undefined when unset or when env access is not permitted. */
function backendEnv(): string | undefined {
  try {
    return Deno.env.get("DENO_WEBGPU_BACKEND");
  } catch {
    return undefined;
  }
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** The bit pattern of an f32, to place a float among a kernel's u32 uniform words. */
export function f32Bits(x: number): number {
  f32Scratch[0] = x;
  return u32Scratch[0];
}

/** Most timed sections one step can hold (two timestamp queries each). */
export const MAX_TIMED_SECTIONS = 512;

/** Most timed sections one profiled step can hold (one per dispatch when profiling dispatches). */
export const MAX_PROFILED_SECTIONS = 1 << 15;

/** Sections per query set: WebGPU caps a query set at 4096 queries, two per section. */
const SECTIONS_PER_QUERY_SET = 2048;

/**
 * One training step's GPU work: a command encoder and, lazily, a compute pass. Kernels encode into
 * `pass`; taking `encoder` ends the open pass (for copies and clears) and the next `pass` opens a
 * new one. `submit` finishes and submits, then throws any validation error naming the step; on
 * profiles that ask for it, `flush` hands the work so far to the queue earlier. For profiling,
 * `timed(name)` opens a pass whose GPU time is reported in `timings` after submit.
 */
export class GpuStep {
  readonly #rt: GpuRuntime;
  readonly #label: string;
  #encoder: GPUCommandEncoder;
  readonly #onSubmit: () => void;
  #pass: GPUComputePassEncoder | undefined;
  #passes = 0;
  #done = false;
  /** Validation scopes of the parts {@link flush} submitted, checked by {@link submit}. */
  readonly #flushed: Promise<GPUError | null>[] = [];
  readonly #sections: string[] = [];
  readonly #querySets: GPUQuerySet[] = [];
  #timings: SectionTiming[] = [];
  #profiling: ProfilingPass | undefined;

  /** Use {@link GpuRuntime.beginStep}; `onSubmit` runs once the work is handed to the queue. */
  constructor(rt: GpuRuntime, label: string, onSubmit: () => void = () => {}) {
    this.#rt = rt;
    this.#label = label;
    this.#onSubmit = onSubmit;
    this.#encoder = rt.device.createCommandEncoder({ label });
  }

  /** The open compute pass (opened on first use). */
  get pass(): GPUComputePassEncoder {
    this.#assertOpen();
    if (this.#rt.dispatchTimings) {
      this.#profiling ??= new ProfilingPass((name) => this.timed(name));
      return this.#profiling.asPass();
    }
    if (!this.#pass) {
      this.#pass = this.#encoder.beginComputePass({
        label: `${this.#label} pass ${this.#passes++}`,
      });
    }
    return this.#pass;
  }

  /**
   * A new compute pass named `name` (the open one is ended): kernels encoded into it, or into
   * `pass` until the next `timed`/`encoder`, are timed together with GPU timestamps. Without the
   * device's `timestamp-query` feature the pass is untimed and `timings` stays empty.
   */
  timed(name: string): GPUComputePassEncoder {
    this.#assertOpen();
    this.#pass?.end();
    this.#pass = undefined;
    const label = `${this.#label} / ${name}`;
    if (!this.#rt.hasTimestamps) return this.#pass = this.#encoder.beginComputePass({ label });
    const most = this.#rt.dispatchTimings ? MAX_PROFILED_SECTIONS : MAX_TIMED_SECTIONS;
    if (this.#sections.length >= most) {
      throw new RangeError(`Step "${this.#label}": more than ${most} timed sections`);
    }
    const index = this.#sections.push(name) - 1;
    const set = Math.floor(index / SECTIONS_PER_QUERY_SET);
    if (set === this.#querySets.length) {
      this.#querySets.push(this.#rt.device.createQuerySet({
        label: `${this.#label} timestamps ${set}`,
        type: "timestamp",
        count: 2 * Math.min(most, SECTIONS_PER_QUERY_SET),
      }));
    }
    const slot = index % SECTIONS_PER_QUERY_SET;
    this.#pass = this.#encoder.beginComputePass({
      label,
      timestampWrites: {
        querySet: this.#querySets[set],
        beginningOfPassWriteIndex: 2 * slot,
        endOfPassWriteIndex: 2 * slot + 1,
      },
    });
    return this.#pass;
  }

  /** GPU time of each {@link timed} section, in order; filled in by {@link submit}. */
  get timings(): readonly SectionTiming[] {
    return this.#timings;
  }

  /** Submissions made so far: the parts {@link flush} handed over, then the last, at submit. */
  get submissions(): number {
    return this.#flushed.length + (this.#done ? 1 : 0);
  }

  /**
   * Hands the work encoded so far to the queue where the profile asks for it (`flushLayers`), so
   * the GPU runs it while the host encodes the rest; returns whether it did. The queue runs the
   * parts in order, so the results are those of one submission. The open pass ends: take `pass`
   * (or `encoder`) again afterwards. Timed steps keep one submission, their timestamps resolved
   * at its end. Validation errors of a flushed part are thrown by {@link submit}.
   */
  flush(): boolean {
    this.#assertOpen();
    if (!this.#rt.profile.flushLayers || this.#rt.dispatchTimings || this.#sections.length > 0) {
      return false;
    }
    const encoder = this.encoder;
    const part = this.#flushed.length;
    this.#rt.device.pushErrorScope("validation");
    try {
      this.#rt.device.queue.submit([encoder.finish({ label: `${this.#label} part ${part}` })]);
    } finally {
      this.#flushed.push(this.#rt.device.popErrorScope());
    }
    this.#encoder = this.#rt.device.createCommandEncoder({ label: this.#label });
    return true;
  }

  /** The command encoder, with any open compute pass ended first. */
  get encoder(): GPUCommandEncoder {
    this.#assertOpen();
    this.#pass?.end();
    this.#pass = undefined;
    return this.#encoder;
  }

  /**
   * Finish, submit, and wait until the queue has run it; throws {@link GpuStageError}. Aborting
   * `signal` stops the wait (rejecting with its reason), not the GPU work already submitted.
   *
   * With `wait: false` it returns once the step is validated and queued, without waiting for the
   * GPU: for a step followed by a read (a read waits for the work queued before it) or by more
   * steps (the queue runs them in order). The wait is a fence read ({@link GpuRuntime.untilIdle}),
   * which ends with the GPU work, not Deno's `onSubmittedWorkDone`, which resolves on a 10 ms
   * polling tick even for an empty queue (shaders/readback.ts); a skipped wait still saves a
   * submission and a blocking poll.
   */
  async submit(options: { signal?: AbortSignal; wait?: boolean } = {}): Promise<void> {
    // WebGPU reports encoding errors at finish(): a scope pushed and popped around finish and
    // submit, with no await between, catches this step's errors even when steps interleave.
    this.#assertOpen();
    this.#rt.device.pushErrorScope("validation");
    let timestamps: GPUBuffer | undefined;
    let scope: Promise<GPUError | null>;
    try {
      const encoder = this.encoder;
      this.#done = true;
      if (this.#sections.length > 0) timestamps = this.#resolveTimestamps(encoder);
      this.#rt.device.queue.submit([encoder.finish({ label: this.#label })]);
    } finally {
      scope = this.#rt.device.popErrorScope();
      this.#onSubmit();
    }
    try {
      // The first error in queue order: a flushed part's comes before the last part's.
      const error = (await Promise.all([...this.#flushed, scope])).find((e) => e !== null);
      // Errors of pipeline and buffer creation name their stage: report those before the step's.
      await this.#rt.checkErrors();
      if (error) throw new GpuStageError(`step "${this.#label}"`, "validation", error.message);
      if (timestamps) {
        // The read waits for the step, as a fence would.
        await this.#readTimings(timestamps, options.signal);
        this.#rt.dispatchTimings?.push(...this.#timings);
      } else if (options.wait !== false) {
        await this.#rt.untilIdle(options);
      }
    } finally {
      timestamps?.destroy();
      for (const set of this.#querySets) set.destroy();
    }
  }

  /** Encode the resolve of the timestamps; returns the buffer they are resolved into. */
  #resolveTimestamps(encoder: GPUCommandEncoder): GPUBuffer {
    const count = 2 * this.#sections.length;
    const usage = GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC;
    const resolved = this.#rt.device.createBuffer({ label: "timestamps", size: count * 8, usage });
    // Every set but the last is full; byte offsets stay multiples of 256 (2048 x 16 bytes).
    this.#querySets.forEach((set, i) => {
      const queries = Math.min(2 * SECTIONS_PER_QUERY_SET, count - i * 2 * SECTIONS_PER_QUERY_SET);
      encoder.resolveQuerySet(set, 0, queries, resolved, i * 2 * SECTIONS_PER_QUERY_SET * 8);
    });
    return resolved;
  }

  /** Read the resolved timestamps through the runtime's pooled staging (no 10 ms map wait). */
  async #readTimings(resolved: GPUBuffer, signal?: AbortSignal): Promise<void> {
    const count = 2 * this.#sections.length;
    const ns = await this.#rt.withBytes(
      { buffer: resolved, offset: 0, size: count * 8 },
      (bytes) => new BigInt64Array(bytes.slice().buffer),
      { signal },
    );
    this.#timings = this.#sections.map((name, i) => ({
      name,
      ms: Number(ns[2 * i + 1] - ns[2 * i]) / 1e6,
    }));
  }

  /**
   * Abandon the step if it was not submitted (an exception while encoding): its commands are
   * dropped and its uniforms released. `using step = rt.beginStep(...)`.
   */
  [Symbol.dispose](): void {
    if (this.#done) return;
    this.#done = true;
    this.#pass?.end();
    this.#pass = undefined;
    for (const set of this.#querySets) set.destroy();
    this.#onSubmit();
  }

  #assertOpen(): void {
    if (this.#done) throw new Error(`Step "${this.#label}" was already submitted`);
  }
}

/**
 * Owner of the WebGPU device and everything created through it. Dispose it (`using`) to destroy
 * its buffers and the device.
 */
export class GpuRuntime {
  /** The adapter the device came from. */
  readonly adapter: GPUAdapter;
  /** The device all kernels run on. */
  readonly device: GPUDevice;
  /** Adapter description (vendor, device, description string). */
  readonly info: GPUAdapterInfo;
  /** Kernel shapes for this adapter. */
  readonly profile: TuningProfile;
  /** Whether `shader-f16` was enabled on the device. */
  readonly hasF16: boolean;
  /** Whether `timestamp-query` was enabled (timed step sections report GPU time). */
  readonly hasTimestamps: boolean;
  /**
   * Whether `subgroups` was enabled: kernels may use `subgroupAdd`, `subgroupShuffle`,
   * `@builtin(subgroup_size)` (without the `enable subgroups;` directive, which Naga refuses).
   * None of the training kernels needs it; one that does must refuse to build without it.
   */
  readonly hasSubgroups: boolean;
  /**
   * With the `profileDispatches` option: the GPU time of every dispatch of every step submitted
   * so far, in order (a profiler reads and clears it); otherwise undefined.
   */
  readonly dispatchTimings: SectionTiming[] | undefined;
  readonly #pipelines = new Map<string, GPUComputePipeline>();
  readonly #uniforms = new Map<string, GPUBuffer>();
  readonly #uniformLimit: number;
  /** Bind groups by pipeline and bound ranges (see {@link bindGroup}). */
  readonly #bindGroups = new Map<string, GPUBindGroup>();
  /** Small numbers standing for pipelines and buffers in bind-group keys (identity, not labels). */
  readonly #ids = new WeakMap<object, number>();
  #nextId = 0;
  /** Uniform buffers dropped from the cache, destroyed once no open step can bind them. */
  readonly #retired: GPUBuffer[] = [];
  #openSteps = 0;
  readonly #owned = new Set<GPUBuffer>();
  readonly #readback: ReadbackPool;
  readonly #pending: Promise<GpuStageError | undefined>[] = [];
  #lost: GpuDeviceLostError | undefined;
  #uncaptured: GpuStageError | undefined;
  #disposed = false;
  readonly #limits: GPUSupportedLimits;

  private constructor(
    adapter: GPUAdapter,
    device: GPUDevice,
    profile: TuningProfile,
    options: {
      uniformLimit: number;
      maxBindingBytes?: number;
      maxBufferBytes?: number;
      profileDispatches?: boolean;
    },
  ) {
    this.#uniformLimit = options.uniformLimit;
    this.#limits = cappedLimits(device.limits, options);
    this.adapter = adapter;
    this.device = device;
    this.info = adapter.info;
    this.profile = profile;
    this.hasF16 = device.features.has("shader-f16");
    this.hasTimestamps = device.features.has("timestamp-query");
    this.hasSubgroups = device.features.has("subgroups");
    this.dispatchTimings = options.profileDispatches ? [] : undefined;
    this.#readback = new ReadbackPool(device);
    device.lost.then((info) => {
      this.#lost = new GpuDeviceLostError(info.reason, info.message);
    });
    device.addEventListener("uncapturederror", (event) => {
      const error = (event as GPUUncapturedErrorEvent).error;
      this.#uncaptured ??= new GpuStageError("uncaptured", "internal", error.message);
    });
  }

  /**
   * Acquire an adapter and device. Throws {@link GpuUnavailableError} naming the backend that
   * was tried (`DENO_WEBGPU_BACKEND`) and how to get one when there is none.
   */
  static async create(options: GpuRuntimeOptions = {}): Promise<GpuRuntime> {
    const backend = backendEnv();
    const tried = backend === undefined
      ? "the default backend (DENO_WEBGPU_BACKEND unset)"
      : `DENO_WEBGPU_BACKEND=${JSON.stringify(backend)}`;
    const help = "On Debian/Ubuntu, `apt-get install mesa-vulkan-drivers libvulkan1` provides " +
      "lavapipe (Vulkan on the CPU); set DENO_WEBGPU_BACKEND=vulkan or gl to choose a backend.";
    if (typeof navigator === "undefined" || !("gpu" in navigator)) {
      throw new GpuUnavailableError(`WebGPU is not available in this runtime. ${help}`, backend);
    }
    // Sets up the runtime folder first: else Mesa prints an XDG_RUNTIME_DIR warning.
    const adapter = await requestGpuAdapter({ powerPreference: options.powerPreference });
    if (!adapter) {
      throw new GpuUnavailableError(`No WebGPU adapter found with ${tried}. ${help}`, backend);
    }
    const requiredLimits: Record<string, number> = {};
    for (const name of WANTED_LIMITS) requiredLimits[name] = adapter.limits[name];
    const requiredFeatures: GPUFeatureName[] = [];
    if (options.f16 !== false && adapter.features.has("shader-f16")) {
      requiredFeatures.push("shader-f16");
    }
    if (options.timestamps !== false && adapter.features.has("timestamp-query")) {
      requiredFeatures.push("timestamp-query");
    }
    if (options.profileDispatches && !requiredFeatures.includes("timestamp-query")) {
      throw new GpuUnavailableError(
        `profileDispatches needs the "timestamp-query" feature, which adapter ` +
          `"${adapter.info.description}" does not offer (or timestamps: false was given)`,
        backend,
      );
    }
    let device: GPUDevice;
    try {
      const optional: GPUFeatureName[] = options.subgroups === false ? [] : ["subgroups"];
      device = await requestDeviceWith(adapter, {
        label: options.label ?? "psyche",
        requiredLimits,
        requiredFeatures,
      }, optional);
    } catch (cause) {
      throw new GpuUnavailableError(
        `Adapter "${adapter.info.description}" refused a device with ${tried}: ${cause}`,
        backend,
        { cause },
      );
    }
    const limit = options.uniformCacheLimit ?? 4096;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(`uniformCacheLimit must be a positive integer, got ${limit}`);
    }
    const cap = options.maxBindingBytes;
    if (cap !== undefined && (!Number.isInteger(cap) || cap < 256 || cap % 4 !== 0)) {
      throw new RangeError(`maxBindingBytes must be a multiple of 4, at least 256, got ${cap}`);
    }
    const bufferCap = options.maxBufferBytes;
    if (
      bufferCap !== undefined &&
      (!Number.isInteger(bufferCap) || bufferCap < 256 || bufferCap % 4 !== 0)
    ) {
      throw new RangeError(
        `maxBufferBytes must be a multiple of 4, at least 256, got ${bufferCap}`,
      );
    }
    const profile = options.profile ?? profileFor(adapter.info);
    // One tiling for every shape: the table's rules would still claim the larger products.
    const tiled = options.matmulTiling
      ? { ...profile, matmul: options.matmulTiling, matmulByShape: [] }
      : profile;
    return new GpuRuntime(adapter, device, tiled, {
      uniformLimit: limit,
      maxBindingBytes: cap,
      maxBufferBytes: bufferCap,
      profileDispatches: options.profileDispatches,
    });
  }

  /**
   * The device's limits (as granted: the adapter's maxima for the ones training needs), with
   * `maxStorageBufferBindingSize` lowered to the `maxBindingBytes` option and `maxBufferSize` to
   * the `maxBufferBytes` option when given.
   */
  get limits(): GPUSupportedLimits {
    return this.#limits;
  }

  /** One-line adapter description for logs and benchmarks. */
  get adapterName(): string {
    const i = this.info;
    return [
      i.description || i.device,
      i.vendor && `vendor ${i.vendor}`,
      `profile ${this.profile.name}`,
    ]
      .filter(Boolean).join(", ");
  }

  /**
   * The compute pipeline for `key`, built from `wgsl()` on first use and cached. Creation runs in
   * an error scope named after the key; a failure is thrown by the next `checkErrors`/`submit`.
   */
  pipeline(key: string, wgsl: () => string): GPUComputePipeline {
    const cached = this.#pipelines.get(key);
    if (cached) return cached;
    const pipeline = this.#scoped(`pipeline ${key}`, () => {
      const module = this.device.createShaderModule({ label: key, code: wgsl() });
      return this.device.createComputePipeline({
        label: key,
        layout: "auto",
        compute: { module, entryPoint: "main" },
      });
    });
    this.#pipelines.set(key, pipeline);
    return pipeline;
  }

  /** Number of pipelines built so far (tests check that shapes reuse pipelines). */
  get pipelineCount(): number {
    return this.#pipelines.size;
  }

  /**
   * A uniform buffer holding `words` (u32; floats via {@link f32Bits}), padded to 16 bytes.
   * Buffers are immutable and cached by content, so a step encoded twice reuses them and several
   * dispatches in one submission never overwrite each other's parameters.
   */
  uniform(words: readonly number[]): GPUBuffer {
    const key = words.join(",");
    const cached = this.#uniforms.get(key);
    if (cached) return cached;
    if (this.#uniforms.size >= this.#uniformLimit) {
      // Work already encoded may bind these: retire now, destroy when no step is open.
      this.#retired.push(...this.#uniforms.values());
      this.#uniforms.clear();
      this.#collectRetired();
    }
    const padded = new Uint32Array(Math.max(4, Math.ceil(words.length / 4) * 4));
    padded.set(words);
    const buffer = this.#scoped("uniform buffer", () =>
      this.device.createBuffer({
        label: `uniform ${key}`,
        size: padded.byteLength,
        usage: GPUBufferUsage.UNIFORM,
        mappedAtCreation: true,
      }));
    new Uint32Array(buffer.getMappedRange()).set(padded);
    buffer.unmap();
    this.#uniforms.set(key, buffer);
    return buffer;
  }

  /**
   * A labelled storage buffer owned by the runtime: `size` bytes of zeros, or a copy of `init`
   * (any typed array: f32, u32, i32, or f16 bits as `Uint16Array`).
   * Sizes are rounded up to 16 bytes so vec4 kernels can bind whole buffers.
   */
  buffer(
    label: string,
    init: number | ArrayBufferView,
    usage: GPUBufferUsageFlags = STORAGE_USAGE,
  ): GPUBuffer {
    const bytes = typeof init === "number" ? init : init.byteLength;
    if (!Number.isInteger(bytes) || bytes < 0) {
      throw new RangeError(`Buffer "${label}": size must be a non-negative integer, got ${bytes}`);
    }
    if (bytes > this.limits.maxBufferSize) {
      throw new RangeError(
        `Buffer "${label}": ${bytes} bytes exceeds the device's maxBufferSize ${this.limits.maxBufferSize}`,
      );
    }
    const size = Math.max(16, Math.ceil(bytes / 16) * 16);
    const buffer = this.#scoped(
      `buffer "${label}"`,
      () =>
        this.device.createBuffer({
          label,
          size,
          usage,
          mappedAtCreation: typeof init !== "number",
        }),
    );
    if (typeof init !== "number") {
      new Uint8Array(buffer.getMappedRange()).set(
        new Uint8Array(init.buffer, init.byteOffset, init.byteLength),
      );
      buffer.unmap();
    }
    this.#owned.add(buffer);
    return buffer;
  }

  /**
   * The buffers made by {@link buffer} that are alive now, label and bytes (uniforms excluded):
   * what a memory plan's figures are checked against.
   */
  liveBuffers(): { label: string; size: number }[] {
    return [...this.#owned].map((b) => ({ label: b.label, size: b.size }));
  }

  /** Destroy a buffer made by {@link buffer} before the runtime is disposed. */
  destroyBuffer(buffer: GPUBuffer): void {
    this.#owned.delete(buffer);
    buffer.destroy();
  }

  /** Copy host data into a view (queued; ordered before the next submit). */
  write(view: TensorView, data: ArrayBufferView): void {
    const { buffer, offset, size } = resolveView(view);
    if (data.byteLength > size) {
      throw new RangeError(
        `Cannot write ${data.byteLength} bytes into "${buffer.label}": the view holds ${size}`,
      );
    }
    this.device.queue.writeBuffer(
      buffer,
      offset,
      data.buffer as ArrayBuffer,
      data.byteOffset,
      data.byteLength,
    );
  }

  /**
   * The bind group of `pipeline` over `entries` (binding i ↦ a buffer range), made on first use
   * and reused: a training step binds the same buffers, uniforms included, at every step, and
   * making its groups anew cost 2.6 ms of JS per step of the 20M model (156 groups, lavapipe's
   * host) before the GPU could start. Keys hold the buffers' identities, not their labels, so a
   * buffer made later (a grown scratch, a new uniform) never meets a group of an old one; a group
   * of a destroyed buffer is never asked for again. Past `BIND_GROUP_CACHE_LIMIT` the cache is
   * dropped and refills.
   */
  bindGroup(
    pipeline: GPUComputePipeline,
    entries: readonly { buffer: GPUBuffer; offset: number; size: number }[],
  ): GPUBindGroup {
    let key = `${this.#id(pipeline)}`;
    for (const e of entries) key += `|${this.#id(e.buffer)}:${e.offset}:${e.size}`;
    const cached = this.#bindGroups.get(key);
    if (cached) return cached;
    if (this.#bindGroups.size >= BIND_GROUP_CACHE_LIMIT) this.#bindGroups.clear();
    const group = this.device.createBindGroup({
      label: pipeline.label,
      layout: pipeline.getBindGroupLayout(0),
      entries: entries.map((resource, binding) => ({ binding, resource })),
    });
    this.#bindGroups.set(key, group);
    return group;
  }

  /** Bind groups cached now (at most `BIND_GROUP_CACHE_LIMIT`). */
  get bindGroupCacheSize(): number {
    return this.#bindGroups.size;
  }

  #id(o: object): number {
    let id = this.#ids.get(o);
    if (id === undefined) this.#ids.set(o, id = this.#nextId++);
    return id;
  }

  /** Start a step: one command encoder shared by every kernel until {@link GpuStep.submit}. */
  beginStep(label: string): GpuStep {
    this.#openSteps++;
    return new GpuStep(this, label, () => {
      this.#openSteps--;
      this.#collectRetired();
    });
  }

  /** Uniform blocks cached now (at most `uniformCacheLimit`). */
  get uniformCacheSize(): number {
    return this.#uniforms.size;
  }

  /** Retired uniform buffers still alive (waiting for open steps to be submitted). */
  get retiredUniformCount(): number {
    return this.#retired.length;
  }

  #collectRetired(): void {
    // Once no step is open, every encoder that could bind a retired buffer has been submitted;
    // WebGPU keeps a destroyed buffer alive for work already submitted.
    if (this.#openSteps > 0) return;
    for (const b of this.#retired.splice(0)) b.destroy();
  }

  /** Read a view back as f32 (waits for all submitted work). */
  async read(view: TensorView, options: { signal?: AbortSignal } = {}): Promise<Float32Array> {
    return new Float32Array(await this.readBytes(view, options));
  }

  /** Read a view back as u32. */
  async readU32(view: TensorView, options: { signal?: AbortSignal } = {}): Promise<Uint32Array> {
    return new Uint32Array(await this.readBytes(view, options));
  }

  /** Read a view back as raw bytes through a pooled staging buffer (shaders/readback.ts). */
  readBytes(view: TensorView, options: { signal?: AbortSignal } = {}): Promise<ArrayBuffer> {
    return this.withBytes(view, (bytes) => bytes.slice().buffer, options);
  }

  /**
   * Reads a view back (after all submitted work) and hands its bytes to `consume`, which must
   * use them synchronously, during the call: they live in the mapped staging buffer, so one that
   * only digests them (a hash) saves the copy {@link readBytes} makes to keep them
   * (docs/benchmarks.md, "Behind the code").
   */
  async withBytes<T>(
    view: TensorView,
    consume: (bytes: Uint8Array) => T,
    options: { signal?: AbortSignal } = {},
  ): Promise<T> {
    options.signal?.throwIfAborted();
    const { buffer, offset, size } = resolveView(view);
    const copySize = Math.ceil(size / 4) * 4;
    // Pooled staging buffers, read as soon as the GPU is done (shaders/readback.ts).
    return await this.#readback.read(
      size,
      (encoder, staging) => {
        if (copySize > 0) encoder.copyBufferToBuffer(buffer, offset, staging, 0, copySize);
      },
      consume,
      { signal: options.signal, label: `of "${buffer.label}"` },
    );
  }

  /**
   * Resolves once all work submitted so far is done: a fence read (a 4-byte clear of a pooled
   * staging buffer, read back), which ends as soon as the GPU does, where
   * `queue.onSubmittedWorkDone` resolves on Deno's 10 ms polling tick (shaders/readback.ts).
   */
  async untilIdle(options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.#readback.read(
      4,
      (encoder, staging) => encoder.clearBuffer(staging, 0, 4),
      () => {},
      {
        signal: options.signal,
        label: "fence",
      },
    );
  }

  /** Throw the first error recorded by an error scope, the uncaptured handler, or device loss. */
  async checkErrors(): Promise<void> {
    const results = await Promise.all(this.#pending.splice(0));
    const first = results.find((e) => e !== undefined);
    if (first) throw first;
    if (this.#uncaptured) throw this.#uncaptured;
    if (this.#lost && !this.#disposed) throw this.#lost;
  }

  /** Destroy every buffer this runtime made and the device. */
  [Symbol.dispose](): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const b of this.#owned) b.destroy();
    for (const b of [...this.#uniforms.values(), ...this.#retired]) b.destroy();
    this.#retired.length = 0;
    this.#owned.clear();
    this.#uniforms.clear();
    this.#bindGroups.clear();
    this.#pipelines.clear();
    this.#readback[Symbol.dispose]();
    this.device.destroy();
  }

  #scoped<T>(stage: string, create: () => T): T {
    this.device.pushErrorScope("internal");
    this.device.pushErrorScope("out-of-memory");
    this.device.pushErrorScope("validation");
    const value = create();
    const scopes = [
      this.device.popErrorScope(),
      this.device.popErrorScope(),
      this.device.popErrorScope(),
    ];
    const kinds = ["validation", "out-of-memory", "internal"] as const;
    this.#pending.push(
      Promise.all(scopes).then((errors) => {
        const i = errors.findIndex((e) => e !== null);
        return i < 0 ? undefined : new GpuStageError(stage, kinds[i], errors[i]!.message);
      }),
    );
    return value;
  }
}
