import assert from "node:assert/strict";
import { bytes, grouped, renderFrame, renderLines, summaryLines, truncate } from "./render.ts";
import { initialView, type LoggedEvent, reduceView, type TuiView } from "./view.ts";

const T0 = Date.UTC(2026, 0, 2, 10, 0, 0);

/** A client 8 s into a run: trained six steps, two traffic reports, a witness, an apply, a refusal. */
function busyView(o: { runId?: string; coordinator?: string } = {}): TuiView {
  let v = initialView({
    runId: o.runId ?? "tiny-run",
    coordinator: o.coordinator ?? "127.0.0.1:5000",
  });
  let t = T0;
  const at = (e: LoggedEvent) => (v = reduceView(v, e, t += 1000));
  at({
    event: "start",
    fields: {
      identity: "3f9a1c2b4d5e".padEnd(64, "0"),
      run_id: "tiny-run",
      p2p_addresses: [],
      adapter: "webgpu",
    },
  });
  at({
    event: "model",
    fields: {
      folder: "m",
      weights: "seeded",
      params: 123456,
      params_hash: "0a".repeat(32),
      params_step: 0,
    },
  });
  at({
    event: "state",
    fields: { run_state: "RoundTrain", epoch: 0, step: 5, round: 4, clients: 2 },
  });
  at({
    event: "traffic",
    fields: { bytes_sent: 1000, bytes_received: 2000, gossip_delivered: 3, peers: 1 },
  });
  for (const [i, loss] of [6.3, 6.1, 5.9, 5.5, 5.6, 5.2].entries()) {
    at({
      event: "train",
      fields: {
        epoch: 0,
        step: i + 1,
        batch: [2 * i, 2 * i + 2],
        loss,
        tokens: 64,
        tokens_per_sec: 1234.5,
        ms: 820,
        payload_bytes: 12345,
        publish_ms: 3,
      },
    });
  }
  at({
    event: "traffic",
    fields: { bytes_sent: 1_201_000, bytes_received: 2_302_000, gossip_delivered: 9, peers: 2 },
  });
  at({
    event: "witness",
    fields: { step: 4, round: 3, participants: 2, commitments: 2, not_waited_for: [] },
  });
  at({
    event: "apply",
    fields: {
      epoch: 0,
      step: 3,
      applied: 2,
      untrained_batches: 0,
      untrained: [],
      rejected: [],
      lr: 1e-3,
      params_hash: "ff".repeat(32),
      params_step: 5,
      ms: 4,
    },
  });
  at({
    event: "refused",
    fields: {
      what: "payload",
      reason: "WrongStep",
      from: "abcdef".repeat(10),
      detail: "step 3, expected 5",
    },
  });
  return v;
}

Deno.test("render: the frame of a busy client at 80x24", () => {
  assert.deepEqual(renderLines(busyView(), { columns: 80, rows: 24 }), [
    'psyche client │ run "tiny-run" │ coordinator 127.0.0.1:5000 │ connected',
    "  run state   RoundTrain  (2 clients)",
    "  progress    epoch 0  step 5  round 4",
    "  client      3f9a1c2b4d5e on webgpu",
    "  model       123,456 params  hash ffffffffffff (step 5)",
    "── Training ────────────────────────────────────────────────────────────────────",
    "  last step   6  batch [10, 12]  820 ms  payload 12.3 kB",
    "  loss        5.2000  (min 5.2000, max 6.3000)",
    "  recent      █▇▅▃▄▁",
    "  tokens/s    1,235",
    "── Network ─────────────────────────────────────────────────────────────────────",
    "  peers       2",
    "  sent        1.2 MB  (171.4 kB/s)",
    "  received    2.3 MB  (328.6 kB/s)",
    "── Witness and apply ───────────────────────────────────────────────────────────",
    "  parameters  in sync",
    "  witness     step 4: 2 trainers, 2 commitments",
    "  apply       step 3: 2 results, 0 untrained, params ffffffffffff",
    "── Warnings and errors ─────────────────────────────────────────────────────────",
    "  10:00:14 warn  refused payload from abcdefabcdef…: WrongStep (step 3, expecte…",
  ]);
});

Deno.test("render: at 40 columns every line fits, the progress still shows in full", () => {
  const lines = renderLines(busyView(), { columns: 40, rows: 24 });
  for (const line of lines) assert.ok([...line].length <= 40, `too wide: ${line}`);
  assert.ok(lines.includes("  progress    epoch 0  step 5  round 4"));
  assert.ok(lines.includes("  loss        5.2000  (min 5.2000, max …"));
  assert.equal(lines[0], 'psyche client │ run "tiny-run" │ coordi…');
});

Deno.test("render: long values are cut at the width with an ellipsis", () => {
  const long = "x".repeat(300);
  const lines = renderLines(busyView({ runId: long, coordinator: long }), {
    columns: 60,
    rows: 24,
  });
  assert.equal(lines[0], `psyche client │ run "${"x".repeat(38)}…`);
  for (const line of lines) assert.ok([...line].length <= 60, `too wide: ${line}`);
  assert.equal(truncate("abcdef", 4), "abc…");
  assert.equal(truncate("abcd", 4), "abcd");
  assert.equal(truncate("abc", 0), "");
});

Deno.test("render: the sparkline takes the width left after its label, newest losses", () => {
  let v = busyView();
  for (let i = 0; i < 100; i++) {
    v = reduceView(v, {
      event: "train",
      fields: {
        epoch: 0,
        step: 7 + i,
        batch: [0, 1],
        loss: i % 2,
        tokens: 1,
        tokens_per_sec: 1,
        ms: 1,
        payload_bytes: 1,
        publish_ms: 3,
      },
    }, T0);
  }
  const recent = renderLines(v, { columns: 40, rows: 24 }).find((l) => l.startsWith("  recent"));
  assert.equal(recent, "  recent      " + "▁█".repeat(13));
});

Deno.test("render: warnings fill the rows left, newest last; a short screen is cut", () => {
  let v = busyView();
  for (let i = 0; i < 6; i++) {
    v = reduceView(v, { event: "error", fields: { what: `w${i}`, error: "e" } }, T0);
  }
  const lines = renderLines(v, { columns: 80, rows: 22 });
  assert.equal(lines.length, 22);
  assert.deepEqual(lines.slice(19), [
    "  10:00:00 ERROR error in w3: e",
    "  10:00:00 ERROR error in w4: e",
    "  10:00:00 ERROR error in w5: e",
  ]);
  assert.deepEqual(renderLines(v, { columns: 80, rows: 3 }).length, 3);
  assert.deepEqual(renderLines(v, { columns: 0, rows: 3 }), []);
  const quiet = renderLines(initialView({ runId: "r", coordinator: "c" }), {
    columns: 80,
    rows: 24,
  });
  assert.equal(quiet.at(-1), "  none");
  assert.equal(quiet[1], "  run state   waiting for the coordinator");
});

Deno.test("render: the frame repaints every row in place, title in reverse video", () => {
  const frame = renderFrame(initialView({ runId: "r", coordinator: "c" }), {
    columns: 30,
    rows: 5,
  });
  assert.ok(frame.startsWith("\x1b[H\x1b[7m"));
  const rows = frame.slice("\x1b[H".length).split("\r\n");
  assert.equal(rows.length, 5);
  assert.equal(rows[0], '\x1b[7mpsyche client │ run "r" │ coo…\x1b[0m');
  assert.ok(rows.slice(1).every((r) => r.endsWith("\x1b[K")));
  assert.ok(!frame.endsWith("\n"), "a newline after the last row would scroll the screen");
});

Deno.test("render: numbers and bytes read the same on every machine", () => {
  assert.equal(grouped(1234567.4), "1,234,567");
  assert.equal(grouped(-1000), "-1,000");
  assert.equal(bytes(999), "999 B");
  assert.equal(bytes(1234), "1.2 kB");
  assert.equal(bytes(5_600_000_000), "5.6 GB");
});

Deno.test("render: the summary left on the normal screen says why and where it stopped", () => {
  const v = reduceView(busyView(), { event: "end", fields: { reason: "interrupted" } }, T0);
  assert.deepEqual(summaryLines(v), [
    "client stopped: interrupted; last step 6, loss 5.2000",
    "last warn: refused payload from abcdefabcdef…: WrongStep (step 3, expected 5)",
  ]);
  assert.deepEqual(summaryLines(initialView({ runId: "r", coordinator: "c" })), [
    "client stopped: no reason logged; no step trained",
  ]);
});

Deno.test("render: a long phase under way gets a row of its own, under the model", () => {
  const view = reduceView(initialView({ runId: "r", coordinator: "c" }), {
    event: "model_upload",
    fields: { done_bytes: 2 ** 30, total_bytes: 2 ** 32, mb_per_sec: 300 },
  }, T0);
  const lines = renderLines(view, { columns: 80, rows: 24 });
  const model = lines.indexOf("  model       not loaded");
  assert.equal(
    lines[model + 1],
    "  now         uploading the model: 1.00 of 4.00 GiB (25%), 300 MB/s",
  );
  assert.ok(!renderLines(busyView(), { columns: 80, rows: 24 }).some((l) => l.startsWith("  now")));
});
