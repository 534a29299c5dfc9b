/**
 * A testnet client whose libp2p port another process took between `freePort` and its listen
 * (EADDRINUSE at start) is started again on a fresh port, rather than leaving a run that waits
 * for it forever: CI once lost a whole end-to-end test to that race.
 */
import assert from "node:assert/strict";
import { startTinyTestnet } from "../client/testing/testnet.ts";

Deno.test({
  name: "a testnet client whose p2p port was taken starts again on a fresh one",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const takenPort = (taken.addr as Deno.NetAddr).port;
  await using testnet = await startTinyTestnet({
    runId: "port-taken",
    initMinClients: 1,
    minClients: 1,
    globalBatchSize: 2,
  }, {
    numClients: 1,
    clientPort: (label) => label === "client-1" ? takenPort : undefined,
  });
  const { watcher, lines } = testnet;
  try {
    const started = await watcher.waitFor(
      "client-1 to start on another port",
      () => watcher.named("start", "client-1")[0],
      60_000,
    );
    const notes = watcher.named("testnet").map((e) => String(e.event.message));
    const retry = notes.find((m) => m.startsWith("client-1 could not listen on p2p port"));
    assert.ok(retry !== undefined, notes.join("\n"));
    assert.match(retry, new RegExp(`port ${takenPort} \\(another process took it\\)`));
    const addresses = started.event.p2p_addresses as string[];
    assert.ok(addresses.every((a) => !a.includes(`/tcp/${takenPort}/`)), addresses.join(" "));
    assert.ok(!notes.some((m) => /^client-1 exited/.test(m)), "the retry is not an exit");
  } catch (e) {
    console.error(lines.slice(-60).join("\n"));
    throw e;
  }
});
