/**
 * AdamW (Loshchilov & Hutter, as in `torch.optim.AdamW`) with global gradient-norm clipping
 * (as in `torch.nn.utils.clip_grad_norm_`), on the GPU over the flat parameter buffer, plus a
 * plain TypeScript reference with the same arithmetic.
 *
 * For each element, at 1-based step t with learning rate lr:
 * ```
 * s = maxNorm > 0 ? min(1, maxNorm / (sqrt(Σ g²) + 1e-6)) : 1     (one scale for all grads)
 * g = s · g
 * m = β1 m + (1 − β1) g
 * v = β2 v + (1 − β2) g²
 * θ = θ (1 − lr · wd)                                           (decoupled weight decay)
 * θ = θ − (lr / (1 − β1^t)) · m / (sqrt(v) / sqrt(1 − β2^t) + eps)
 * ```
 * Weight decay applies to every parameter, as `AdamW(model.parameters())` does.
 *
 * @module
 */
import {
  type AdamWState,
  type Optimizer,
  type OptimizerState,
  type OptimizerStateBuffers,
  type OptimizerStateScalars,
  type OptimizerStepArgs,
  segmentBuffers,
} from "./optimizer.ts";
import { adamwKernel } from "./adamw_wgsl.ts";
import {
  bindTensors,
  ceilDiv,
  dispatch,
  type GpuRuntime,
  type GpuStep,
  grid1d,
} from "../shaders/mod.ts";
import { bindingRanges, type ParamSegment } from "../model/mod.ts";

/** AdamW's hyperparameters (Psyche's defaults in brackets: 0.9, 0.95, 1e-8, 0.1, 1.0). */
export interface AdamWConfig {
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Clip the global gradient L2 norm to this; 0 disables clipping. */
  maxGradNorm: number;
}

/** Psyche's `examples/train.rs` defaults. */
export const ADAMW_DEFAULTS: AdamWConfig = {
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weightDecay: 0.1,
  maxGradNorm: 1.0,
};

/** Throws a RangeError naming the first out-of-range hyperparameter. */
export function validateAdamWConfig(c: AdamWConfig): void {
  const check = (name: string, ok: boolean, v: number) => {
    if (!ok) throw new RangeError(`AdamW ${name} out of range: ${v}`);
  };
  check("beta1", c.beta1 >= 0 && c.beta1 < 1, c.beta1);
  check("beta2", c.beta2 >= 0 && c.beta2 < 1, c.beta2);
  check("eps", c.eps > 0 && Number.isFinite(c.eps), c.eps);
  check("weightDecay", c.weightDecay >= 0 && Number.isFinite(c.weightDecay), c.weightDecay);
  check("maxGradNorm", c.maxGradNorm >= 0 && Number.isFinite(c.maxGradNorm), c.maxGradNorm);
}

/** The gradient scale clipping applies for a global norm `norm` (1 when clipping is off). */
export function clipScale(norm: number, maxGradNorm: number): number {
  return maxGradNorm > 0 ? Math.min(1, maxGradNorm / (norm + 1e-6)) : 1;
}

/**
 * Reference AdamW step on host arrays (in place on params, m, v), computed in f64 per element
 * and stored back as the arrays' type.
 */
export function adamwReferenceStep(
  state: { params: Float32Array; m: Float32Array; v: Float32Array },
  grads: Float32Array,
  options: AdamWConfig & { lr: number; stepNumber: number },
): void {
  const { params, m, v } = state;
  const { lr, beta1, beta2, eps, weightDecay } = options;
  let sumsq = 0;
  for (const g of grads) sumsq += g * g;
  const s = clipScale(Math.sqrt(sumsq), options.maxGradNorm);
  const bias1 = 1 - beta1 ** options.stepNumber;
  const bias2 = 1 - beta2 ** options.stepNumber;
  for (let i = 0; i < params.length; i++) {
    const g = grads[i] * s;
    m[i] = beta1 * m[i] + (1 - beta1) * g;
    v[i] = beta2 * v[i] + (1 - beta2) * g * g;
    const p = params[i] * (1 - lr * weightDecay);
    params[i] = p - (lr / bias1) * m[i] / (Math.sqrt(v[i]) / Math.sqrt(bias2) + eps);
  }
}

/**
 * AdamW on the GPU for a flat buffer of `size` floats (a multiple of 4), or for the same floats
 * split into `segments` (model/params.ts `paramSegments`: one buffer each for θ, g, m and v;
 * one dispatch per segment). Owns its moment buffers (zeros at construction) and a small buffer
 * of per-step constants.
 */
export class AdamW implements Optimizer {
  readonly name = "adamw";
  /** Hyperparameters in use. */
  readonly config: AdamWConfig;
  /** `[P]` first moments, one buffer per segment. */
  readonly m: readonly GPUBuffer[];
  /** `[P]` second moments, one buffer per segment. */
  readonly v: readonly GPUBuffer[];
  readonly #rt: GpuRuntime;
  readonly #size: number;
  readonly #segments: readonly { start: number; size: number }[];
  readonly #hyper: GPUBuffer;
  /** Bound when clipping is off, so the kernel always has a buffer at that binding. */
  readonly #unusedSumSq: GPUBuffer;
  readonly #pipeline: GPUComputePipeline;

  readonly #maxBindingBytes: number;
  /** The step number of the last encoded step (0 before the first). */
  #step = 0;

  /**
   * `maxBindingBytes` (default: the device's maxStorageBufferBindingSize) caps each dispatch's
   * bindings; larger buffers are updated in several ranges.
   */
  constructor(
    rt: GpuRuntime,
    options: {
      size: number;
      config: AdamWConfig;
      label?: string;
      maxBindingBytes?: number;
      segments?: readonly ParamSegment[];
    },
  ) {
    const { size, config } = options;
    validateAdamWConfig(config);
    if (!Number.isInteger(size) || size <= 0 || size % 4 !== 0) {
      throw new RangeError(`AdamW: size must be a positive multiple of 4, got ${size}`);
    }
    const segments = options.segments ?? [{ start: 0, size }];
    let covered = 0;
    for (const seg of segments) {
      if (seg.start !== covered || seg.size <= 0 || seg.size % 4 !== 0) {
        throw new RangeError(
          `AdamW: segment [${seg.start}, ${
            seg.start + seg.size
          }) does not continue at ${covered} ` +
            "with a positive multiple of 4 floats",
        );
      }
      covered += seg.size;
    }
    if (covered !== size) {
      throw new RangeError(`AdamW: segments cover ${covered} floats, size is ${size}`);
    }
    this.#segments = segments.map(({ start, size }) => ({ start, size }));
    const label = options.label ?? "adamw";
    this.#rt = rt;
    this.#size = size;
    this.#maxBindingBytes = options.maxBindingBytes ?? rt.limits.maxStorageBufferBindingSize;
    this.config = { ...config };
    const name = (role: string, i: number) =>
      segments.length === 1 ? `${label} ${role}` : `${label} ${role} segment ${i}`;
    this.m = segments.map((seg, i) => rt.buffer(name("m", i), seg.size * 4));
    this.v = segments.map((seg, i) => rt.buffer(name("v", i), seg.size * 4));
    this.#hyper = rt.buffer(`${label} hyperparameters`, 32);
    this.#unusedSumSq = rt.buffer(`${label} unused grad sumsq`, 16);
    const wg = rt.profile.workgroupSize;
    this.#pipeline = rt.pipeline(`adamw/wg${wg}`, () => adamwKernel(wg));
  }

  /** Records one AdamW update; see {@link Optimizer.encodeStep}. */
  encodeStep(step: GpuStep, args: OptimizerStepArgs): void {
    const { lr, stepNumber } = args;
    if (!(lr >= 0 && Number.isFinite(lr))) throw new RangeError(`AdamW: bad learning rate ${lr}`);
    if (!Number.isInteger(stepNumber) || stepNumber < 1) {
      throw new RangeError(`AdamW: stepNumber must be an integer >= 1, got ${stepNumber}`);
    }
    const params = segmentBuffers(args.params), grads = segmentBuffers(args.grads);
    for (const [name, bufs] of [["params", params], ["grads", grads]] as const) {
      if (bufs.length !== this.#segments.length) {
        throw new RangeError(
          `AdamW: ${name} come in ${bufs.length} buffers, the state in ${this.#segments.length}`,
        );
      }
      bufs.forEach((b, i) => {
        if (b.size < this.#segments[i].size * 4) {
          throw new RangeError(
            `AdamW: ${name}${bufs.length > 1 ? ` buffer ${i}` : ""} holds ${
              b.size / 4
            } floats, needs ${this.#segments[i].size}`,
          );
        }
      });
    }
    const c = this.config;
    if (c.maxGradNorm > 0 && args.gradSumSq === null) {
      throw new RangeError("AdamW: maxGradNorm > 0 needs gradSumSq (the squared gradient norm)");
    }
    this.#rt.write(
      this.#hyper,
      new Float32Array([
        lr,
        c.beta1,
        c.beta2,
        c.eps,
        c.weightDecay,
        1 - c.beta1 ** stepNumber,
        1 - c.beta2 ** stepNumber,
        c.maxGradNorm,
      ]),
    );
    this.#step = stepNumber;
    // Storage bindings are capped (128 MiB on lavapipe): update each segment in ranges that fit.
    this.#segments.forEach((seg, s) => {
      for (const [start, count] of bindingRanges(seg.size, this.#maxBindingBytes)) {
        const range = (buffer: GPUBuffer) => ({ buffer, offset: start * 4, size: count * 4 });
        const n4 = count / 4;
        const group = bindTensors(this.#rt, this.#pipeline, [n4, 0, 0, 0], [
          this.#hyper,
          args.gradSumSq ?? this.#unusedSumSq,
          range(params[s]),
          range(grads[s]),
          range(this.m[s]),
          range(this.v[s]),
        ]);
        dispatch(
          step.pass,
          this.#pipeline,
          group,
          grid1d(ceilDiv(n4, this.#rt.profile.workgroupSize)),
        );
      }
    });
  }

  /** The moments and the last step number; see {@link Optimizer.readState}. */
  async readState(options: { signal?: AbortSignal } = {}): Promise<AdamWState> {
    const [m, v] = await Promise.all([
      this.#readFlat(this.m, options),
      this.#readFlat(this.v, options),
    ]);
    return { kind: "adamw", step: this.#step, m, v };
  }

  /** The moment buffers and the last step number; see {@link Optimizer.stateBuffers}. */
  stateBuffers(): OptimizerStateBuffers {
    const segments = this.#segments;
    return {
      kind: "adamw",
      step: this.#step,
      m: { segments, buffers: this.m },
      v: { segments, buffers: this.v },
    };
  }

  /** Replaces the moments and the step count; see {@link Optimizer.loadState}. */
  loadState(state: OptimizerState): void {
    if (state.kind !== "adamw") {
      throw new RangeError(`AdamW: cannot load the state of a ${state.kind} optimizer`);
    }
    for (const [name, a] of [["m", state.m], ["v", state.v]] as const) {
      if (a.length !== this.#size) {
        throw new RangeError(
          `AdamW: state ${name} holds ${a.length} floats, expected ${this.#size}`,
        );
      }
    }
    if (!Number.isSafeInteger(state.step) || state.step < 0) {
      throw new RangeError(`AdamW: state step must be an integer >= 0, found ${state.step}`);
    }
    this.#segments.forEach((seg, s) => {
      this.#rt.write(this.m[s], state.m.subarray(seg.start, seg.start + seg.size));
      this.#rt.write(this.v[s], state.v.subarray(seg.start, seg.start + seg.size));
    });
    this.#step = state.step;
  }

  /** Sets the step count; the moments are written into the buffers returned. */
  prepareLoad(state: OptimizerStateScalars): OptimizerStateBuffers {
    if (state.kind !== "adamw") {
      throw new RangeError(`AdamW: cannot load the state of a ${state.kind} optimizer`);
    }
    if (!Number.isSafeInteger(state.step) || state.step < 0) {
      throw new RangeError(`AdamW: state step must be an integer >= 0, found ${state.step}`);
    }
    this.#step = state.step;
    return this.stateBuffers();
  }

  /** One flat `[P]` array of a state split into segment buffers. */
  async #readFlat(
    buffers: readonly GPUBuffer[],
    options: { signal?: AbortSignal },
  ): Promise<Float32Array> {
    if (buffers.length === 1) {
      return await this.#rt.read({ buffer: buffers[0], size: this.#size * 4 }, options);
    }
    const parts = await Promise.all(
      buffers.map((buffer, s) =>
        this.#rt.read({ buffer, size: this.#segments[s].size * 4 }, options)
      ),
    );
    const flat = new Float32Array(this.#size);
    parts.forEach((p, s) => flat.set(p, this.#segments[s].start));
    return flat;
  }

  /** Frees the moment buffers. */
  [Symbol.dispose](): void {
    for (const b of [...this.m, ...this.v, this.#hyper, this.#unusedSumSq]) {
      this.#rt.destroyBuffer(b);
    }
  }
}
