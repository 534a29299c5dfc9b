/**
 * `client train --metrics-port`: a real coordinator process and a real client process. The
 * client logs where it serves its metrics; after it trained a step and applied one, a scrape of
 * `/metrics` parses with the strict Prometheus reader and carries the step, the loss of the
 * last `train` event, traffic and counters. Once the client stops, nothing listens there.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ServerProcess } from "./support/server_driver.ts";
import { tinyRunToml } from "../client/testing/testnet.ts";
import { freePort } from "../client/testnet/mod.ts";
import { ClientProcess } from "./support/client_process.ts";
import {
  parsePrometheusText,
  sampleValue,
} from "../coordinator/dashboard/testing/prometheus_text.ts";
import { RUN_STATES } from "../coordinator/core/mod.ts";

Deno.test({
  name: "client --metrics-port serves its step, loss and counters while it trains",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "psyche-metrics-" });
  const state = join(dir, "state.toml");
  await Deno.writeTextFile(state, tinyRunToml({ runId: "metrics-run" }));
  const server = ServerProcess.start(["--state", state, "--server-port", String(await freePort())]);
  const address = await server.address();
  const client = ClientProcess.start(
    ["train", "--run-id", "metrics-run", "--server-addr", address]
      .concat(["--logs", "json", "--metrics-port", "0"]),
  );
  try {
    const announced = await client.waitFor((e) => e.event === "metrics", "metrics", 150_000);
    const url = String(announced.url);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    await client.waitFor((e) => e.event === "apply", "an applied step", 150_000);
    const scrape = await fetch(url);
    assert.equal(scrape.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    const body = await scrape.text();
    const logged = [...client.events]; // what the client had logged by the scrape (at least)
    const scraped = parsePrometheusText(body);
    const trains = logged.filter((e) => e.event === "train");
    const lastTrain = trains.at(-1)!;
    const trained = sampleValue(scraped, "psyche_client_rounds_trained_total")!;
    // Events may have come between the copy and the scrape: never fewer than were logged.
    assert.ok(trained >= trains.length && trains.length >= 1, body);
    if (trained === trains.length) {
      assert.equal(sampleValue(scraped, "psyche_client_loss"), lastTrain.loss);
      assert.equal(sampleValue(scraped, "psyche_client_last_trained_step"), lastTrain.step);
    }
    assert.ok(sampleValue(scraped, "psyche_client_applies_total")! >= 1, body);
    assert.ok(sampleValue(scraped, "psyche_client_step")! >= 1, body);
    assert.ok(sampleValue(scraped, "psyche_client_bytes_sent_total")! >= 0, body);
    assert.ok(sampleValue(scraped, "psyche_client_phase_seconds_count", { phase: "train" })! >= 1);
    assert.ok(sampleValue(scraped, "psyche_client_phase_seconds_sum", { phase: "apply" })! > 0);
    assert.equal(sampleValue(scraped, "psyche_client_in_sync"), 1);
    assert.equal(sampleValue(scraped, "psyche_client_connected"), 1);
    const identity = String(logged.find((e) => e.event === "start")!.identity);
    assert.equal(
      sampleValue(scraped, "psyche_client_info", {
        run_id: "metrics-run",
        client: identity.slice(0, 16),
      }),
      1,
    );
    const states = scraped.samples.filter((s) => s.name === "psyche_client_run_state");
    assert.equal(states.length, RUN_STATES.length);
    assert.equal(states.filter((s) => s.value === 1).length, 1);
    assert.equal((await fetch(url.replace("/metrics", "/"))).status, 404);

    assert.equal((await client.stop()).code, 0);
    await assert.rejects(fetch(url), "the endpoint closes with the client");
  } finally {
    await client.stop(); // again after a failed assertion: a no-op once it exited
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
