import assert from "node:assert/strict";
import { ENTER, LEAVE, MIN_FRAME_MS, TuiScreen } from "./screen.ts";

/** A screen on a recording terminal, with a clock and a timer the test moves by hand. */
function harness() {
  const writes: string[] = [];
  let now = 1_000_000;
  const pending: { at: number; fn: () => void; cancelled: boolean }[] = [];
  const screen = new TuiScreen({
    runId: "r",
    coordinator: "127.0.0.1:1",
    write: (text) => writes.push(text),
    size: () => ({ columns: 80, rows: 24 }),
    clock: () => now,
    schedule: (fn, ms) => {
      const job = { at: now + ms, fn, cancelled: false };
      pending.push(job);
      return () => (job.cancelled = true);
    },
  });
  const advance = (ms: number) => {
    now += ms;
    for (const job of pending.splice(0)) {
      if (job.cancelled) continue;
      if (job.at <= now) job.fn();
      else pending.push(job);
    }
  };
  const frames = () => writes.filter((w) => w.startsWith("\x1b[H"));
  const step = (step: number) =>
    screen.log("state", { run_state: "RoundTrain", epoch: 0, step, round: step, clients: 1 });
  return { screen, writes, advance, frames, step, pending };
}

Deno.test("screen: open enters the alternate screen and paints; close leaves it once", () => {
  const h = harness();
  h.screen.open();
  assert.equal(h.writes[0], ENTER);
  assert.equal(h.frames().length, 1);
  const summary = h.screen.close();
  assert.equal(h.writes.at(-1), LEAVE);
  assert.match(summary[0], /^client stopped/);
  h.screen.close();
  assert.equal(h.writes.filter((w) => w === LEAVE).length, 1);
});

Deno.test("screen: a burst of events is one repaint per interval, showing the last state", () => {
  const h = harness();
  h.screen.open(); // frame 1 at t0
  for (let s = 1; s <= 50; s++) h.step(s); // within the same interval: deferred
  assert.equal(h.frames().length, 1);
  assert.equal(h.pending.length, 1, "one deferred repaint, not one per event");
  h.advance(MIN_FRAME_MS - 1);
  assert.equal(h.frames().length, 1);
  h.advance(1);
  assert.equal(h.frames().length, 2);
  assert.match(h.frames()[1], /step 50 {2}round 50/);
  h.advance(MIN_FRAME_MS);
  h.step(51); // the interval has passed: painted at once
  assert.equal(h.frames().length, 3);
  assert.match(h.frames()[2], /step 51/);
});

Deno.test("screen: nothing is painted after close, nor before open", () => {
  const h = harness();
  h.step(1);
  assert.equal(h.writes.length, 0);
  h.screen.open();
  h.step(2); // deferred
  h.screen.close();
  h.advance(MIN_FRAME_MS * 4);
  h.step(3);
  assert.equal(h.writes.at(-1), LEAVE);
  assert.equal(h.screen.view.run?.step, 3, "the view still follows the events");
});
