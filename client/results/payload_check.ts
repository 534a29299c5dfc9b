/**
 * Whether an announced result is worth fetching, and whether downloaded bytes are the result a
 * trainer announced.
 *
 * Before a byte is fetched ({@link checkAnnouncedResult}): a DisTrO result of this model has
 * exactly `payloadBytes(layouts, quantize1bit)` bytes (the wire format has no variable part,
 * in 1-bit or bf16 mode), so any other announced size is refused; and the announcer must still
 * have that much of its byte budget for the round.
 *
 * After ({@link checkResultPayload}): the bytes must hash (with the round's step and the batch)
 * to the announced commitment, decode as a DisTrO payload for this model, and name the same
 * step and batch inside. Anything else is refused with a reason, and the trainer gets no
 * credit in this client's witness report.
 *
 * Pure.
 *
 * @module
 */
import type { AnnouncedResult } from "./round_tracker.ts";
import { equalBytes, toHex } from "../../common/mod.ts";
import {
  commitmentHash,
  decodePayload,
  type DistroResult,
  payloadBytes,
  type PayloadExpectation,
} from "../../optimizer/mod.ts";

/** Why a payload was refused. */
export type PayloadRefusal = "CommitmentMismatch" | "Undecodable" | "WrongContent";

/** The verdict on a payload. */
export type PayloadCheck =
  | { readonly ok: true; readonly result: DistroResult }
  | { readonly ok: false; readonly reason: PayloadRefusal; readonly detail: string };

/** Why an announced result was refused before anything was fetched. */
export type AnnouncementRefusal = "WrongPayloadSize" | "OverBudget";

/** The verdict on an announced result, before fetching it. */
export type AnnouncementCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: AnnouncementRefusal; readonly detail: string };

/**
 * Checks the size `announced` claims against the size every result of this model has, and
 * against what the announcer may still make this client download this round (`budgetLeft`).
 *
 * @example
 * ```ts
 * import { checkAnnouncedResult } from "./payload_check.ts";
 * const announced = { batch: { start: 0, end: 3 }, payloadSize: 32 << 20 };
 * const check = checkAnnouncedResult(announced, { expectedBytes: 58_476, budgetLeft: 1e9 });
 * console.assert(!check.ok && check.reason === "WrongPayloadSize");
 * ```
 */
export function checkAnnouncedResult(
  announced: Pick<AnnouncedResult, "batch" | "payloadSize">,
  limits: { readonly expectedBytes: number; readonly budgetLeft: number },
): AnnouncementCheck {
  const { batch, payloadSize } = announced;
  const what = `result of batch [${batch.start}, ${batch.end}]`;
  if (payloadSize !== limits.expectedBytes) {
    return {
      ok: false,
      reason: "WrongPayloadSize",
      detail: `${what} announced ${payloadSize} bytes, a result of this model is ` +
        `${limits.expectedBytes} bytes`,
    };
  }
  if (payloadSize > limits.budgetLeft) {
    return {
      ok: false,
      reason: "OverBudget",
      detail: `${what} needs ${payloadSize} bytes, the announcer has ` +
        `${Math.max(0, limits.budgetLeft)} bytes of its budget left this round`,
    };
  }
  return { ok: true };
}

/** The exact size of every result payload of the model `expectation` describes. */
export function expectedResultBytes(expectation: PayloadExpectation): number {
  return payloadBytes(
    expectation.layouts,
    expectation.quantize1bit,
    expectation.stateDigests ?? false,
  );
}

/**
 * How a payload is decoded: optimizer/wire.ts `decodePayload`, or a trainer's codec, which
 * decodes a large payload on a worker thread (client/trainer.ts `decode`). Throws what
 * `decodePayload` throws.
 */
export type PayloadDecoder = (
  bytes: Uint8Array,
  expectation: PayloadExpectation,
) => DistroResult | Promise<DistroResult>;

/** Checks `bytes` against the announcement `announced` of round step `step`. */
export async function checkResultPayload(
  bytes: Uint8Array,
  announced: AnnouncedResult,
  step: number,
  expectation: PayloadExpectation,
  decode: PayloadDecoder = decodePayload,
): Promise<PayloadCheck> {
  const { batch } = announced;
  const where = `payload of batch [${batch.start}, ${batch.end}] at step ${step}`;
  const hash = commitmentHash({ step, batch, payload: bytes });
  if (!equalBytes(hash, announced.commitment)) {
    return {
      ok: false,
      reason: "CommitmentMismatch",
      detail: `${where} does not hash to its commitment ${
        toHex(announced.commitment).slice(0, 16)
      }…`,
    };
  }
  let result: DistroResult;
  try {
    result = await decode(bytes, expectation);
  } catch (e) {
    return { ok: false, reason: "Undecodable", detail: `${where}: ${(e as Error).message}` };
  }
  if (
    result.step !== step || result.batch.start !== batch.start || result.batch.end !== batch.end
  ) {
    return {
      ok: false,
      reason: "WrongContent",
      detail: `${where} holds step ${result.step} batch [${result.batch.start}, ` +
        `${result.batch.end}]`,
    };
  }
  return { ok: true, result };
}
