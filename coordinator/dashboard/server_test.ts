import assert from "node:assert/strict";
import { coordinatorFromToml, type ServerEvent } from "../server/mod.ts";
import { startDashboard } from "./server.ts";
import { snapshotOf } from "./snapshot.ts";
import { parsePrometheusText, sampleValue } from "./testing/prometheus_text.ts";
import type { DashboardView } from "./view.ts";

const A = "aa".repeat(32);

async function demoState() {
  const text = await Deno.readTextFile(new URL("../../config/demo/state.toml", import.meta.url));
  return coordinatorFromToml(text, "config/demo/state.toml", 0);
}

const witness: ServerEvent = {
  kind: "Witness",
  client: A,
  index: 0,
  height: 1,
  metadata: {
    step: 1,
    tokensPerSec: 185,
    bandwidthPerSec: 0,
    loss: 3.4359,
    evals: [],
    promptResults: [],
    promptIndex: 0,
    efficiency: 1,
  },
  digest: null,
};

/** Reads `view` events off an SSE response until `done` says stop. */
async function readViews(
  response: Response,
  done: (views: DashboardView[]) => boolean,
): Promise<DashboardView[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const views: DashboardView[] = [];
  let buffer = "";
  try {
    while (!done(views)) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        assert.match(frame, /^event: view\ndata: /);
        views.push(JSON.parse(frame.slice(frame.indexOf("data: ") + 6)));
      }
    }
  } finally {
    await reader.cancel();
  }
  return views;
}

Deno.test("the dashboard serves its page, assets, view, live stream and metrics over HTTP", async () => {
  const state = await demoState();
  const dashboard = startDashboard({
    port: 0,
    snapshot: () => snapshotOf(state),
    clock: () => 5000,
  });
  try {
    assert.match(dashboard.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const page = await fetch(dashboard.url);
    assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
    const html = await page.text();
    assert.match(html, /<script src="\/uplot.js"><\/script>/);
    assert.match(html, /"runId":"llama-bytes-brown"/);
    for (
      const [path, type, marker] of [
        ["/uplot.js", "text/javascript", "uPlot"],
        ["/uplot.css", "text/css", ".uplot"],
        ["/app.js", "text/javascript", "EventSource"],
      ]
    ) {
      const r = await fetch(dashboard.url + path);
      assert.ok(r.headers.get("content-type")!.startsWith(type), path);
      assert.ok((await r.text()).includes(marker), path);
    }

    const live = await fetch(`${dashboard.url}/events`);
    assert.equal(live.headers.get("content-type"), "text/event-stream");
    const viewsPromise = readViews(live, (views) => views.some((v) => v.clients.length > 0));
    dashboard.publish(witness);
    const views = await viewsPromise;
    assert.equal(views[0].runState, "WaitingForMembers");
    assert.deepEqual(views.at(-1)!.loss[A], [{ step: 1, loss: 3.4359 }]);

    const json = await (await fetch(`${dashboard.url}/view.json`)).json();
    assert.equal(json.clients[0].key, A);

    const metrics = await fetch(`${dashboard.url}/metrics`);
    assert.match(metrics.headers.get("content-type")!, /^text\/plain; version=0\.0\.4/);
    const scraped = parsePrometheusText(await metrics.text());
    assert.equal(sampleValue(scraped, "psyche_loss", { client: "aa".repeat(8) }), 3.4359);
    assert.equal(sampleValue(scraped, "psyche_run_state", { state: "WaitingForMembers" }), 1);

    assert.equal(await (await fetch(`${dashboard.url}/nope`)).text(), "not found\n");
    const post = await fetch(dashboard.url, { method: "POST", body: "x" });
    await post.body?.cancel();
    assert.equal(post.status, 405);
  } finally {
    await dashboard.close();
  }
});

Deno.test("closing the dashboard ends open live streams and frees the port", async () => {
  const state = await demoState();
  const dashboard = startDashboard({ port: 0, snapshot: () => snapshotOf(state) });
  const live = await fetch(`${dashboard.url}/events`);
  const reading = live.body!.pipeTo(new WritableStream()).catch(() => {});
  await dashboard.close();
  await reading;
  const again = Deno.listen({ hostname: "127.0.0.1", port: dashboard.port });
  again.close();
});
