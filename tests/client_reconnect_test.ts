/**
 * The client narrates its connection: with its coordinator gone it logs `disconnected`, then
 * `reconnecting` with the address, the attempt, the back-off and why the last try failed, and
 * `reconnected` once a coordinator listens there again. Real processes over real TCP.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ServerProcess } from "./support/server_driver.ts";
import { tinyRunToml } from "../client/testing/testnet.ts";
import { forEachLine, freePort } from "../client/testnet/mod.ts";

const CLIENT = new URL("../client/main.ts", import.meta.url).pathname;

/** Waits until `events` holds one `predicate` accepts, polling; names `what` on a timeout. */
async function waitFor(
  events: Record<string, unknown>[],
  predicate: (e: Record<string, unknown>) => boolean,
  what: string,
  output: string[],
  timeoutMs = 30_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const hit = events.find(predicate);
    if (hit !== undefined) return hit;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}; client output:\n${output.join("\n")}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("client logs disconnected, reconnecting (with the address) and reconnected", async () => {
  const dir = await Deno.makeTempDir();
  // Two clients to start: the one client here waits for members and never loads a model.
  const state = join(dir, "state.toml");
  await Deno.writeTextFile(state, tinyRunToml({ runId: "reconnect", initMinClients: 2 }));
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  let server = ServerProcess.start(["--state", state, "--server-port", String(port)]);
  assert.equal(await server.address(), address);
  const client = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      CLIENT,
      "train",
      "--run-id",
      "reconnect",
      "--server-addr",
      address,
      "--logs",
      "json",
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const events: Record<string, unknown>[] = [];
  const output: string[] = [];
  const onLine = (line: string) => {
    output.push(line);
    try {
      events.push(JSON.parse(line));
    } catch {
      // not an event (stderr)
    }
  };
  const reading = Promise.all([
    forEachLine(client.stdout, onLine),
    forEachLine(client.stderr, onLine),
  ]);
  try {
    await waitFor(events, (e) => e.event === "start", "start", output);
    await server.stop();
    const dropped = await waitFor(
      events,
      (e) => e.event === "disconnected",
      "disconnected",
      output,
    );
    assert.equal(dropped.address, address);
    assert.equal(typeof dropped.reason, "string");
    // A retry that found nobody listening says where it tried and why it failed.
    const failed = await waitFor(
      events,
      (e) => e.event === "reconnecting" && typeof e.error === "string",
      "a reconnecting event after a failed try",
      output,
    );
    assert.equal(failed.address, address);
    assert.ok((failed.attempt as number) >= 2);
    assert.ok((failed.delay_ms as number) > 0);
    assert.match(failed.error as string, new RegExp(`coordinator at ${address}`));
    const order = events.map((e) => e.event);
    assert.ok(order.indexOf("disconnected") < order.indexOf("reconnecting"));

    server = ServerProcess.start(["--state", state, "--server-port", String(port)]);
    assert.equal(await server.address(), address);
    const back = await waitFor(events, (e) => e.event === "reconnected", "reconnected", output);
    assert.equal(back.address, address);
    assert.ok((back.attempts as number) >= 2);
    // It joins the run again on the new coordinator.
    await server.waitForEvent((e) => e.event === "joined", 30_000, "the client joining again");
  } finally {
    client.kill("SIGTERM");
    await client.status;
    await reading;
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
