/**
 * The report of `deno task bench-report`: the environment first, then each figure beside its
 * same-run baseline and their ratio, as Markdown ready to paste into docs/benchmarks.md, or as
 * JSON for machines. Pure.
 *
 * @module
 */
import type { Environment, LoadAverage } from "./environment.ts";
import type { FailedBench, Figure } from "./figures.ts";

/** One suite entry's outcome. */
export interface EntryResult {
  readonly id: string;
  readonly title: string;
  readonly file: string;
  /** The `deno bench` command line, as a user would type it. */
  readonly command: string;
  readonly figures: readonly Figure[];
  readonly failed: readonly FailedBench[];
  /** Why the entry gave no figures at all (the process failed), null when it ran. */
  readonly error: string | null;
  /** Wall time of the entry's process, seconds. */
  readonly seconds: number;
}

/** A whole report. */
export interface Report {
  /** How it was run: `deno task bench-report --quick`. */
  readonly command: string;
  readonly environment: Environment;
  readonly entries: readonly EntryResult[];
}

/** A duration in nanoseconds with three significant digits and the unit that fits. */
export function formatDuration(ns: number): string {
  const [value, unit] = ns < 1e3
    ? [ns, "ns"]
    : ns < 1e6
    ? [ns / 1e3, "µs"]
    : ns < 1e9
    ? [ns / 1e6, "ms"]
    : [ns / 1e9, "s"];
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${unit}`;
}

/** Bytes as GiB with one decimal. */
function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

function load(l: LoadAverage): string {
  return l.map((x) => x.toFixed(2)).join(" / ");
}

/** `2026-11-26T00:51:03.123Z` as `2026-11-26 00:51 UTC`. */
export function utcMinute(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** Text safe inside a Markdown table cell. */
function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

/** The environment as a two-column Markdown table. */
export function environmentTable(env: Environment): string[] {
  const a = env.adapter;
  const adapter = a === null
    ? "none (no WebGPU adapter)"
    : `\`${a.description || "?"}\` (vendor ${a.vendor || "-"}, architecture ${
      a.architecture || "-"
    }, device ${a.device || "-"})`;
  const seconds = (Date.parse(env.endedAt) - Date.parse(env.startedAt)) / 1e3;
  const rows: [string, string][] = [
    ["date", `${utcMinute(env.startedAt)} (${seconds.toFixed(0)} s)`],
    ["CPU", `${env.cpu.model}, ${env.cpu.cores} cores (${env.arch})`],
    ["memory", gib(env.memoryBytes)],
    ["OS", env.os],
    ["Deno", `${env.deno.deno} (V8 ${env.deno.v8}, TypeScript ${env.deno.typescript})`],
    ["WebGPU adapter", adapter],
    ["Mesa", env.mesa ?? "unknown"],
    [
      "load average (1 / 5 / 15 min)",
      `${load(env.loadBefore)} before, ${load(env.loadAfter)} after`,
    ],
  ];
  return ["| environment | |", "| --- | --- |", ...rows.map(([k, v]) => `| ${k} | ${cell(v)} |`)];
}

function figureRow(f: Figure): string {
  const baseline = f.isBaseline
    ? "(this is the baseline)"
    : f.baseline === null
    ? "-"
    : `${cell(f.baseline.name)}: ${formatDuration(f.baseline.avgNs)}`;
  const ratio = f.isBaseline ? "1.00x" : f.ratio === null ? "-" : `${f.ratio.toFixed(2)}x`;
  return `| ${cell(f.name)} | ${formatDuration(f.avgNs)} | ${
    formatDuration(f.minNs)
  } | ${f.n} | ${baseline} | ${ratio} |`;
}

/** One entry as a heading line, its command, and its figures' table. */
export function entrySection(e: EntryResult): string[] {
  const out = [`**${e.id}**: ${e.title}. \`${e.command}\`, ${e.seconds.toFixed(0)} s.`, ""];
  if (e.error !== null) return [...out, `Failed: ${e.error}`];
  out.push(
    "| bench | mean | min | runs | baseline (same run): mean | ÷ baseline |",
    "| --- | --: | --: | --: | --- | --: |",
    ...e.figures.map(figureRow),
  );
  for (const f of e.failed) out.push("", `Bench "${f.name}" threw: ${f.error}`);
  return out;
}

/**
 * The whole report as Markdown: a heading with the command and date, the environment, then one
 * section per entry. "÷ baseline" is mean time over the baseline's mean (under 1: faster).
 */
export function formatMarkdown(report: Report): string {
  const env = report.environment;
  const out = [
    `#### \`${report.command}\`, ${utcMinute(env.startedAt)}`,
    "",
    ...environmentTable(env),
    "",
    'Times are per iteration; "÷ baseline" is the mean over its group\'s baseline mean, both from ' +
    "this run (under 1.00x: faster than the baseline).",
  ];
  for (const e of report.entries) out.push("", ...entrySection(e));
  return out.join("\n") + "\n";
}

/** The report as one JSON document (nanoseconds, ISO dates). */
export function formatJson(report: Report): string {
  return JSON.stringify(report, null, 2) + "\n";
}

/** Whether every entry ran and no bench threw. */
export function reportOk(report: Report): boolean {
  return report.entries.every((e) => e.error === null && e.failed.length === 0);
}
