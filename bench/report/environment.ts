/**
 * The machine a benchmark ran on, described from raw inputs the edge reads (`/proc/cpuinfo`,
 * `/etc/os-release`, dpkg's status file, `Deno.loadavg()`, the WebGPU adapter's info), so a
 * figure can carry where it came from. Pure: every function takes text or numbers, never reads.
 *
 * @example
 * ```ts
 * import { parseCpuinfo } from "./environment.ts";
 * const cpu = parseCpuinfo("processor\t: 0\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\n" +
 *   "model name\t: AMD EPYC\n");
 * if (cpu?.model !== "AMD EPYC" || cpu.cores !== 2) throw new Error("cpuinfo misread");
 * ```
 *
 * @module
 */

/** The CPU as `/proc/cpuinfo` names it. */
export interface CpuInfo {
  /** `model name` of the first processor (the same on every core of one machine). */
  readonly model: string;
  /** Logical processors listed (`processor` lines). */
  readonly cores: number;
}

/** What the WebGPU adapter says of itself (`GPUAdapterInfo`); empty strings where it says nothing. */
export interface AdapterInfo {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
}

/** `Deno.loadavg()`: the 1, 5 and 15 minute load averages. */
export type LoadAverage = readonly [number, number, number];

/** Everything the edge gathers before and after a run, raw. */
export interface RawEnvironment {
  /** Text of `/proc/cpuinfo`, or null where there is none (not Linux). */
  readonly cpuinfo: string | null;
  /** CPU model and count from the runtime (`os.cpus()`), used when cpuinfo is missing. */
  readonly fallbackCpu: CpuInfo;
  /** `Deno.systemMemoryInfo().total`, bytes. */
  readonly memoryBytes: number;
  /** Text of `/etc/os-release`, or null. */
  readonly osRelease: string | null;
  /** `Deno.build.os`, `Deno.build.arch` and `Deno.osRelease()` (the kernel). */
  readonly os: { readonly name: string; readonly arch: string; readonly kernel: string };
  /** `Deno.version`. */
  readonly deno: { readonly deno: string; readonly v8: string; readonly typescript: string };
  /** The adapter's info, or null when WebGPU gave no adapter. */
  readonly adapter: AdapterInfo | null;
  /** Text of `/var/lib/dpkg/status`, or null (not a Debian-like system). */
  readonly dpkgStatus: string | null;
  readonly loadBefore: LoadAverage;
  readonly loadAfter: LoadAverage;
  /** When the run started and ended. */
  readonly startedAt: Date;
  readonly endedAt: Date;
}

/** The environment as a report shows it. */
export interface Environment {
  readonly cpu: CpuInfo;
  readonly arch: string;
  readonly memoryBytes: number;
  /** e.g. `Debian GNU/Linux 12 (bookworm), Linux 6.1.0`. */
  readonly os: string;
  readonly deno: { readonly deno: string; readonly v8: string; readonly typescript: string };
  readonly adapter: AdapterInfo | null;
  /** Mesa's version from the installed Vulkan drivers, null when unknown. */
  readonly mesa: string | null;
  readonly loadBefore: LoadAverage;
  readonly loadAfter: LoadAverage;
  /** ISO 8601, UTC. */
  readonly startedAt: string;
  readonly endedAt: string;
}

/** Model name and processor count of `/proc/cpuinfo` text; null when it lists no processor. */
export function parseCpuinfo(text: string): CpuInfo | null {
  let cores = 0;
  let model: string | null = null;
  for (const line of text.split("\n")) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (key === "processor") cores++;
    // x86 says `model name`; some ARM kernels say only `Hardware` or `CPU part`.
    else if (model === null && (key === "model name" || key === "Hardware")) model = value;
  }
  return cores === 0 ? null : { model: model ?? "unknown", cores };
}

/** `PRETTY_NAME` (else `NAME VERSION_ID`) of `/etc/os-release` text; null when neither. */
export function parseOsRelease(text: string): string | null {
  const fields = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m !== null) fields.set(m[1], m[2].replace(/^"(.*)"$/, "$1"));
  }
  const pretty = fields.get("PRETTY_NAME");
  if (pretty !== undefined && pretty !== "") return pretty;
  const name = fields.get("NAME");
  if (name === undefined) return null;
  const version = fields.get("VERSION_ID");
  return version === undefined ? name : `${name} ${version}`;
}

/**
 * The installed version of `pkg` in dpkg's status file (paragraphs of `Key: value`), only when
 * its status is `install ok installed`; null otherwise.
 */
export function dpkgVersion(status: string, pkg: string): string | null {
  for (const paragraph of status.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    for (const line of paragraph.split("\n")) {
      const m = /^([A-Za-z-]+):\s*(.*)$/.exec(line);
      if (m !== null) fields.set(m[1], m[2].trim());
    }
    if (fields.get("Package") !== pkg) continue;
    if (fields.get("Status") !== "install ok installed") continue;
    return fields.get("Version") ?? null;
  }
  return null;
}

/** Mesa's packages, the Vulkan drivers (lavapipe) first. */
const MESA_PACKAGES = ["mesa-vulkan-drivers", "libgl1-mesa-dri", "libglx-mesa0"];

/**
 * Mesa's version: from the adapter's description where it names Mesa (`Mesa 23.1.2`), else
 * from dpkg's Mesa packages (the upstream part: `22.3.6-1+deb12u1` gives `22.3.6`).
 */
export function mesaVersion(adapter: AdapterInfo | null, dpkgStatus: string | null): string | null {
  const named = adapter === null ? null : /\bMesa ([0-9][\w.-]*)/.exec(adapter.description);
  if (named !== null) return named[1];
  if (dpkgStatus === null) return null;
  for (const pkg of MESA_PACKAGES) {
    const version = dpkgVersion(dpkgStatus, pkg);
    if (version !== null) return version.replace(/^\d+:/, "").replace(/-[^-]*$/, "");
  }
  return null;
}

/** The report's environment from what the edge read. */
export function describeEnvironment(raw: RawEnvironment): Environment {
  const cpu = (raw.cpuinfo === null ? null : parseCpuinfo(raw.cpuinfo)) ?? raw.fallbackCpu;
  const distro = raw.osRelease === null ? null : parseOsRelease(raw.osRelease);
  const kernel = `${raw.os.name === "linux" ? "Linux" : raw.os.name} ${raw.os.kernel}`;
  return {
    cpu,
    arch: raw.os.arch,
    memoryBytes: raw.memoryBytes,
    os: distro === null ? kernel : `${distro}, ${kernel}`,
    deno: raw.deno,
    adapter: raw.adapter,
    mesa: mesaVersion(raw.adapter, raw.dpkgStatus),
    loadBefore: raw.loadBefore,
    loadAfter: raw.loadAfter,
    startedAt: raw.startedAt.toISOString(),
    endedAt: raw.endedAt.toISOString(),
  };
}
