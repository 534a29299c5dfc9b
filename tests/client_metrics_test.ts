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
import { writeTaskFiles } from "../eval/testing/task_files.ts";

Deno.test({
  name: "client --metrics-port serves its step, loss and counters while it trains",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "psyche-metrics-" });
  const state = join(dir, "state.toml");
  await Deno.writeTextFile(state, tinyRunToml({ runId: "metrics-run" }));
  await writeTaskFiles(join(dir, "tasks"), 4);
  const server = ServerProcess.start(
    ["--state", state, "--server-port", String(await freePort()), "--dashboard-port", "0"],
  );
  const address = await server.address();
  const client = ClientProcess.start(
    ["train", "--run-id", "metrics-run", "--server-addr", address]
      .concat(["--logs", "json", "--metrics-port", "0"])
      // Evals between rounds; the tiny model's 512 ids hold every byte.
      .concat(["--eval-tasks", "boolq,arc_easy", "--eval-tasks-dir", join(dir, "tasks")])
      .concat(["--eval-tokenizer", "bytes"]),
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

    // Evals ran between rounds; the client's metrics and the coordinator's show them.
    const boolq = await client.waitFor(
      (e) => e.event === "eval" && e.task === "boolq",
      "a boolq eval",
      150_000,
    );
    assert.equal(boolq.docs, 4);
    assert.equal(boolq.acc_norm, null);
    const arc = await client.waitFor(
      (e) => e.event === "eval" && e.task === "arc_easy",
      "an arc_easy eval",
      150_000,
    );
    const afterEvals = client.events.length;
    await client.waitFor(
      (e) => e.event === "witness" && client.events.indexOf(e) >= afterEvals,
      "a witness report after the evals",
      150_000,
    );
    const clientScrape = parsePrometheusText(await (await fetch(url)).text());
    // Another pass may have ended by the scrape: the value is one the client logged.
    const loggedEvals = (task: string, metric: string) =>
      client.events.filter((e) => e.event === "eval" && e.task === task).map((e) => e[metric]);
    assert.ok(
      loggedEvals("boolq", "acc").includes(
        sampleValue(clientScrape, "psyche_client_eval", { task: "boolq", metric: "acc" }),
      ),
    );
    assert.ok(
      loggedEvals("arc_easy", "acc_norm").includes(
        sampleValue(clientScrape, "psyche_client_eval", { task: "arc_easy", metric: "acc_norm" }),
      ),
    );
    assert.ok(arc.chunks as number >= 1);
    const dashboard = await server.waitForEvent((e) => e.event === "dashboard", 5_000, "dashboard");
    const runMetrics = parsePrometheusText(
      await (await fetch(new URL("/metrics", String(dashboard.url)))).text(),
    );
    const evals = runMetrics.samples.filter((s) => s.name === "psyche_eval");
    assert.deepEqual(
      evals.map((s) => s.labels.name).sort(),
      ["arc_easy_acc_norm", "boolq_acc"],
      JSON.stringify(evals),
    );
    assert.ok(evals.every((s) => s.value >= 0 && s.value <= 1));
    assert.equal(client.events.filter((e) => e.event === "eval_disabled").length, 0);

    assert.equal((await client.stop()).code, 0);
    await assert.rejects(fetch(url), "the endpoint closes with the client");
  } finally {
    await client.stop(); // again after a failed assertion: a no-op once it exited
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
