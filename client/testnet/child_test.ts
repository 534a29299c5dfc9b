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
