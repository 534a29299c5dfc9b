import assert from "node:assert/strict";
import { checkAnnouncedResult, checkResultPayload, expectedResultBytes } from "./payload_check.ts";
import type { AnnouncedResult } from "./round_tracker.ts";
import {
  chunkLayouts,
  commitmentHash,
  type DistroResult,
  encodePayload,
} from "../../optimizer/mod.ts";

const expectation = {
  layouts: chunkLayouts([{ name: "w", shape: [8, 8] }], { chunk: 64, topk: 2 }),
  quantize1bit: true,
};
const batch = { start: 4, end: 5 };

function payload(step: number, b = batch): Uint8Array {
  const result: DistroResult = {
    step,
    batch: b,
    trainerNonce: 0,
    params: [{ indices: new Uint32Array([3, 9]), values: new Float32Array([1, -1]) }],
  };
  return encodePayload(result, expectation);
}

function announced(bytes: Uint8Array, step: number): AnnouncedResult {
  return {
    batch,
    from: new Uint8Array(32),
    signer: new Uint8Array(32),
    commitment: commitmentHash({ step, batch, payload: bytes }),
    contentHash: new Uint8Array(32),
    payloadSize: bytes.length,
  };
}

Deno.test("checkResultPayload: the announced bytes verify and decode", async () => {
  const bytes = payload(7);
  const check = await checkResultPayload(bytes, announced(bytes, 7), 7, expectation);
  assert.ok(check.ok);
  assert.deepEqual(check.result.params[0].indices, new Uint32Array([3, 9]));
});

Deno.test("checkResultPayload: other bytes, garbage and mislabelled content are refused", async () => {
  const bytes = payload(7);
  const reason = (c: Awaited<ReturnType<typeof checkResultPayload>>) => (c.ok ? "ok" : c.reason);
  const other = payload(7, { start: 4, end: 5 }).slice();
  other[other.length - 1] ^= 1;
  assert.equal(
    reason(await checkResultPayload(other, announced(bytes, 7), 7, expectation)),
    "CommitmentMismatch",
  );
  assert.equal(
    reason(await checkResultPayload(bytes, announced(bytes, 7), 8, expectation)),
    "CommitmentMismatch",
  );
  const junk = new Uint8Array([1, 2, 3]);
  assert.equal(
    reason(await checkResultPayload(junk, announced(junk, 7), 7, expectation)),
    "Undecodable",
  );
  // A trainer that committed to a payload naming another step.
  const mislabelled = payload(9);
  const check = await checkResultPayload(mislabelled, announced(mislabelled, 7), 7, expectation);
  assert.equal(reason(check), "WrongContent");
  assert.match(check.ok ? "" : check.detail, /holds step 9/);
});

Deno.test("checkAnnouncedResult: only the model's exact size within the budget is fetched", () => {
  const size = expectedResultBytes(expectation);
  assert.equal(size, payload(7).length, "every result of the model has this size");
  const check = (payloadSize: number, budgetLeft = 10 * size) =>
    checkAnnouncedResult({ batch, payloadSize }, { expectedBytes: size, budgetLeft });
  assert.deepEqual(check(size), { ok: true });
  assert.deepEqual(check(size, size), { ok: true }, "a budget of exactly one payload suffices");
  for (const wrong of [size + 1, size - 1, 0, 32 << 20]) {
    const c = check(wrong);
    assert.ok(!c.ok && c.reason === "WrongPayloadSize", `size ${wrong}`);
    assert.equal(
      c.detail,
      `result of batch [4, 5] announced ${wrong} bytes, a result of this model is ${size} bytes`,
    );
  }
  const over = check(size, size - 1);
  assert.ok(!over.ok && over.reason === "OverBudget");
  assert.match(over.detail, new RegExp(`needs ${size} bytes, .* has ${size - 1} bytes`));
  const spent = check(size, -5);
  assert.ok(!spent.ok && /has 0 bytes of its budget left/.test(spent.detail));
});
