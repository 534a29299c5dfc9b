/**
 * `deno task bench-report`: the edge of the benchmark report. Reads the machine (/proc/cpuinfo,
 * /etc/os-release, dpkg's status, the WebGPU adapter, the load average), runs each chosen bench
 * file as its own `deno bench --json` process, one after another, and prints the report
 * (format.ts) on stdout. The benches' own output goes to stderr, so stdout is the report alone.
 *
 * ```sh
 * deno task bench-report --quick            # Markdown, about a minute
 * deno task bench-report --json > run.json  # every entry, for machines
 * ```
 *
 * @module
 */
import { cpus } from "node:os";
import { BENCH_REPORT_SPEC, benchReportOptions } from "./cli.ts";
import { type AdapterInfo, describeEnvironment, type LoadAverage } from "./environment.ts";
import { BenchOutputError, parseBenchJson } from "./figures.ts";
import { type EntryResult, formatJson, formatMarkdown, type Report, reportOk } from "./format.ts";
import { benchArgs, selectEntries, type SuiteEntry } from "./suite.ts";
import { EXIT_INVALID, parseOrExit } from "../../cli/entry.ts";
import { requestGpuAdapter } from "../../shaders/mod.ts";

const ROOT = new URL("../../", import.meta.url);

async function readOrNull(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return null;
  }
}

/** The adapter's info without opening a device; null when there is no WebGPU adapter. */
async function adapterInfo(): Promise<AdapterInfo | null> {
  const adapter = await requestGpuAdapter();
  if (!adapter) return null;
  const { vendor, architecture, device, description } = adapter.info;
  return { vendor, architecture, device, description };
}

function loadavg(): LoadAverage {
  const [a, b, c] = Deno.loadavg();
  return [a, b, c];
}

/** Runs one entry's `deno bench --json`; its console output and progress go to our stderr. */
async function runEntry(entry: SuiteEntry, quick: boolean): Promise<EntryResult> {
  const args = benchArgs(entry, quick);
  const command = `deno ${args.map((a) => /[^\w./=-]/.test(a) ? `'${a}'` : a).join(" ")}`;
  const base = { id: entry.id, title: entry.title, file: entry.file, command };
  const t0 = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const seconds = (performance.now() - t0) / 1e3;
  const stdout = new TextDecoder().decode(out.stdout);
  try {
    const run = parseBenchJson(stdout, ROOT.href);
    // Whatever the module printed before the JSON (its adapter, its tables) is kept for the reader.
    const printed = stdout.slice(0, stdout.lastIndexOf('{\n  "version"')).trim();
    if (printed !== "") console.error(printed);
    const error = out.code === 0 || run.failed.length > 0 ? null : `exit status ${out.code}`;
    return { ...base, ...run, error, seconds };
  } catch (e) {
    if (!(e instanceof BenchOutputError)) throw e;
    const error = `exit status ${out.code}: ${e.message}`;
    return { ...base, figures: [], failed: [], error, seconds };
  }
}

const options = parseOrExit(BENCH_REPORT_SPEC, benchReportOptions);
const entries = selectEntries(options);
const startedAt = new Date();
const loadBefore = loadavg();
const [cpuinfo, osRelease, dpkgStatus, adapter] = await Promise.all([
  readOrNull("/proc/cpuinfo"),
  readOrNull("/etc/os-release"),
  readOrNull("/var/lib/dpkg/status"),
  adapterInfo(),
]);
const results: EntryResult[] = [];
for (const entry of entries) {
  console.error(`bench-report: ${entry.id} (${entry.file})`);
  results.push(await runEntry(entry, options.quick));
}
const environment = describeEnvironment({
  cpuinfo,
  fallbackCpu: { model: cpus()[0]?.model ?? "unknown", cores: cpus().length },
  memoryBytes: Deno.systemMemoryInfo().total,
  osRelease,
  os: { name: Deno.build.os, arch: Deno.build.arch, kernel: Deno.osRelease() },
  deno: Deno.version,
  adapter,
  dpkgStatus,
  loadBefore,
  loadAfter: loadavg(),
  startedAt,
  endedAt: new Date(),
});
const flags = [options.quick ? " --quick" : "", ...options.only.map((id) => ` --only ${id}`)];
const report: Report = {
  command: `deno task bench-report${flags.join("")}`,
  environment,
  entries: results,
};
console.log(options.json ? formatJson(report) : formatMarkdown(report));
if (!reportOk(report)) Deno.exit(EXIT_INVALID);
