/**
 * Announcements that gossip loses, over three real exchanges (libp2p nodes on 127.0.0.1): the
 * observer loses the first copy of every TrainingResult that reaches it (the `loseFirstCopy`
 * fault), so a result comes back only if the exchange pulls it.
 *
 * - A trainer's Finished that arrives without its result makes the observer pull the round
 *   from that trainer at once.
 * - An apply that lacks results pulls the round from every peer (`recoverRound`), once, and
 *   then gets their payloads.
 *
 * @module
 */
import assert from "node:assert/strict";
import { waitFor } from "../client/testing/p2p.ts";
import { startP2PRun, validResult } from "./support/p2p_run.ts";
import { chunkLayouts, commitmentHash, encodePayload } from "../optimizer/mod.ts";

const expectation = {
  layouts: chunkLayouts([{ name: "w", shape: [64, 64] }], { chunk: 64, topk: 8 }),
  quantize1bit: true,
};

Deno.test({
  name: "a trainer's Finished without its result makes the observer pull the result from it",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using run = await startP2PRun(expectation, {
      runId: "lossy-finished",
      observerFaults: { loseFirstCopy: ["TrainingResult"] },
    });
    const { honest, observer, step, batchOf, proofOf } = run;
    const result = validResult(expectation, step, batchOf(0));
    await honest.results.publishResult(0, proofOf(0), result);
    const tracker = observer.results.tracker(0)!;
    await waitFor("the copy to be lost", () => observer.gossip.stats.lostOnPurpose === 1);
    assert.equal(tracker.announcements().length, 0);
    await honest.results.announceFinished(0, step, proofOf(0));
    await waitFor("the pulled result", () => tracker.announcements().length === 1, 10_000);
    await waitFor("its payload", () => observer.results.downloadsSettled(0), 10_000);
    const commitment = commitmentHash({
      step,
      batch: batchOf(0),
      payload: encodePayload(result, expectation),
    });
    assert.ok(tracker.result(commitment) !== undefined, "the result verified");
    const recovered = run.observed.filter((e) => e.event === "announcements_recovered");
    assert.equal(recovered.length, 1);
    assert.match(String((recovered[0].fields as { why: string }).why), /Finished came without/);
  },
});

Deno.test({
  name: "an apply lacking a result pulls the round from every peer and gets the payload",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using run = await startP2PRun(expectation, {
      runId: "lossy-apply",
      observerFaults: { loseFirstCopy: ["TrainingResult"] },
    });
    const { honest, observer, attacker: third, step, batchOf, proofOf } = run;
    const results = [0, 2].map((i) => validResult(expectation, step, batchOf(i)));
    await honest.results.publishResult(0, proofOf(0), results[0]);
    await third.results.publishResult(0, proofOf(2), results[1]);
    await waitFor("both copies to be lost", () => observer.gossip.stats.lostOnPurpose === 2);
    // Nothing else brings them: no Finished came, and round 0 has no round before it.
    const tracker = observer.results.tracker(0)!;
    assert.equal(tracker.announcements().length, 0);
    assert.equal(await observer.results.recoverRound(0), 2);
    for (const result of results) {
      const payload = encodePayload(result, expectation);
      const commitment = commitmentHash({ step, batch: result.batch, payload });
      assert.deepEqual(await observer.results.resultFor(0, commitment), result);
    }
    assert.equal(await observer.results.recoverRound(0), 0, "a second recovery finds nothing new");
  },
});
