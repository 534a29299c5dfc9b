import assert from "node:assert/strict";
import { seededBytes } from "../../net/testing/seeded_bytes.ts";
import fc from "fast-check";
import {
  applyDelta,
  DELTA_BLOCK_BYTES,
  DeltaError,
  type DeltaOp,
  deltaWireBytes,
  diffBytes,
} from "./state_delta.ts";
import { encodeCoordinatorState } from "../encoding/mod.ts";
import { identities, RunDriver, testState } from "../../tests/support/coordinator_fixtures.ts";

Deno.test("a delta rebuilds the new bytes exactly, whatever was inserted, removed or changed", () => {
  const edit = fc.record({
    at: fc.nat(),
    remove: fc.nat({ max: 300 }),
    insert: fc.uint8Array({ maxLength: 300 }),
  });
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 4000 }),
      fc.integer({ min: 1, max: 1 << 20 }),
      fc.array(edit, { maxLength: 6 }),
      (size, seed, edits) => {
        const base = seededBytes(size, seed);
        let next = base;
        for (const e of edits) {
          const at = next.length === 0 ? 0 : e.at % (next.length + 1);
          const out = new Uint8Array(
            next.length - Math.min(e.remove, next.length - at) + e.insert.length,
          );
          out.set(next.subarray(0, at));
          out.set(e.insert, at);
          out.set(next.subarray(at + Math.min(e.remove, next.length - at)), at + e.insert.length);
          next = out;
        }
        const ops = diffBytes(base, next);
        assert.deepEqual(applyDelta(base, ops, next.length), next);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("identical bytes are one copy; a small change costs about its own size", () => {
  const base = seededBytes(100_000, 7);
  assert.deepEqual(diffBytes(base, base.slice()), [{
    kind: "copy",
    offset: 0,
    length: base.length,
  }]);
  const next = new Uint8Array(base.length + 40);
  next.set(base.subarray(0, 50_000));
  next.set(seededBytes(40, 9), 50_000); // 40 bytes inserted mid-way: everything after shifts
  next.set(base.subarray(50_000), 50_040);
  const ops = diffBytes(base, next);
  assert.deepEqual(applyDelta(base, ops, next.length), next);
  assert.ok(deltaWireBytes(ops) < 40 + 3 * 9 + 2 * DELTA_BLOCK_BYTES, JSON.stringify(ops.length));
  assert.deepEqual(diffBytes(new Uint8Array(0), next.subarray(0, 10)), [
    { kind: "insert", bytes: next.subarray(0, 10) },
  ]);
});

Deno.test("a delta that does not fit its base is refused before anything is built", () => {
  const base = seededBytes(64, 3);
  assert.throws(
    () => applyDelta(base, [{ kind: "copy", offset: 60, length: 8 }], 8),
    (e) => e instanceof DeltaError && /reaches past the 64-byte base/.test(e.message),
  );
  assert.throws(
    () => applyDelta(base, [{ kind: "copy", offset: 0, length: 8 }], 9),
    /the operations make 8 bytes, the delta announced 9/,
  );
  assert.throws(
    () => applyDelta(base, [{ kind: "insert", bytes: new Uint8Array(2 ** 20) }], 5),
    DeltaError,
  );
});

Deno.test("consecutive coordinator states of a 64-client run differ by a few percent", () => {
  // Two drivers walk the same run (same seeds, same clock) to the start of a round.
  const atRoundStart = () => {
    const driver = new RunDriver(
      testState({ initMinClients: 64, minClients: 1, maxClients: 256, witnessNodes: 0 }, 1000),
    );
    driver.startEpoch(identities(64));
    driver.warmupTimeout();
    for (let r = 0; r < 4; r++) driver.fullRound();
    return driver;
  };
  const one = atRoundStart();
  const other = atRoundStart();
  const start = encodeCoordinatorState(one.state);
  assert.deepEqual(encodeCoordinatorState(other.state), start);
  one.witnessFirst(1);
  const reported = encodeCoordinatorState(one.state);
  other.fullRound();
  const nextRound = encodeCoordinatorState(other.state);
  const report = diffBytes(start, reported);
  const round = diffBytes(start, nextRound);
  assert.deepEqual(applyDelta(start, report, reported.length), reported);
  assert.deepEqual(applyDelta(start, round, nextRound.length), nextRound);
  const share = (ops: DeltaOp[], bytes: Uint8Array) => deltaWireBytes(ops) / bytes.length;
  assert.ok(share(report, reported) < 0.05, `a report: ${deltaWireBytes(report)} bytes`);
  assert.ok(share(round, nextRound) < 0.5, `a round: ${deltaWireBytes(round)} bytes`);
  console.log(
    `state of 64 clients: ${reported.length} bytes; the delta of a witness report ` +
      `${deltaWireBytes(report)} bytes, of a whole round ${deltaWireBytes(round)} bytes`,
  );
});
