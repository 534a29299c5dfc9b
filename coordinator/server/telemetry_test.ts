import assert from "node:assert/strict";
import { MessageReader, MessageWriter, ProtocolError } from "../../net/mod.ts";
import { clientFrameLimits, decodeClientMessage, encodeClientMessage } from "./protocol.ts";
import {
  type ClientTelemetry,
  MAX_PHASE_MS,
  readTelemetry,
  STEP_PHASES,
  TELEMETRY_BYTES,
  writeTelemetry,
} from "./telemetry.ts";

const GOOD: ClientTelemetry = {
  step: 7,
  bytesSent: 123_456_789,
  bytesReceived: 2 ** 40,
  tokensPerSec: 1234.5,
  breakdownMs: { train: 812.25, encode: 31, exchange: 402.5, apply: 55, wait: 0 },
};

/** A Telemetry frame with `GOOD`'s fields, `patch` written over the f64 at `offset` of the notice. */
function frameWith(offset: number, value: number): Uint8Array {
  const bytes = encodeClientMessage({ kind: "Telemetry", requestId: 3, telemetry: GOOD });
  new DataView(bytes.buffer).setFloat64(1 + 4 + offset, value, false);
  return bytes;
}

/** Offsets in the notice: step u32, two u64 totals, tokens/s, then the phases. */
const TOKENS_AT = 4 + 8 + 8;
const PHASE_AT = (i: number) => TOKENS_AT + 8 + 8 * i;

Deno.test("a telemetry notice round-trips through the client message codec at its fixed size", () => {
  const bytes = encodeClientMessage({ kind: "Telemetry", requestId: 3, telemetry: GOOD });
  assert.equal(bytes.length, 1 + 4 + TELEMETRY_BYTES);
  assert.deepEqual(decodeClientMessage(bytes), {
    kind: "Telemetry",
    requestId: 3,
    telemetry: GOOD,
  });
  assert.equal(clientFrameLimits(4).Telemetry, bytes.length, "the frame limit is its size");
  const w = new MessageWriter();
  writeTelemetry(w, GOOD);
  const r = new MessageReader(w.finish(), "notice");
  assert.deepEqual(readTelemetry(r), GOOD);
  r.end();
});

Deno.test("a notice with a NaN, infinite, negative or over-cap number is a ProtocolError naming it", () => {
  const bad: [number, number, RegExp][] = [
    [TOKENS_AT, NaN, /telemetry\.tokensPerSec" must be finite, found NaN/],
    [TOKENS_AT, Infinity, /telemetry\.tokensPerSec" must be finite/],
    [TOKENS_AT, -1, /telemetry\.tokensPerSec" must be >= 0, found -1/],
    [TOKENS_AT, 1e13, /telemetry\.tokensPerSec" must be <= /],
  ];
  STEP_PHASES.forEach((phase, i) => {
    bad.push([PHASE_AT(i), NaN, new RegExp(`breakdownMs\\.${phase}" must be finite`)]);
    bad.push([PHASE_AT(i), -Infinity, new RegExp(`breakdownMs\\.${phase}" must be finite`)]);
    bad.push([PHASE_AT(i), -0.5, new RegExp(`breakdownMs\\.${phase}" must be >= 0`)]);
    bad.push([PHASE_AT(i), MAX_PHASE_MS + 1, new RegExp(`breakdownMs\\.${phase}" must be <=`)]);
  });
  for (const [offset, value, message] of bad) {
    assert.throws(
      () => decodeClientMessage(frameWith(offset, value)),
      (e) => e instanceof ProtocolError && message.test(e.message) && /^Telemetry/.test(e.message),
      `${value} at ${offset}`,
    );
  }
});

Deno.test("a notice whose byte total exceeds 2^53, or that is cut or extended, is a ProtocolError", () => {
  const bytes = encodeClientMessage({ kind: "Telemetry", requestId: 3, telemetry: GOOD });
  const huge = bytes.slice();
  new DataView(huge.buffer).setBigUint64(1 + 4 + 4, 1n << 60n, false);
  assert.throws(() => decodeClientMessage(huge), /bytesSent" = \d+ exceeds 2\^53/);
  for (const cut of [5, 9, bytes.length - 1]) {
    assert.throws(() => decodeClientMessage(bytes.subarray(0, cut)), ProtocolError);
  }
  const longer = new Uint8Array(bytes.length + 1);
  longer.set(bytes);
  assert.throws(() => decodeClientMessage(longer), /trailing bytes/);
});

Deno.test("the encoder refuses the values the decoder refuses, naming the field", () => {
  const withPhase = (value: number): ClientTelemetry => ({
    ...GOOD,
    breakdownMs: { ...GOOD.breakdownMs, exchange: value },
  });
  const encode = (t: ClientTelemetry) =>
    encodeClientMessage({ kind: "Telemetry", requestId: 0, telemetry: t });
  assert.throws(() => encode(withPhase(NaN)), /breakdownMs\.exchange must be finite/);
  assert.throws(() => encode(withPhase(-1)), /breakdownMs\.exchange must be >= 0/);
  assert.throws(() => encode({ ...GOOD, tokensPerSec: Infinity }), RangeError);
  assert.throws(() => encode({ ...GOOD, step: -1 }), /telemetry\.step must be a u32/);
  assert.throws(() => encode({ ...GOOD, bytesSent: 1.5 }), RangeError);
});
