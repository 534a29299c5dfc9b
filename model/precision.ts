/**
 * Which storage precision the model's matmul operands use, and what `auto` means.
 *
 * Mixed f16 precision (model/llama.ts) keeps master weights, gradients and optimizer state in
 * f32, so it changes the gradients a client computes (within f16 rounding) but never the weights
 * the DisTrO apply or AdamW produce from given gradients. Networked clients default to f32: a
 * result's gradients then match any f32 client's on the same adapter, which verification and
 * debugging rely on; f16 stays an opt-in there.
 *
 * bf16 is the same mixed precision with bfloat16 copies: f32's exponent range (no overflow of
 * large activations, no underflow of small ones) with 8 bits of mantissa instead of f16's 11, and
 * no device feature (the kernels unpack it from u32 words), so it runs on every adapter.
 *
 * @module
 */
import { type GpuRuntime, isCpuAdapter } from "../shaders/mod.ts";

/** Storage precision of the model's matmul operands. */
export type ModelPrecision = "f32" | "f16" | "bf16";

/** What a user may ask for: a precision, or `auto`. */
export type PrecisionChoice = ModelPrecision | "auto";

/** The choices a command line accepts. */
export const PRECISION_CHOICES: readonly PrecisionChoice[] = ["f32", "f16", "bf16", "auto"];

/**
 * The precision to run: `f32`, `f16` and `bf16` as asked (f16 on an adapter without `shader-f16`
 * is an error: a RangeError naming the adapter), `auto` = f16 on a GPU with `shader-f16`, f32 otherwise.
 * CPU adapters (lavapipe, SwiftShader) get f32 even with `shader-f16`: on lavapipe the ~20M model
 * trains no faster in f16 (docs/benchmarks.md, "GPU engine"): the matmuls are compute-bound on a
 * CPU, so halving weight reads saves little and the conversions cost a pass each, while f16 adds
 * rounding. The 14% of saved-activation memory it spares is not worth that where memory is the
 * host's.
 */
export function resolvePrecision(choice: PrecisionChoice, rt: GpuRuntime): ModelPrecision {
  switch (choice) {
    case "f32":
      return "f32";
    case "f16":
      if (!rt.hasF16) {
        throw new RangeError(
          `precision "f16" needs the "shader-f16" feature, which adapter ` +
            `"${rt.info.description}" does not provide (or was not requested)`,
        );
      }
      return "f16";
    case "bf16":
      return "bf16";
    case "auto":
      return rt.hasF16 && !isCpuAdapter(rt.info) ? "f16" : "f32";
    default:
      throw new RangeError(
        `precision must be f32, f16, bf16 or auto, got ${JSON.stringify(choice)}`,
      );
  }
}
