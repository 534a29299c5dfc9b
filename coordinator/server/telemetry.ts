/**
 * A client's telemetry notice: after each step it completes, a client tells the TCP
 * coordinator its traffic totals, its tokens/s and where that step's time went, for the
 * dashboard and `/metrics` (docs/protocol.md, "Telemetry"). Informational only: the host
 * keeps the latest notice per member and never lets one touch the run's state.
 *
 * The notice has a fixed size; every number is checked while decoding (finite, non-negative,
 * under its cap), so a bad notice is a bad frame like any other.
 *
 * @module
 */
import { type MessageReader, type MessageWriter, ProtocolError } from "../../net/mod.ts";
import { readF64, writeF64 } from "./protocol_fields.ts";

/** The parts of a step a client times, in wire order. */
export const STEP_PHASES = ["train", "encode", "exchange", "apply", "wait"] as const;
/** One of {@linkcode STEP_PHASES}. */
export type StepPhase = typeof STEP_PHASES[number];

/** Longest phase a notice may report, in ms (a day: anything longer is a broken clock). */
export const MAX_PHASE_MS = 86_400_000;
/** Highest tokens/s a notice may report (far above any machine: a bound, not a target). */
export const MAX_TOKENS_PER_SEC = 1e12;

/** What a client reports after a step. */
export interface ClientTelemetry {
  /** The step the breakdown is of. */
  readonly step: number;
  /** Bytes sent to and received from peers since the client started (totals). */
  readonly bytesSent: number;
  readonly bytesReceived: number;
  /** Tokens/s of the step's training. */
  readonly tokensPerSec: number;
  /** Milliseconds of each part of the step (see docs/protocol.md for what each covers). */
  readonly breakdownMs: Readonly<Record<StepPhase, number>>;
}

/** Bytes of an encoded notice: step (u32), two u64 totals, tokens/s and the phases (f64). */
export const TELEMETRY_BYTES = 4 + 8 + 8 + 8 + 8 * STEP_PHASES.length;

/** What is wrong with `value` as a bounded non-negative finite number, or null. */
function rateProblem(value: number, max: number): string | null {
  if (!Number.isFinite(value)) return `must be finite, found ${value}`;
  if (value < 0) return `must be >= 0, found ${value}`;
  if (value > max) return `must be <= ${max}, found ${value}`;
  return null;
}

/**
 * Appends a notice; RangeError naming the field when a number is out of range (the decoder
 * would refuse it).
 */
export function writeTelemetry(w: MessageWriter, t: ClientTelemetry): void {
  if (!Number.isInteger(t.step) || t.step < 0 || t.step > 0xffff_ffff) {
    throw new RangeError(`telemetry.step must be a u32, found ${t.step}`);
  }
  const tps = rateProblem(t.tokensPerSec, MAX_TOKENS_PER_SEC);
  if (tps !== null) throw new RangeError(`telemetry.tokensPerSec ${tps}`);
  for (const phase of STEP_PHASES) {
    const problem = rateProblem(t.breakdownMs[phase], MAX_PHASE_MS);
    if (problem !== null) throw new RangeError(`telemetry.breakdownMs.${phase} ${problem}`);
  }
  w.u32(t.step).u64(t.bytesSent).u64(t.bytesReceived);
  writeF64(w, t.tokensPerSec);
  for (const phase of STEP_PHASES) writeF64(w, t.breakdownMs[phase]);
}

function readBounded(r: MessageReader, field: string, max: number): number {
  const value = readF64(r, field);
  const problem = rateProblem(value, max);
  if (problem !== null) throw new ProtocolError(`field "${field}" ${problem}`);
  return value;
}

/**
 * Reads a notice written by {@linkcode writeTelemetry}. Throws {@linkcode ProtocolError} naming
 * the field on a NaN, infinite, negative or over-cap number (the byte totals are u64s that must
 * fit in a safe integer).
 */
export function readTelemetry(r: MessageReader): ClientTelemetry {
  const step = r.u32("telemetry.step");
  const bytesSent = r.u64("telemetry.bytesSent");
  const bytesReceived = r.u64("telemetry.bytesReceived");
  const tokensPerSec = readBounded(r, "telemetry.tokensPerSec", MAX_TOKENS_PER_SEC);
  const breakdownMs = {} as Record<StepPhase, number>;
  for (const phase of STEP_PHASES) {
    breakdownMs[phase] = readBounded(r, `telemetry.breakdownMs.${phase}`, MAX_PHASE_MS);
  }
  return { step, bytesSent, bytesReceived, tokensPerSec, breakdownMs };
}
