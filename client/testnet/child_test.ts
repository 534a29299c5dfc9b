import assert from "node:assert/strict";
import { ChildProcess, forEachLine } from "./child.ts";

Deno.test("lines are split across chunks, CRLF trimmed, the last partial line kept", async () => {
  const chunks = ["a\r\nb", "c\n", "", "d\ne"].map((s) => new TextEncoder().encode(s));
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  const lines: string[] = [];
  await forEachLine(stream, (l) => lines.push(l));
  assert.deepEqual(lines, ["a", "bc", "d", "e"]);
});

Deno.test("a child's stdout and stderr lines arrive; status after exit", async () => {
  const lines: string[] = [];
  const child = new ChildProcess("t", {
    args: ["sh", "-c", "echo out; echo err >&2; exit 3"],
    cwd: ".",
    onLine: (l) => lines.push(l),
  });
  const status = await child.status;
  assert.equal(status.code, 3);
  assert.ok(child.exited);
  assert.deepEqual(lines.sort(), ["err", "out"]);
  child.signal("SIGKILL"); // no-op after exit
});

Deno.test("stop escalates to SIGKILL when SIGTERM is ignored", async () => {
  let ready: () => void;
  const started = new Promise<void>((r) => (ready = r));
  const child = new ChildProcess("stubborn", {
    args: ["sh", "-c", "trap '' TERM; echo ready; while true; do sleep 0.05; done"],
    cwd: ".",
    onLine: (l) => l === "ready" && ready(),
  });
  await started;
  const status = await child.stop(300);
  assert.equal(status.signal, "SIGKILL");
});

Deno.test("a child inherits the environment but not the PSYCHE_* variables of the flags", async () => {
  Deno.env.set("PSYCHE_LOGS", "json");
  Deno.env.set("PSYCHE_CHILD_TEST_OTHER", "x");
  try {
    const lines: string[] = [];
    const child = new ChildProcess("env", {
      args: [
        "sh",
        "-c",
        'echo "logs=$PSYCHE_LOGS other=$PSYCHE_CHILD_TEST_OTHER path=${PATH:+set} given=$GIVEN"',
      ],
      cwd: ".",
      onLine: (l) => lines.push(l),
      env: { GIVEN: "yes" },
    });
    assert.equal((await child.status).code, 0);
    assert.deepEqual(lines, ["logs= other= path=set given=yes"]);
  } finally {
    Deno.env.delete("PSYCHE_LOGS");
    Deno.env.delete("PSYCHE_CHILD_TEST_OTHER");
  }
});
