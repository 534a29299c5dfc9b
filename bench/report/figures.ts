/**
 * Figures from `deno bench --json`: each bench's mean time beside the baseline of its group
 * (`baseline: true`, measured in the same run) and the ratio of the two. Pure: takes the
 * command's stdout as text.
 *
 * @module
 */

/** One bench of one run, and where it stands against its group's baseline. */
export interface Figure {
  /** The bench file, from the repository root. */
  readonly file: string;
  /** The bench's group, "" when it has none. */
  readonly group: string;
  readonly name: string;
  /** This bench is its group's baseline. */
  readonly isBaseline: boolean;
  /** Iterations timed. */
  readonly n: number;
  /** Mean and fastest time of one iteration, nanoseconds. */
  readonly avgNs: number;
  readonly minNs: number;
  /** The group's baseline bench, null when the group has none (or this is it). */
  readonly baseline: { readonly name: string; readonly avgNs: number } | null;
  /** avgNs ÷ the baseline's avgNs: under 1 is faster than the baseline. */
  readonly ratio: number | null;
}

/** A bench that ran but threw, with Deno's message. */
export interface FailedBench {
  readonly file: string;
  readonly name: string;
  readonly error: string;
}

/** What one `deno bench --json` run gave. */
export interface BenchRun {
  readonly figures: Figure[];
  readonly failed: FailedBench[];
}

/** Thrown when `deno bench --json` output is not what version 1 of its format says. */
export class BenchOutputError extends Error {
  override name = "BenchOutputError";
}

interface RawBench {
  origin: string;
  group: string | null;
  name: string;
  baseline: boolean;
  results: ({ ok: Record<string, number> } | { failed: string })[];
}

/** The JSON document in stdout: the bench modules' own console output comes before it. */
function jsonPart(stdout: string): unknown {
  const start = stdout.lastIndexOf('{\n  "version"');
  if (start < 0) throw new BenchOutputError("no `deno bench --json` document in the output");
  try {
    return JSON.parse(stdout.slice(start));
  } catch (e) {
    throw new BenchOutputError(`the bench JSON does not parse: ${(e as Error).message}`);
  }
}

function checkBench(b: unknown, i: number): RawBench {
  const r = b as Partial<RawBench>;
  const ok = typeof r === "object" && r !== null && typeof r.origin === "string" &&
    typeof r.name === "string" && (r.group === null || typeof r.group === "string" ||
      r.group === undefined) &&
    Array.isArray(r.results) && r.results.length > 0;
  if (!ok) throw new BenchOutputError(`bench ${i} lacks origin, name or results`);
  return r as RawBench;
}

/** `file:///root/dir/x_bench.ts` as `dir/x_bench.ts` when under `root` (a file URL ending `/`). */
function relative(origin: string, root: string): string {
  return origin.startsWith(root) ? origin.slice(root.length) : origin;
}

/**
 * The figures of one `deno bench --json` run. `root` is the repository's file URL (ending in
 * `/`), so files read from the root. Throws {@link BenchOutputError} for output of another shape.
 */
export function parseBenchJson(stdout: string, root: string): BenchRun {
  const doc = jsonPart(stdout) as { version?: unknown; benches?: unknown };
  if (doc.version !== 1) {
    throw new BenchOutputError(`expected bench JSON version 1, found ${String(doc.version)}`);
  }
  if (!Array.isArray(doc.benches)) throw new BenchOutputError("the bench JSON has no benches");
  const benches = doc.benches.map(checkBench);
  const timed = new Map<RawBench, { n: number; avg: number; min: number }>();
  const failed: FailedBench[] = [];
  for (const b of benches) {
    const result = b.results[0];
    if ("failed" in result) {
      failed.push({ file: relative(b.origin, root), name: b.name, error: String(result.failed) });
      continue;
    }
    const { n, avg, min } = result.ok ?? {};
    if (![n, avg, min].every((x) => typeof x === "number" && Number.isFinite(x) && x >= 0)) {
      throw new BenchOutputError(`bench "${b.name}" has no finite n, avg and min`);
    }
    timed.set(b, { n, avg, min });
  }
  const figures: Figure[] = [];
  for (const [b, t] of timed) {
    const base = [...timed].find(([o]) =>
      o !== b && o.baseline && o.origin === b.origin && (o.group ?? "") === (b.group ?? "") &&
      (b.group ?? "") !== ""
    );
    const baseline = base === undefined ? null : { name: base[0].name, avgNs: base[1].avg };
    figures.push({
      file: relative(b.origin, root),
      group: b.group ?? "",
      name: b.name,
      isBaseline: b.baseline === true && (b.group ?? "") !== "",
      n: t.n,
      avgNs: t.avg,
      minNs: t.min,
      baseline,
      ratio: baseline === null || baseline.avgNs === 0 ? null : t.avg / baseline.avgNs,
    });
  }
  return { figures, failed };
}
