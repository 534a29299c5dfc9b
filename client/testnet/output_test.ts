import assert from "node:assert/strict";
import { colourFor, formatLine, parseEventLine, renderEvent } from "./output.ts";

const client = { label: "client-2", kind: "client" as const, index: 2 };
const coordinator = { label: "coordinator", kind: "coordinator" as const, index: 0 };
const plain = { format: "console" as const, colour: false, labelWidth: 11 };

Deno.test("event lines are recognised; anything else is not", () => {
  assert.deepEqual(parseEventLine('{"event":"end","reason":"x"}'), { event: "end", reason: "x" });
  assert.equal(parseEventLine('{"no_event":1}'), null);
  assert.equal(parseEventLine("{broken"), null);
  assert.equal(parseEventLine("error: XDG_RUNTIME_DIR is invalid"), null);
  assert.equal(parseEventLine("[1]"), null);
});

Deno.test("console lines render each process's events as it would print them", () => {
  const train = JSON.stringify({
    time: "2026-01-01T00:00:00.005Z",
    level: "info",
    event: "train",
    step: 3,
    batch: [4, 5],
    loss: 2.5,
    tokens: 64,
    tokens_per_sec: 100,
    ms: 640,
    payload_bytes: 975,
    publish_ms: 3,
  });
  assert.equal(
    formatLine(client, train, plain),
    "client-2    | trained step 3 batch [4, 5]: loss 2.5000, 100 tokens/s, payload 975 bytes",
  );
  const state = JSON.stringify({
    time: "2026-01-01T00:00:00.000Z",
    level: "info",
    event: "state_changed",
    from: "Warmup",
    to: "RoundTrain",
    epoch: 0,
    step: 1,
  });
  assert.equal(
    formatLine(coordinator, state, plain),
    "coordinator | state    Warmup -> RoundTrain (epoch 0, step 1)",
  );
  assert.equal(formatLine(client, "panic: boom", plain), "client-2    | panic: boom");
  assert.equal(
    formatLine(client, "x", { ...plain, colour: true }),
    `\x1b[${colourFor(2)}mclient-2   \x1b[0m | x`,
  );
});

Deno.test("unknown or malformed events are shown raw, never dropped", () => {
  assert.equal(renderEvent("coordinator", { event: "Mystery", a: 1 }), 'Mystery {"a":1}');
  assert.equal(renderEvent("client", { event: "train" }), "train {}");
  assert.equal(renderEvent("testnet", { event: "testnet", message: "hi" }), "hi");
});

Deno.test("json lines carry the process label", () => {
  const json = { ...plain, format: "json" as const };
  assert.deepEqual(JSON.parse(formatLine(client, '{"event":"end","reason":"x"}', json)), {
    process: "client-2",
    event: "end",
    reason: "x",
  });
  assert.deepEqual(JSON.parse(formatLine(coordinator, "plain text", { ...json, timeMs: 7 })), {
    time: "1970-01-01T00:00:00.007Z",
    level: "info",
    event: "output",
    process: "coordinator",
    line: "plain text",
  });
});

Deno.test("an event rendered over several lines keeps the process label on each", () => {
  const plan = JSON.stringify({
    time: "2026-01-01T00:00:00.000Z",
    level: "info",
    event: "memory_plan",
    fits: true,
    peak_bytes: 1024,
    lines: ["memory plan: 1.87M parameters", "  parameters (f32 masters)  7.13 MiB"],
  });
  const out = formatLine(client, plan, plain).split("\n");
  assert.ok(out.length >= 2, out.join("\n"));
  for (const line of out) assert.match(line, /^client-2 {4}\| /);
});
