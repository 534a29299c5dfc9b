/**
 * The end-to-end scenario of a client joining a run in progress (tests/e2e_join_test.ts,
 * tests/e2e_snapshot_bf16_test.ts): two clients train the first epoch, a third joins and waits
 * for the next; once it has the model, it must apply the same results to the same parameters as
 * the two others.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { EventWatcher, SeenEvent, TinyTestnet } from "../../client/testing/testnet.ts";

const step = (e: SeenEvent) => Number(e.event.step);

/**
 * Once the two first clients train, adds a third and waits for the first epoch to end with
 * success: the joiner's label and the epoch it joins.
 */
export async function joinAfterFirstEpoch(
  testnet: TinyTestnet,
): Promise<{ joiner: string; epoch: number }> {
  const { net, watcher } = testnet;
  await watcher.waitFor(
    "the first epoch to train",
    () => watcher.named("train").length > 0,
    90_000,
  );
  const joiner = await net.addClient();
  const end = await watcher.waitFor(
    "the first epoch to end after training",
    () => watcher.named("epoch_end").find((e) => e.event.success === true),
    90_000,
  );
  return { joiner, epoch: Number(end.event.epoch) };
}

/**
 * Waits for `joiner` to apply a step of `epoch`, then for all three clients to apply the next
 * step, and asserts they hold the same parameters after it; returns the joiner's apply of it.
 */
export async function assertJoinerInStep(
  watcher: EventWatcher,
  joiner: string,
  epoch: number,
): Promise<SeenEvent> {
  const first = await watcher.waitFor(
    "the joiner to apply a step",
    () => watcher.named("apply", joiner).find((e) => Number(e.event.epoch) === epoch),
    60_000,
  );
  const target = step(first) + 1;
  const clients = ["client-1", "client-2", joiner];
  await watcher.waitFor(
    `all three clients to apply step ${target}`,
    () => clients.every((l) => watcher.named("apply", l).some((e) => step(e) === target)),
    60_000,
  );
  const applies = clients.map((l) => watcher.named("apply", l).find((e) => step(e) === target)!);
  const hashes = applies.map((e) => e.event.params_hash);
  assert.equal(new Set(hashes).size, 1, `parameters after step ${target}: ${hashes.join(", ")}`);
  return applies[2];
}
