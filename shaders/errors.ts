/**
 * Named errors of the WebGPU runtime. Callers catch these by class: a trainer treats a lost
 * device differently from a kernel that failed validation.
 *
 * @module
 */

/** No WebGPU adapter or device could be obtained. The message says which backend was tried. */
export class GpuUnavailableError extends Error {
  /** Value of `DENO_WEBGPU_BACKEND` when the request was made (`undefined` when unset). */
  readonly backend: string | undefined;
  constructor(message: string, backend: string | undefined, options?: ErrorOptions) {
    super(message, options);
    this.name = "GpuUnavailableError";
    this.backend = backend;
  }
}

/**
 * A WebGPU validation, out-of-memory or internal error caught by an error scope. `stage` names
 * what was being done (`pipeline matmul/nn/register/8x16`, `buffer "grads"`), so a failing
 * kernel is identified without a debugger.
 */
export class GpuStageError extends Error {
  /** What the runtime was doing when the error was raised. */
  readonly stage: string;
  /** The scope that caught it. */
  readonly kind: "validation" | "out-of-memory" | "internal";
  constructor(stage: string, kind: GpuStageError["kind"], detail: string) {
    super(`WebGPU ${kind} error during ${stage}: ${detail}`);
    this.name = "GpuStageError";
    this.stage = stage;
    this.kind = kind;
  }
}

/** The device was lost (driver reset, out of memory, or destroyed while work was pending). */
export class GpuDeviceLostError extends Error {
  /** `"destroyed"` when the runtime was disposed, `"unknown"` otherwise. */
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(`WebGPU device lost (${reason}): ${message}`);
    this.name = "GpuDeviceLostError";
    this.reason = reason;
  }
}
