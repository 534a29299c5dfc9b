/**
 * The dashboard's page and the files it loads: the HTML (with the view it is served with, so
 * it renders before any live update), its script (app.js) and uPlot's JS and CSS, taken from
 * the npm package in the module graph (deno.json's `uplot`), never from a CDN.
 *
 * @module
 */
import uplotJs from "uplot/dist/uPlot.iife.min.js" with { type: "text" };
import uplotCss from "uplot/dist/uPlot.min.css" with { type: "text" };
import appJs from "./app.js" with { type: "text" };
import type { DashboardView } from "./view.ts";

/** A static file the page loads. */
export interface Asset {
  readonly contentType: string;
  readonly body: string;
}

/** The page's static files, by path. */
export const ASSETS: Readonly<Record<string, Asset>> = {
  "/uplot.js": { contentType: "text/javascript; charset=utf-8", body: uplotJs },
  "/uplot.css": { contentType: "text/css; charset=utf-8", body: uplotCss },
  "/app.js": { contentType: "text/javascript; charset=utf-8", body: appJs },
};

const STYLE = `
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .5em; } h2 { font-size: 1.05em; margin: 1.2em 0 .4em; }
#run-state { color: #fff; padding: .15em .6em; border-radius: .3em; font-weight: 600; }
.facts span { margin-right: 1.5em; } .mono { font-family: ui-monospace, monospace; }
#timeline { display: flex; height: 22px; border: 1px solid #ccc; margin: .4em 0; }
.phase { min-width: 1px; } .legend { margin-right: 1em; font-size: .9em; }
.legend i { display: inline-block; width: .8em; height: .8em; margin-right: .3em; }
table { border-collapse: collapse; } td, th { padding: .2em .8em; border-bottom: 1px solid #eee; text-align: left; }
.status.Healthy { color: #2e7d32; } .status.Dropped, .status.Ejected, .bad { color: #c62828; }
.status.Pending { color: #ef6c00; } .status.Left, .status.Withdrawn { color: #777; }
#loss-chart, #breakdown-chart { max-width: 900px; } .grid { display: flex; gap: 3em; flex-wrap: wrap; }
`;

/** `json` made safe inside a `<script>` element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

/** The dashboard page, rendering `view` at load. */
export function dashboardPage(view: DashboardView): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>psyche coordinator dashboard</title>
<link rel="stylesheet" href="/uplot.css"><style>${STYLE}</style></head>
<body>
<h1>Psyche run <span id="run-id" class="mono"></span> <span id="run-state"></span>
<small id="live">loading…</small></h1>
<div class="facts"><span>epoch <b id="epoch"></b></span><span>step <b id="step"></b></span>
<span>round <b id="round"></b></span><span id="totals"></span>
<span>updated <span id="updated"></span></span></div>
<h2>Timeline</h2><div id="timeline"></div><div id="phase-times"></div>
<h2>Clients (<span id="client-count">0</span>)</h2>
<table id="clients"><thead><tr><th>key</th><th>status</th><th>last step</th><th>loss</th>
<th>tok/s</th><th>sent</th><th>received</th><th>witness reports</th><th>divergences</th><th>earned</th><th>slashed</th><th>evals</th></tr>
</thead>
<tbody id="clients-body"></tbody></table>
<div id="funds" hidden><h2>Treasury and pools (token base units)</h2>
<table><thead><tr><th>account</th><th>what</th><th>mint</th><th>held / deposited</th>
<th>claimable</th><th>claimed</th></tr></thead><tbody id="funds-body"></tbody></table></div>
<h2>Loss</h2><div id="loss-chart" data-points="0"></div>
<h2>Step time (mean of the clients' reports, ms)</h2><div id="breakdown-chart" data-steps="0"></div>
<div class="grid"><div><h2>Parameter digests a quorum agreed on</h2><ul id="digests"></ul></div>
<div><h2>Run config</h2><table><tbody id="config-body"></tbody></table></div></div>
<script id="initial-view" type="application/json">${scriptJson(view)}</script>
<script src="/uplot.js"></script>
<script src="/app.js"></script>
</body></html>
`;
}
