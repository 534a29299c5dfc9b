/**
 * End to end on a lossy network: each client loses the first copy of every announcement of
 * some kinds that reaches it (the `PSYCHE_FAULT_LOSE_FIRST_GOSSIP` hook): client-1 loses
 * TrainingResults, client-2 Finisheds, client-3 both. Gossip delivers an announcement once and
 * drops its copies, so before pulls existed each lost copy waited for a resend, seconds later:
 * - a lost TrainingResult missed its round's witness reports, and the batch went untrained
 *   (a run that lost only those applied 1 step in 5 with no result in it);
 * - a lost Finished held the witnesses until the round's timer (rounds took 14 s, not 1).
 *
 * Checked: the clients pull what they missed from their peers (`announcements_recovered`), no
 * round waits for its timer, every step applies every batch, nobody diverges, and every client
 * holds the same parameters at every step.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type SeenEvent, startTinyTestnet } from "../client/testing/testnet.ts";
import { assertOneModel } from "./support/one_model.ts";

const step = (e: SeenEvent) => Number(e.event.step);
const CLIENTS = ["client-1", "client-2", "client-3"];
const LOST: Record<string, string> = {
  "client-1": "TrainingResult",
  "client-2": "Finished",
  "client-3": "TrainingResult,Finished",
};

Deno.test({
  name: "with the first copy of every announcement lost, clients recover them from their peers " +
    "and apply every batch in agreement",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using testnet = await startTinyTestnet({
    runId: "e2e-lossy",
    initMinClients: 3,
    minClients: 2,
    witnessNodes: 0,
    globalBatchSize: 6,
    epochTime: 30,
    maxRoundTrainTime: 8,
  }, {
    numClients: 3,
    clientEnv: (label) => ({ PSYCHE_FAULT_LOSE_FIRST_GOSSIP: LOST[label] }),
  });
  const { watcher, lines } = testnet;
  const LAST = 6;
  try {
    await watcher.waitFor(
      `every client to apply step ${LAST}`,
      () => CLIENTS.every((l) => watcher.named("apply", l).some((e) => step(e) >= LAST)),
      180_000,
    );
    for (const label of CLIENTS) {
      assert.deepEqual(watcher.named("diverged", label), [], `${label} never diverged`);
    }
    assert.ok(
      watcher.named("announcements_recovered").length > 0,
      "the lost announcements came back through pulls",
    );
    const timed = watcher.named("round_end", "coordinator")
      .filter((e) => e.event.train_timed_out === true && step(e) <= LAST);
    assert.deepEqual(
      timed.map((e) => `round ${e.event.round} at step ${step(e)}`),
      [],
      "rounds that waited for their timer",
    );
    const applies = watcher.named("apply").filter((e) => step(e) >= 1 && step(e) <= LAST);
    const short = applies.filter((e) => Number(e.event.untrained_batches) > 0);
    assert.deepEqual(
      short.map((e) => `${e.label} step ${step(e)}: ${JSON.stringify(e.event.untrained)}`),
      [],
      "steps that lost batches",
    );
    assertOneModel(watcher.events, LAST);
  } catch (e) {
    console.error(lines.slice(-120).join("\n"));
    throw e;
  }
});
