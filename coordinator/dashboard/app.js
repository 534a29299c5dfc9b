// The dashboard page's script (served at /app.js): renders the view model (view.ts) the page
// was served with, then every view the server streams at /events. uPlot (served at /uplot.js)
// draws the loss curves. Browser code: no modules, no build step.
/* global uPlot */
"use strict";

const STATE_COLOURS = {
  Uninitialized: "#9e9e9e",
  WaitingForMembers: "#b0bec5",
  Warmup: "#ffb74d",
  RoundTrain: "#4caf50",
  RoundWitness: "#2196f3",
  Cooldown: "#9c27b0",
  Finished: "#263238",
  Paused: "#f44336",
};
const SERIES_COLOURS = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4"];

// The parts of a step, bottom to top in the stacked chart (server/telemetry.ts STEP_PHASES).
const STEP_PHASES = ["train", "encode", "exchange", "apply", "wait"];
const PHASE_COLOURS = {
  train: "#4caf50",
  encode: "#ff9800",
  exchange: "#2196f3",
  apply: "#9c27b0",
  wait: "#bdbdbd",
};

const $ = (id) => document.getElementById(id);
const short = (key) => key.slice(0, 8);
const fixed = (x, digits) => (x === null || x === undefined ? "–" : x.toFixed(digits));

/** Bytes in binary units (B, KiB, MiB, GiB). */
function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = String(text);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function renderRun(view) {
  const state = $("run-state");
  state.textContent = view.runState ?? "unknown";
  state.style.background = STATE_COLOURS[view.runState] ?? "#ccc";
  document.body.dataset.runState = view.runState ?? "";
  $("run-id").textContent = view.runId ?? "";
  $("epoch").textContent = String(view.epoch);
  $("step").textContent = view.config
    ? `${view.step} / ${view.config.totalSteps}`
    : String(view.step);
  $("round").textContent = view.roundHeight === null ? "–" : String(view.roundHeight);
  const t = view.totals;
  const unattested = t.unattestedEpochs > 0 ? ` (${t.unattestedEpochs} unattested)` : "";
  const verified = t.verifications > 0
    ? `, ${t.verifications} verifications (${t.failedVerifications} failed), ${t.ejections} ejected`
    : "";
  $("totals").textContent = `${t.witnesses} witness reports, ${t.rounds} rounds, ${t.epochs} ` +
    `epochs ended${unattested}, ${t.divergences} divergences, ${t.rejections} refusals${verified}`;
}

function renderTimeline(view) {
  const bar = $("timeline");
  bar.replaceChildren();
  const now = Math.max(view.updatedMs, ...view.timeline.map((p) => p.startMs));
  const phases = view.timeline;
  if (phases.length === 0) return;
  const start = phases[0].startMs;
  const span = Math.max(1, now - start);
  for (const p of phases) {
    const end = p.endMs ?? now;
    const div = document.createElement("div");
    div.className = "phase";
    div.style.flexGrow = String(Math.max(0.002, (end - p.startMs) / span));
    div.style.background = STATE_COLOURS[p.state] ?? "#ccc";
    div.title = `${p.state}: epoch ${p.epoch}, step ${p.step}, ${
      ((end - p.startMs) / 1000).toFixed(1)
    } s`;
    bar.appendChild(div);
  }
  const legend = $("phase-times");
  legend.replaceChildren();
  for (const [state, spent] of Object.entries(view.phaseSeconds)) {
    if (spent.count === 0) continue;
    const span = document.createElement("span");
    span.className = "legend";
    span.innerHTML = `<i style="background:${STATE_COLOURS[state]}"></i>`;
    span.append(`${state} ${(spent.sum / spent.count).toFixed(1)} s × ${spent.count}`);
    legend.appendChild(span);
  }
}

function renderClients(view) {
  const body = $("clients-body");
  body.replaceChildren();
  for (const c of view.clients) {
    const row = document.createElement("tr");
    row.className = "client";
    row.dataset.key = c.key;
    cell(row, short(c.key), "mono");
    cell(row, c.status, `status ${c.status}`);
    cell(row, c.lastStep ?? "–");
    cell(row, fixed(c.loss, 4));
    cell(row, fixed(c.tokensPerSec, 0));
    cell(row, bytes(c.bytesSent), "bytes-sent").dataset.bytes = String(c.bytesSent ?? "");
    cell(row, bytes(c.bytesReceived), "bytes-received").dataset.bytes = String(
      c.bytesReceived ?? "",
    );
    cell(row, c.witnesses);
    cell(row, c.divergences, c.divergences > 0 ? "bad" : "");
    cell(row, c.earned ?? "–", "earned");
    cell(
      row,
      c.slashed ?? "–",
      c.slashed !== null && c.slashed !== "0" ? "slashed bad" : "slashed",
    );
    const evals = Object.entries(c.evals ?? {});
    cell(
      row,
      evals.length === 0 ? "–" : evals.map(([n, v]) => `${n} ${fixed(v, 3)}`).join(", "),
      "evals",
    );
    body.appendChild(row);
  }
  $("client-count").textContent = String(view.clients.length);
}

function renderDigests(view) {
  const list = $("digests");
  list.replaceChildren();
  for (const d of [...view.digests].reverse()) {
    const li = document.createElement("li");
    li.textContent = `step ${d.step}: ${d.digest.slice(0, 16)}… (${d.agreeing} agree` +
      (d.differing > 0 ? `, ${d.differing} differ)` : ")");
    if (d.differing > 0) li.className = "bad";
    list.appendChild(li);
  }
}

/** The run's treasury and pools (Solana), hidden when the view has none. */
function renderFunds(view) {
  const funds = view.funds;
  $("funds").hidden = funds === null || funds === undefined;
  const body = $("funds-body");
  body.replaceChildren();
  if ($("funds").hidden) return;
  const row = (cls, address, what, mint, held, claimable, claimed) => {
    const tr = document.createElement("tr");
    tr.className = cls;
    tr.dataset.address = address;
    cell(tr, address, "mono");
    cell(tr, what);
    cell(tr, short(mint), "mono");
    cell(tr, held, "held");
    cell(tr, claimable, "claimable");
    cell(tr, claimed, "claimed");
    body.appendChild(tr);
  };
  const t = funds.treasury;
  if (t === null) row("treasury", "", "no treasury", "", "–", "–", "–");
  else row("treasury", t.address, "treasury vault", t.mint, t.vaultAmount, "–", t.totalClaimed);
  for (const p of funds.pools) {
    row(
      "pool",
      p.address,
      "pool",
      p.rewardsMint,
      p.totalDeposited,
      p.totalClaimable,
      p.totalClaimed,
    );
  }
}

function renderConfig(view) {
  const body = $("config-body");
  body.replaceChildren();
  for (const [name, value] of Object.entries(view.config ?? {})) {
    const row = document.createElement("tr");
    cell(row, name);
    cell(row, value, "mono");
    body.appendChild(row);
  }
}

/** Aligned uPlot data: x = every reported step, one series per client, then the mean. */
function lossData(view) {
  const keys = view.clients.map((c) => c.key).filter((k) => (view.loss[k] ?? []).length > 0);
  const steps = [...new Set(view.meanLoss.map((p) => p.step))].sort((a, b) => a - b);
  const at = new Map(steps.map((s, i) => [s, i]));
  const series = keys.map((k) => {
    const ys = new Array(steps.length).fill(null);
    for (const p of view.loss[k]) if (at.has(p.step)) ys[at.get(p.step)] = p.loss;
    return ys;
  });
  const mean = steps.map((s) => view.meanLoss.find((p) => p.step === s)?.loss ?? null);
  const points = series.reduce((n, ys) => n + ys.filter((y) => y !== null).length, 0);
  return { keys, data: [steps, ...series, mean], points };
}

let chart = null;
let chartKeys = "";

function renderLoss(view) {
  const box = $("loss-chart");
  const { keys, data, points } = lossData(view);
  box.dataset.points = String(points);
  box.dataset.steps = String(data[0].length);
  if (typeof uPlot !== "function") {
    box.textContent = "uPlot did not load";
    return;
  }
  const signature = keys.join(",");
  if (chart === null || signature !== chartKeys) {
    chart?.destroy();
    chartKeys = signature;
    chart = new uPlot(
      {
        width: Math.max(320, box.clientWidth || 720),
        height: 300,
        scales: { x: { time: false } },
        axes: [{ label: "step" }, { label: "loss" }],
        series: [
          { label: "step" },
          ...keys.map((k, i) => ({
            label: short(k),
            stroke: SERIES_COLOURS[i % SERIES_COLOURS.length],
            width: 1,
            spanGaps: true,
            points: { show: true, size: 4 },
          })),
          { label: "mean", stroke: "#000", width: 2.5, spanGaps: true },
        ],
      },
      data,
      box,
    );
  } else {
    chart.setData(data);
  }
}

/**
 * Stacked uPlot data of the mean breakdown: x = step, then one series per phase holding the
 * sum of that phase and every phase below it, top phase first so each fill paints over the one
 * above it (uPlot has no stacking of its own).
 */
function breakdownData(view) {
  const points = view.breakdown;
  const steps = points.map((p) => p.step);
  const sums = [];
  let below = points.map(() => 0);
  for (const phase of STEP_PHASES) {
    below = points.map((p, i) => below[i] + p[phase]);
    sums.push(below);
  }
  return [steps, ...sums.reverse()];
}

let breakdownChart = null;

function renderBreakdown(view) {
  const box = $("breakdown-chart");
  const data = breakdownData(view);
  box.dataset.steps = String(data[0].length);
  if (typeof uPlot !== "function" || data[0].length === 0) return;
  if (breakdownChart !== null) {
    breakdownChart.setData(data);
    return;
  }
  const phases = [...STEP_PHASES].reverse();
  // The legend shows each phase's own time, not the stacked sum.
  const own = (u, si, i) => {
    const top = u.data[si][i];
    const under = si < phases.length ? u.data[si + 1][i] : 0;
    return top === null || top === undefined ? null : top - under;
  };
  breakdownChart = new uPlot(
    {
      width: Math.max(320, box.clientWidth || 720),
      height: 240,
      scales: { x: { time: false } },
      axes: [{ label: "step" }, { label: "ms" }],
      series: [
        { label: "step" },
        ...phases.map((phase) => ({
          label: phase,
          stroke: PHASE_COLOURS[phase],
          fill: PHASE_COLOURS[phase] + "cc",
          width: 1,
          value: (u, _v, si, i) => {
            const ms = i === null ? null : own(u, si, i);
            return ms === null ? "–" : ms.toFixed(0);
          },
        })),
      ],
    },
    data,
    box,
  );
}

function render(view) {
  renderRun(view);
  renderTimeline(view);
  renderClients(view);
  renderLoss(view);
  renderBreakdown(view);
  renderDigests(view);
  renderFunds(view);
  renderConfig(view);
  $("updated").textContent = view.updatedMs ? new Date(view.updatedMs).toLocaleTimeString() : "";
}

const initial = JSON.parse($("initial-view").textContent);
render(initial);

// Live updates start after the page has loaded, so a one-shot reader (a headless browser's
// --dump-dom) sees the page rendered from the view it was served with. `?live=0` opens no stream
// at all: a headless browser's --virtual-time-budget waits for open requests to end.
const live = new URLSearchParams(location.search).get("live") !== "0";
if (!live) $("live").textContent = "snapshot";
addEventListener("load", () => {
  if (!live) return;
  const source = new EventSource("/events");
  source.addEventListener("view", (e) => render(JSON.parse(e.data)));
  source.onopen = () => ($("live").textContent = "live");
  source.onerror = () => ($("live").textContent = "reconnecting…");
});
