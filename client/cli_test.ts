import assert from "node:assert/strict";
import { ClientUsageError, parseClientArgs } from "./cli.ts";

Deno.test("parseClientArgs: train with defaults and every flag", () => {
  const min = parseClientArgs(["train", "--run-id", "r", "--server-addr", "h:1"]);
  assert.deepEqual(min, {
    command: "train",
    runId: "r",
    serverAddr: "h:1",
    identitySecretKeyPath: null,
    bindP2pPort: 0,
    bindP2pInterface: "127.0.0.1",
    bootstrapPeers: [],
    microBatchSize: 1,
    checkpointDir: null,
    logs: "tui",
    maxConcurrentDownloads: 8,
    model: null,
  });
  const all = parseClientArgs([
    "train",
    "--run-id=r",
    "--server-addr=h:1",
    "--identity-secret-key-path=k",
    "--bind-p2p-port=4001",
    "--bootstrap-peer=/a",
    "--bootstrap-peer=/b",
    "--micro-batch-size=2",
    "--checkpoint-dir=c",
    "--logs=json",
    "--max-concurrent-downloads=3",
    "--model=m",
  ]);
  assert.equal(all.command, "train");
  if (all.command !== "train") return;
  assert.equal(all.bindP2pPort, 4001);
  assert.deepEqual(all.bootstrapPeers, ["/a", "/b"]);
  assert.equal(all.logs, "json");
  assert.equal(all.model, "m");
});

Deno.test("parseClientArgs: errors name the flag", () => {
  const bad = (args: string[], re: RegExp) =>
    assert.throws(
      () => parseClientArgs(args),
      (e) => e instanceof ClientUsageError && re.test(e.message),
    );
  bad(["train", "--server-addr", "h:1"], /--run-id/);
  bad(["train", "--run-id", "r"], /--server-addr/);
  bad(["train", "--run-id", "r", "--server-addr", "h:1", "--logs", "xml"], /--logs must be one of/);
  bad(
    ["train", "--run-id", "r", "--server-addr", "h:1", "--micro-batch-size", "0"],
    /--micro-batch-size/,
  );
  bad(["train", "--run-id", "r", "--server-addr", "h:1", "--nope"], /nope/);
  bad(["fly"], /unknown command "fly"/);
  bad(["show-identity", "--run-id", "r"], /show-identity takes no --run-id/);
  assert.deepEqual(parseClientArgs(["show-identity"]), {
    command: "show-identity",
    identitySecretKeyPath: null,
  });
  assert.deepEqual(parseClientArgs([]), { command: "help" });
});
