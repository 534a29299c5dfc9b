/**
 * A testnet killed outright (SIGKILL, as the OOM killer does) takes its coordinator and clients
 * with it: each child's stdin is the testnet's lifeline (cli/stop_request.ts), so none is left
 * running, holding its port, after its parent is gone.
 *
 * @module
 */
import assert from "node:assert/strict";
import { tinyRunFolder } from "../client/testing/testnet.ts";

const TESTNET = new URL("../client/testnet/main.ts", import.meta.url).pathname;

/** The pids whose parent is `ppid` and that run (zombies excluded), from /proc. */
function childrenOf(ppid: number): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const fields = statFields(Number(entry.name));
    if (fields !== null && fields.ppid === ppid && fields.state !== "Z") {
      pids.push(Number(entry.name));
    }
  }
  return pids;
}

/** State and parent of `pid` from /proc/PID/stat; null once it is gone. */
function statFields(pid: number): { state: string; ppid: number } | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: rest[0], ppid: Number(rest[1]) };
  } catch {
    return null;
  }
}

const alive = (pid: number) => {
  const f = statFields(pid);
  return f !== null && f.state !== "Z";
};

async function poll(what: string, ok: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

Deno.test({
  name: "e2e: a SIGKILLed testnet leaves no coordinator or client running",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const config = await tinyRunFolder({
    runId: "e2e-orphans",
    initMinClients: 2,
    minClients: 1,
    witnessNodes: 0,
    globalBatchSize: 4,
    epochTime: 60,
  });
  const testnet = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", TESTNET, "--config-path", config, "--num-clients", "2", "--logs", "json"],
    stdout: "null",
    stderr: "null",
  }).spawn();
  let children: number[] = [];
  try {
    // The coordinator and both clients, once all three are spawned.
    await poll("the testnet's three children", () => {
      children = childrenOf(testnet.pid);
      return children.length === 3;
    }, 60_000);
    testnet.kill("SIGKILL");
    assert.equal((await testnet.status).signal, "SIGKILL");
    await poll(`children ${children.join(", ")} to stop`, () => !children.some(alive), 30_000);
  } finally {
    for (const pid of children.filter(alive)) Deno.kill(pid, "SIGKILL");
    try {
      testnet.kill("SIGKILL");
    } catch {
      // already gone
    }
    await Deno.remove(config, { recursive: true });
  }
});
