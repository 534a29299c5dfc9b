import assert from "node:assert/strict";
import fc from "fast-check";
import {
  decodeCoordinatorState,
  encodeCoordinatorState,
  encodeModelPart,
  StateDecodeError,
} from "./mod.ts";
import { arbCoordinatorState } from "./testing/arbitraries.ts";
import { testState } from "../../tests/support/coordinator_fixtures.ts";
import type { CoordinatorState } from "../core/mod.ts";
import { MAX_TIME_MS, MAX_TIME_SECONDS } from "../../common/mod.ts";

/** A TCP-coordinator state: sub-second durations, a millisecond timestamp. */
function fractionalState(): CoordinatorState {
  const s = testState({
    roundWitnessTime: 0.1,
    maxRoundTrainTime: 2.5,
    warmupTime: 0.25,
    cooldownTime: 1.001,
    waitingForMembersExtraTime: 0.05,
    epochTime: 30.5,
  }, 1763718509.123);
  s.epochState.startTimestamp = 1763718500.999;
  return s;
}

/** The u64 at `at` bytes from the end (the timestamp sits 9 from the end). */
function u64FromEnd(bytes: Uint8Array, at: number): bigint {
  return new DataView(bytes.buffer, bytes.byteOffset + bytes.length - at, 8).getBigUint64(0, true);
}

Deno.test("versions 2 to 5 carry milliseconds: fractional times round trip exactly", () => {
  const s = fractionalState();
  const v2 = encodeCoordinatorState(s, { version: 2 });
  assert.equal(v2[4], 2);
  assert.equal(u64FromEnd(v2, 9), 1_763_718_509_123n);
  assert.deepEqual(decodeCoordinatorState(v2), s);
  // Version 3 ends with two empty digest lists after the same fields.
  const v3 = encodeCoordinatorState(s, { version: 3 });
  assert.equal(v3[4], 3);
  assert.equal(u64FromEnd(v3, 11), 1_763_718_509_123n);
  assert.deepEqual(decodeCoordinatorState(v3), s);
  // Version 4 is version 3 with one more byte, the model's snapshot dtype.
  const v4 = encodeCoordinatorState(s, { version: 4 });
  assert.equal(v4[4], 4);
  assert.equal(v4.length, v3.length + 1);
  assert.deepEqual(decodeCoordinatorState(v4), s);
  // Version 5 (the default) adds the bar epochs (2), four empty rejected lists (4 x 2) and
  // two empty verification lists (2).
  const v5 = encodeCoordinatorState(s);
  assert.equal(v5[4], 5);
  assert.equal(v5.length, v4.length + 12);
  assert.deepEqual(decodeCoordinatorState(v5), s);
});

Deno.test("version 4 carries the snapshot dtype; older versions read f32 and refuse bf16", () => {
  const s = testState();
  s.model.snapshotDtype = "bf16";
  const v4 = encodeCoordinatorState(s);
  assert.deepEqual(decodeCoordinatorState(v4), s);
  for (const version of [1, 2, 3] as const) {
    assert.throws(
      () => encodeCoordinatorState(s, { version }),
      (e: Error) =>
        e instanceof RangeError &&
        e.message === `model.snapshotDtype "bf16" cannot be written in state encoding version ` +
            `${version} (only "f32"; another needs version 4)`,
    );
    s.model.snapshotDtype = "f32";
    assert.equal(
      decodeCoordinatorState(encodeCoordinatorState(s, { version })).model
        .snapshotDtype,
      "f32",
    );
    s.model.snapshotDtype = "bf16";
  }
  // The byte ends the model: header, run id, run state, then the model's version 3 bytes.
  s.model.snapshotDtype = "f32";
  const runIdBytes = new TextEncoder().encode(s.runId).length;
  const at = 8 + 1 + runIdBytes + 1 + encodeModelPart(s.model, { version: 3 }).length;
  assert.equal(v4[at], 1);
  for (const [code, accepted] of [[0, true], [1, true], [2, false], [255, false]] as const) {
    const bytes = v4.slice();
    bytes[at] = code;
    if (accepted) {
      assert.equal(
        decodeCoordinatorState(bytes).model.snapshotDtype,
        code === 0 ? "f32" : "bf16",
      );
    } else {
      assert.throws(
        () => decodeCoordinatorState(bytes),
        (e: unknown) =>
          e instanceof StateDecodeError && e.field === "model.snapshotDtype" && e.offset === at &&
          /unknown code \d+ \(expected 0\.\.1: f32, bf16\)/.test(e.message),
      );
    }
  }
});

Deno.test("property: version 1 round trips whole-second states; version 2 agrees on them", () => {
  fc.assert(
    fc.property(arbCoordinatorState({ version: 1 }), (s) => {
      const v1 = encodeCoordinatorState(s, { version: 1 });
      assert.equal(v1[4], 1);
      assert.deepEqual(decodeCoordinatorState(v1), s);
      const times = [
        s.runStateStartUnixTimestamp,
        s.epochState.startTimestamp,
        s.config.warmupTime,
        s.config.cooldownTime,
        s.config.maxRoundTrainTime,
        s.config.roundWitnessTime,
        s.config.epochTime,
      ];
      if (times.every((t) => t <= MAX_TIME_SECONDS)) {
        assert.deepEqual(decodeCoordinatorState(encodeCoordinatorState(s)), s);
      }
    }),
    { numRuns: 60 },
  );
});

Deno.test("version 1 (the Solana layout) refuses a fractional time, naming the field", () => {
  const s = fractionalState();
  assert.throws(
    () => encodeCoordinatorState(s, { version: 1 }),
    (e: Error) =>
      e instanceof RangeError &&
      e.message === "config.warmupTime must be whole seconds in state encoding version 1 " +
          "(the Solana program's layout), found 0.25",
  );
  const whole = testState({}, 10);
  whole.runStateStartUnixTimestamp = 10.5;
  assert.throws(
    () => encodeCoordinatorState(whole, { version: 1 }),
    /^RangeError: runStateStartUnixTimestamp must be whole seconds/,
  );
  assert.throws(
    () => encodeCoordinatorState(whole, { version: 6 as never }),
    /version must be one of 1, 2, 3, 4, 5, found 6/,
  );
});

Deno.test("version 2 refuses sub-millisecond and out-of-range times, naming the field", () => {
  const fine = testState();
  fine.config.roundWitnessTime = 0.0005;
  assert.throws(
    () => encodeCoordinatorState(fine),
    /^RangeError: config\.roundWitnessTime must be seconds in \[0, 1125899906842\.623\] with at most millisecond precision, found 0\.0005$/,
  );
  const huge = testState();
  huge.epochState.startTimestamp = Number.MAX_SAFE_INTEGER;
  assert.throws(() => encodeCoordinatorState(huge), /epochState\.startTimestamp must be seconds/);
});

Deno.test("decoding version 2 rejects a time above 2^50 - 1 ms, naming field and offset", () => {
  const bytes = encodeCoordinatorState(testState(), { version: 2 });
  const at = bytes.length - 9;
  new DataView(bytes.buffer, bytes.byteOffset).setBigUint64(at, BigInt(MAX_TIME_MS) + 1n, true);
  assert.throws(
    () => decodeCoordinatorState(bytes),
    (e: unknown) =>
      e instanceof StateDecodeError && e.field === "runStateStartUnixTimestamp" &&
      e.offset === at && /exceeds the largest time/.test(e.message),
  );
});
