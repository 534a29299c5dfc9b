/**
 * The client narrates its connection: with its coordinator gone it logs `disconnected`, then
 * `reconnecting` with the address, the attempt, the back-off and why the last try failed, and
 * `reconnected` once a coordinator listens there again. Real processes over real TCP.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ServerProcess } from "./support/server_driver.ts";
import { tinyRunToml } from "../client/testing/testnet.ts";
import { freePort } from "../client/testnet/mod.ts";
import { ClientProcess } from "./support/client_process.ts";

Deno.test("client logs disconnected, reconnecting (with the address) and reconnected", async () => {
  const dir = await Deno.makeTempDir();
  // Two clients to start: the one client here waits for members and never loads a model.
  const state = join(dir, "state.toml");
  await Deno.writeTextFile(state, tinyRunToml({ runId: "reconnect", initMinClients: 2 }));
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  let server = ServerProcess.start(["--state", state, "--server-port", String(port)]);
  assert.equal(await server.address(), address);
  const client = ClientProcess.start(
    ["train", "--run-id", "reconnect", "--server-addr", address, "--logs", "json"],
  );
  try {
    await client.waitFor((e) => e.event === "start", "start");
    await server.stop();
    const dropped = await client.waitFor((e) => e.event === "disconnected", "disconnected");
    assert.equal(dropped.address, address);
    assert.equal(typeof dropped.reason, "string");
    // A retry that found nobody listening says where it tried and why it failed.
    const failed = await client.waitFor(
      (e) => e.event === "reconnecting" && typeof e.error === "string",
      "a reconnecting event after a failed try",
    );
    assert.equal(failed.address, address);
    assert.ok((failed.attempt as number) >= 2);
    assert.ok((failed.delay_ms as number) > 0);
    assert.match(failed.error as string, new RegExp(`coordinator at ${address}`));
    const order = client.events.map((e) => e.event);
    assert.ok(order.indexOf("disconnected") < order.indexOf("reconnecting"));

    server = ServerProcess.start(["--state", state, "--server-port", String(port)]);
    assert.equal(await server.address(), address);
    const back = await client.waitFor((e) => e.event === "reconnected", "reconnected");
    assert.equal(back.address, address);
    assert.ok((back.attempts as number) >= 2);
    // It joins the run again on the new coordinator.
    await server.waitForEvent((e) => e.event === "joined", 30_000, "the client joining again");
  } finally {
    await client.stop();
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
