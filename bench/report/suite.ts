/**
 * The key benchmarks `deno task bench-report` runs: each a bench file, the `deno bench --filter`
 * that picks the figures (always with their group's baseline, so every ratio is measured in the
 * same run), and whether `--quick` keeps it. Data only.
 *
 * @module
 */

/** One entry of the report: one `deno bench --json` process. */
export interface SuiteEntry {
  /** Short name, for `--only` and the report's headings. */
  readonly id: string;
  /** What the figures say, one line. */
  readonly title: string;
  /** The bench file, from the repository root. */
  readonly file: string;
  /** `deno bench --filter` (a `/regex/` or a substring); every bench when absent. */
  readonly filter?: string;
  /** Kept by `--quick` (the quick set runs in under a minute on 2 busy cores). */
  readonly quick: boolean;
  /** `--quick`'s narrower filter, where the full one takes too long. */
  readonly quickFilter?: string;
}

/** Every entry, cheapest first. */
export const SUITE: readonly SuiteEntry[] = [
  {
    id: "coordinator-round",
    title: "one full coordinator round (ticks, selection, assignment, every witness)",
    file: "coordinator/core/machine_bench.ts",
    filter: "/^full round, /",
    quick: true,
    quickFilter: "/^full round, (32|1024) clients$/",
  },
  {
    id: "state-encoding",
    title: "the coordinator state's binary encoding, encode against decode",
    file: "coordinator/encoding/encoding_bench.ts",
    quick: true,
    quickFilter: "/, 256 clients/",
  },
  {
    id: "matmul",
    title: "WebGPU f32 matmul at the 20M model's shapes against plain TypeScript (the baseline)",
    file: "shaders/matmul_bench.ts",
    quick: true,
    quickFilter: "qkv/mlp-up",
  },
  {
    id: "client-round",
    title: "a client's round on the tiny Llama: train into a DisTrO result, apply peers' results",
    file: "client/trainer_bench.ts",
    quick: true,
  },
  {
    id: "data",
    title: "token data: every provider over the Brown train split, parquet (Preprocessed) " +
      "against the .ds file it was written from",
    file: "data/data_bench.ts",
    quick: false,
  },
  {
    id: "distro",
    title: "DisTrO's optimizer work against an AdamW training step of the 20M model",
    file: "optimizer/distro_bench.ts",
    quick: false,
  },
];

/**
 * The entries a run takes: the quick ones for `quick`, then only those named in `only` (all
 * when empty). Throws {@link RangeError} naming an id that is not in the suite.
 */
export function selectEntries(
  options: { quick: boolean; only: readonly string[] },
  suite: readonly SuiteEntry[] = SUITE,
): SuiteEntry[] {
  for (const id of options.only) {
    if (!suite.some((e) => e.id === id)) {
      throw new RangeError(
        `--only: no bench "${id}" (expected one of ${suite.map((e) => e.id).join(", ")})`,
      );
    }
  }
  return suite.filter((e) =>
    (!options.quick || e.quick) && (options.only.length === 0 || options.only.includes(e.id))
  );
}

/** The `deno bench` arguments of one entry. */
export function benchArgs(entry: SuiteEntry, quick: boolean): string[] {
  const filter = quick ? entry.quickFilter ?? entry.filter : entry.filter;
  return [
    "bench",
    "-A",
    "--json",
    ...(filter === undefined ? [] : ["--filter", filter]),
    entry.file,
  ];
}
