import assert from "node:assert/strict";
import { logSchemaProblem } from "../testing/log_schema.ts";
import { join } from "node:path";
import { Testnet } from "./launcher.ts";
import { ChildProcess } from "./child.ts";
import { EventWatcher, observeCoordinator, tinyRunFolder } from "../testing/testnet.ts";

const quiet = { write: null, colour: false } as const;

Deno.test({
  name: "a testnet of the coordinator alone serves the run and cleans up",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const config = await tinyRunFolder({ runId: "launcher-alone" });
  const watcher = new EventWatcher();
  const net = await Testnet.start({
    configPath: config,
    numClients: 0,
    ...quiet,
    onEvent: watcher.onEvent,
  });
  try {
    assert.equal(net.runId, "launcher-alone");
    assert.match(net.serverAddr, /^127\.0\.0\.1:\d+$/);
    assert.ok((await Deno.stat(join(net.tempDir, "state.toml"))).isFile);
    assert.equal(watcher.named("listening").length, 1);
    const observing = new AbortController();
    let runState = "";
    await observeCoordinator(
      { address: net.serverAddr, runId: net.runId, signal: observing.signal },
      (s) => {
        runState = s.runState;
        observing.abort();
      },
    );
    assert.equal(runState, "WaitingForMembers");
  } finally {
    await net.stop();
    await Deno.remove(config, { recursive: true });
  }
  await assert.rejects(() => Deno.stat(net.tempDir), Deno.errors.NotFound);
  assert.equal((await net.coordinatorExited).success, true, "stopped by SIGTERM, exit 0");
});

Deno.test("a data-server run without data.toml is refused before anything starts", async () => {
  const config = await Deno.makeTempDir();
  try {
    await Deno.copyFile("config/llama-tiny/state.toml", join(config, "state.toml"));
    await assert.rejects(
      () => Testnet.start({ configPath: config, numClients: 1, ...quiet }),
      /reads its data from a TCP server, but .*data\.toml .*does not exist/,
    );
  } finally {
    await Deno.remove(config, { recursive: true });
  }
});

Deno.test({
  name: "deno task testnet stops every child on SIGINT",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const config = await tinyRunFolder({ runId: "launcher-sigint" });
  const lines: string[] = [];
  let sawClient: () => void;
  const clientUp = new Promise<void>((resolve) => (sawClient = resolve));
  const cli = new ChildProcess("testnet", {
    args: [
      Deno.execPath(),
      "run",
      "-A",
      "client/testnet/main.ts",
      "--num-clients",
      "1",
      "--config-path",
      config,
      "--logs",
      "json",
    ],
    cwd: ".",
    onLine: (line) => {
      lines.push(line);
      if (line.includes('"process":"client-1"') && line.includes('"event":"state"')) sawClient();
    },
  });
  try {
    await clientUp;
    cli.signal("SIGINT");
    const status = await cli.status;
    // Stopped before any step was applied: the run achieved nothing, and says so in its status.
    assert.equal(status.code, 1, lines.slice(-20).join("\n"));
    // Every line, the coordinator's, the client's and the testnet's own, keeps one schema.
    const problems = lines.map(logSchemaProblem).filter((p) => p !== null);
    assert.deepEqual(problems, [], "every line in the log schema of docs/logs.md");
    const events = lines.map((l) => JSON.parse(l));
    for (const process of ["coordinator", "client-1", "testnet"]) {
      assert.ok(events.some((e) => e.process === process), `no line of ${process}`);
    }
    assert.ok(
      events.some((e) => e.event === "failed" && e.problem === "no client applied a step"),
      lines.slice(-20).join("\n"),
    );
    const summary = events.find((e) => e.event === "summary");
    assert.equal(summary?.applied_steps, 0);
    const pids = lines.map((l) => /started \(pid (\d+)/.exec(l)?.[1]).filter((p) => p).map(Number);
    assert.equal(pids.length, 1);
    for (const pid of pids) {
      assert.throws(() => Deno.kill(pid, "SIGCONT"), "the client process is gone");
    }
    assert.ok(events.some((e) => e.event === "stopped" && e.reason === "signal"));
    assert.ok(
      lines.some((l) => l.includes('"process":"coordinator"') && l.includes('"event":"stopped"')),
    );
  } finally {
    await cli.stop(2000);
    await Deno.remove(config, { recursive: true });
  }
});

Deno.test({
  name: "random kills SIGKILL a running client and restart it with the same identity",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const config = await tinyRunFolder({ runId: "launcher-kills" });
  const watcher = new EventWatcher();
  const exits: string[] = [];
  const net = await Testnet.start({
    configPath: config,
    numClients: 1,
    ...quiet,
    onEvent: watcher.onEvent,
    onClientExit: (label, status) => exits.push(`${label}:${status.signal}`),
  });
  try {
    const key = net.clientKey("client-1");
    await watcher.waitFor("the client to start", () => watcher.named("start").length === 1, 60_000);
    await net.randomKills({ count: 1, intervalMs: 100, restartMs: 100, randomIndex: () => 0 });
    assert.deepEqual(exits, ["client-1:SIGKILL"]);
    const notes = watcher.named("testnet").map((e) => String(e.event.message));
    assert.ok(notes.includes("random kill 1/1: client-1"), notes.join("\n"));
    assert.ok(notes.includes("restarting client-1"));
    const starts = await watcher.waitFor(
      "the restarted client to start",
      () => watcher.named("start", "client-1").length === 2 && watcher.named("start", "client-1"),
      60_000,
    );
    assert.ok(starts.every((e) => e.event.identity === key), "same identity after the restart");
    assert.deepEqual(net.liveClients(), ["client-1"]);
    assert.equal(net.idle(), false);
  } finally {
    await net.stop();
    await Deno.remove(config, { recursive: true });
  }
});
