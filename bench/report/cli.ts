/**
 * Command-line flags of `deno task bench-report`, declared once (cli/flags.ts parses them and
 * writes `--help`), and their check into typed options.
 *
 * @module
 */
import type { ParsedFlags } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";
import { selectEntries, SUITE } from "./suite.ts";

/** The flags of `deno task bench-report`. */
export const BENCH_REPORT_SPEC = {
  usage: "deno task bench-report [--quick] [--json] [--only ID ...]",
  summary: "Prints the machine first (CPU, memory, OS, Deno, the WebGPU adapter, Mesa, load " +
    "average before and after, date UTC), then runs the project's key benchmarks with " +
    "`deno bench --json` and prints each figure beside its group's baseline from the same run " +
    "and their ratio, as Markdown ready to paste into docs/benchmarks.md.",
  flags: {
    quick: {
      type: "boolean",
      description: "a short subset (about a minute on 2 cores): " +
        SUITE.filter((e) => e.quick).map((e) => e.id).join(", "),
    },
    json: { type: "boolean", description: "print the report as JSON instead of Markdown" },
    only: {
      type: "string",
      value: "ID",
      multiple: true,
      description: `run only these benches: ${SUITE.map((e) => e.id).join(", ")}`,
    },
  },
  footer: "Exit status: 0 every bench ran, 1 a bench failed (the report still prints), " +
    "2 bad flags.",
} as const;

/** What one report run does. */
export interface BenchReportOptions {
  readonly quick: boolean;
  readonly json: boolean;
  /** Suite ids to run; empty: all (of the quick set, with `quick`). */
  readonly only: readonly string[];
}

/** The options of parsed flags; throws {@link UsageError} for an `--only` id not in the suite. */
export function benchReportOptions(
  parsed: ParsedFlags<typeof BENCH_REPORT_SPEC>,
): BenchReportOptions {
  const options = {
    quick: parsed.values.quick === true,
    json: parsed.values.json === true,
    only: parsed.values.only ?? [],
  };
  try {
    selectEntries(options);
  } catch (e) {
    if (e instanceof RangeError) throw new UsageError(e.message);
    throw e;
  }
  return options;
}
