/**
 * A writer of the Prometheus text exposition format (version 0.0.4): metric families, each with
 * its `# HELP` and `# TYPE` lines, then its samples. The coordinator's dashboard and the
 * training client each declare their metrics as a table of {@linkcode MetricSpec} and write
 * their view through {@linkcode prometheusText}.
 *
 * Pure.
 *
 * @example
 * ```ts
 * import { prometheusText } from "./prometheus.ts";
 * const text = prometheusText({ up: ["gauge", "Always 1."] }, [
 *   { name: "up", samples: [{ labels: { job: 'a "b"' }, value: 1 }] },
 * ]);
 * if (!text.includes('up{job="a \\"b\\""} 1\n')) throw new Error(text);
 * ```
 *
 * @module
 */

/** The content type of the exposition format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** A metric's Prometheus type and help line. */
export type MetricSpec = readonly ["gauge" | "counter" | "summary", string];

/** One sample of a family: a name suffix (a summary's `_sum`, `_count`), labels, value. */
export interface MetricSample {
  readonly suffix?: "_sum" | "_count";
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

/** One family to write: a name of the spec table and its samples (none is fine). */
export interface MetricFamily<N extends string> {
  readonly name: N;
  readonly samples: readonly MetricSample[];
}

/** A label value escaped as the format asks (backslash, double quote, newline). */
export function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** A sample value as the format writes it (`NaN`, `+Inf`, `-Inf` spelled out). */
export function formatMetricValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

function labels(pairs: Readonly<Record<string, string>>): string {
  const parts = Object.entries(pairs).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/**
 * `families` in the text format, each declared from `specs`. Throws a RangeError for a family
 * written twice (the format allows one block per family).
 */
export function prometheusText<N extends string>(
  specs: Readonly<Record<N, MetricSpec>>,
  families: readonly MetricFamily<N>[],
): string {
  const out: string[] = [];
  const written = new Set<string>();
  for (const { name, samples } of families) {
    if (written.has(name)) throw new RangeError(`metric family ${name} written twice`);
    written.add(name);
    const [type, help] = specs[name];
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const s of samples) {
      out.push(`${name}${s.suffix ?? ""}${labels(s.labels ?? {})} ${formatMetricValue(s.value)}`);
    }
  }
  return out.join("\n") + "\n";
}
