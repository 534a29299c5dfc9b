import assert from "node:assert/strict";
import { testState } from "../../tests/support/coordinator_fixtures.ts";
import { StateFeed } from "./state_feed.ts";

function stateAt(step: number) {
  const s = testState();
  s.progress.step = step;
  return s;
}

Deno.test("a slow follower skips to the newest state", async () => {
  const feed = new StateFeed();
  const seen: number[] = [];
  const iterator = feed.follow()[Symbol.asyncIterator]();
  feed.publish(stateAt(1));
  seen.push((await iterator.next()).value.progress.step);
  feed.publish(stateAt(2));
  feed.publish(stateAt(3));
  seen.push((await iterator.next()).value.progress.step);
  const pending = iterator.next();
  feed.close();
  assert.equal((await pending).done, true);
  assert.deepEqual(seen, [1, 3]);
});

Deno.test("a failed feed throws its first failure to every follower", async () => {
  const feed = new StateFeed();
  feed.publish(stateAt(1));
  const following = (async () => {
    for await (const _ of feed.follow()) {
      // keep following
    }
  })();
  feed.fail(new Error("refused"));
  feed.fail(new Error("second"));
  await assert.rejects(following, /refused/);
  feed.publish(stateAt(2));
  assert.equal(feed.latest()?.progress.step, 1, "nothing is published after a failure");
});
