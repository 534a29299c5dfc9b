/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for tests that scrape
 * `/metrics`: every sample must belong to a family declared by `# HELP` and `# TYPE` before
 * it, carry a valid name, labels and value, and appear once.
 *
 * @module
 */

/** One sample: its full name (with `_sum`/`_count`), labels and value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A scraped exposition. */
export interface Exposition {
  /** Family name -> type. */
  readonly types: ReadonlyMap<string, string>;
  readonly help: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/;
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/;

function parseValue(text: string, line: number): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  const value = Number(text);
  if (text.trim() === "" || Number.isNaN(value)) {
    throw new SyntaxError(`line ${line}: value "${text}" is not a number`);
  }
  return value;
}

function parseLabels(text: string, line: number): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = text;
  while (rest.length > 0) {
    const m = LABEL.exec(rest);
    if (m === null) throw new SyntaxError(`line ${line}: bad labels "${text}"`);
    if (Object.hasOwn(labels, m[1])) throw new SyntaxError(`line ${line}: label ${m[1]} twice`);
    labels[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    rest = rest.slice(m[0].length);
  }
  return labels;
}

/** The family a sample name belongs to (a summary's `_sum` and `_count` belong to it). */
function familyOf(name: string, types: ReadonlyMap<string, string>): string | undefined {
  if (types.has(name)) return name;
  const m = /^(.*)_(sum|count)$/.exec(name);
  return m !== null && types.get(m[1]) === "summary" ? m[1] : undefined;
}

/** Parses `text`; throws a SyntaxError naming the line of the first problem. */
export function parsePrometheusText(text: string): Exposition {
  if (!text.endsWith("\n")) throw new SyntaxError("the exposition must end with a newline");
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  const samples: Sample[] = [];
  const seen = new Set<string>();
  text.slice(0, -1).split("\n").forEach((raw, i) => {
    const line = i + 1;
    if (raw.startsWith("# HELP ") || raw.startsWith("# TYPE ")) {
      const [, kind, name, ...rest] = raw.split(" ");
      if (!NAME.test(name)) throw new SyntaxError(`line ${line}: bad metric name "${name}"`);
      const map = kind === "HELP" ? help : types;
      if (map.has(name)) throw new SyntaxError(`line ${line}: second ${kind} for ${name}`);
      const value = rest.join(" ");
      if (
        kind === "TYPE" && !["gauge", "counter", "summary", "histogram", "untyped"].includes(value)
      ) {
        throw new SyntaxError(`line ${line}: unknown type "${value}"`);
      }
      map.set(name, value);
      return;
    }
    if (raw.startsWith("#") || raw === "") return;
    const m = SAMPLE.exec(raw);
    if (m === null) throw new SyntaxError(`line ${line}: not a sample: "${raw}"`);
    const family = familyOf(m[1], types);
    if (family === undefined) {
      throw new SyntaxError(`line ${line}: ${m[1]} has no # TYPE before it`);
    }
    if (!help.has(family)) throw new SyntaxError(`line ${line}: ${family} has no # HELP`);
    const labels = parseLabels(m[3] ?? "", line);
    const series = `${m[1]}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(series)) throw new SyntaxError(`line ${line}: series ${series} appears twice`);
    seen.add(series);
    samples.push({ name: m[1], labels, value: parseValue(m[4], line) });
  });
  return { types, help, samples };
}

/** The value of the one sample `name` with `labels` (a subset), or undefined. */
export function sampleValue(
  exposition: Exposition,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const hits = exposition.samples.filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  if (hits.length > 1) throw new Error(`${hits.length} samples of ${name} match`);
  return hits[0]?.value;
}
