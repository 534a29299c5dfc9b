/**
 * Whether downloaded bytes are the result a trainer announced: they must hash (with the
 * round's step and the batch) to the announced commitment, decode as a DisTrO payload for
 * this model, and name the same step and batch inside. Anything else is refused with a
 * reason, and the trainer gets no credit in this client's witness report.
 *
 * Pure.
 *
 * @module
 */
import { toHex } from "../coordinator/hash.ts";
import { commitmentHash } from "../optimizer/commitment.ts";
import type { DistroResult } from "../optimizer/result.ts";
import { decodePayload, type PayloadExpectation } from "../optimizer/wire.ts";
import type { AnnouncedResult } from "./round_tracker.ts";
import { sameKey } from "./round_view.ts";

/** Why a payload was refused. */
export type PayloadRefusal = "CommitmentMismatch" | "Undecodable" | "WrongContent";

/** The verdict on a payload. */
export type PayloadCheck =
  | { readonly ok: true; readonly result: DistroResult }
  | { readonly ok: false; readonly reason: PayloadRefusal; readonly detail: string };

/** Checks `bytes` against the announcement `announced` of round step `step`. */
export function checkResultPayload(
  bytes: Uint8Array,
  announced: AnnouncedResult,
  step: number,
  expectation: PayloadExpectation,
): PayloadCheck {
  const { batch } = announced;
  const where = `payload of batch [${batch.start}, ${batch.end}] at step ${step}`;
  const hash = commitmentHash({ step, batch, payload: bytes });
  if (!sameKey(hash, announced.commitment)) {
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
    result = decodePayload(bytes, expectation);
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
