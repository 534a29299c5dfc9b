/**
 * The JSON file a run's `data_location = { WeightedHttp = "https://.../mix.json" }` points at
 * (Psyche's `WeightedHttpProvidersConfig`): the datasets of the mix, each an `Http` data
 * location, with their weights, and the shuffle of the mix's samples.
 *
 * ```json
 * {
 *   "shuffle": { "Seeded": [1, 2, 3, ..., 32] },
 *   "providers": [
 *     [{ "location": { "SingleUrl": "https://data.example/web.ds" },
 *        "token_size_in_bytes": "TwoBytes", "shuffle": "DontShuffle" }, 0.7],
 *     [{ "location": { "NumberedFiles": { "url_template": "https://data.example/code/{}.ds",
 *        "start_index": 0, "n_left_pad_zeros": 3, "num_files": 4 } },
 *        "token_size_in_bytes": "TwoBytes", "shuffle": "DontShuffle" }, 0.3]
 *   ]
 * }
 * ```
 *
 * `providers` is either a list of `[location, weight]` pairs (Psyche's `ExplicitlyWeighted`:
 * weights > 0, normalised to their sum) or a list of locations (`LengthWeighted`: each dataset
 * weighs its number of sequences). Each location has the keys and rules of the run config's
 * `data_location.Http` (docs/run-config.md). Unknown keys are refused (Psyche ignores them).
 * Parsing is pure; the provider fetches the file (data/factory.ts).
 *
 * @module
 */
import {
  ConfigError,
  type ConfigIssue,
  type DataLocation,
  renderValue,
  type Shuffle,
  TableReader,
} from "../common/mod.ts";
import {
  readHttpDataLocation,
  readShuffle,
  validateHttpDataLocation,
} from "../coordinator/config/mod.ts";

/** An `Http` data location: one dataset of a mix. */
export type HttpDataLocation = Extract<DataLocation, { kind: "Http" }>;

/** One dataset of a weighted mix. */
export interface WeightedHttpEntry {
  /** Where its token files are. */
  location: HttpDataLocation;
  /** Its weight (> 0), or `null` in a `LengthWeighted` mix. */
  weight: number | null;
}

/** A validated weighted-mix file. */
export interface WeightedHttpConfig {
  /** Shuffle of the mix's samples (each dataset's own shuffle is in its location). */
  shuffle: Shuffle;
  /** The datasets, in order; all have weights, or none. */
  providers: WeightedHttpEntry[];
}

/**
 * Parses and validates a weighted mix's JSON. Throws {@linkcode ConfigError} listing every
 * problem, each with its JSON path (`providers[1][0].location.SingleUrl`).
 *
 * @example
 * ```ts
 * import { parseWeightedHttpConfig } from "./weighted_config.ts";
 * const http = (url: string) => ({
 *   location: { SingleUrl: url },
 *   token_size_in_bytes: "TwoBytes",
 *   shuffle: "DontShuffle",
 * });
 * const text = JSON.stringify({
 *   shuffle: "DontShuffle",
 *   providers: [[http("https://a.example/a.ds"), 3], [http("https://b.example/b.ds"), 1]],
 * });
 * const mix = parseWeightedHttpConfig(text, "mix.json");
 * if (mix.providers[1].weight !== 1) throw new Error("wrong weight");
 * ```
 */
export function parseWeightedHttpConfig(text: string, source: string): WeightedHttpConfig {
  const issues: ConfigIssue[] = [];
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(source, [{
      path: "(json)",
      found: null,
      message: `not valid JSON: ${(e as Error).message}`,
    }]);
  }
  if (!isObject(doc)) {
    throw new ConfigError(source, [{
      path: "(json)",
      found: renderValue(doc),
      message: "expected an object with keys shuffle and providers",
    }]);
  }
  const root = new TableReader(doc, "", issues);
  const shuffle = readShuffle(root);
  const list = root.array("providers", "a list of [location, weight] pairs, or of locations");
  root.finish();
  const providers: WeightedHttpEntry[] = [];
  if (list !== undefined && list.length === 0) {
    root.report("providers", list, "must list at least one dataset");
  }
  const paired = list !== undefined && list.length > 0 && Array.isArray(list[0]);
  list?.forEach((item, i) => {
    const entry = readEntry(item, `providers[${i}]`, paired, issues);
    if (entry !== undefined) providers.push(entry);
  });
  if (issues.length > 0 || shuffle === undefined || list === undefined) {
    throw new ConfigError(source, issues);
  }
  return { shuffle, providers };
}

function readEntry(
  item: unknown,
  path: string,
  paired: boolean,
  issues: ConfigIssue[],
): WeightedHttpEntry | undefined {
  const issue = (at: string, found: unknown, message: string) =>
    issues.push({ path: at, found: found === undefined ? null : renderValue(found), message });
  let locationValue = item;
  let weight: number | null = null;
  let locationPath = path;
  if (paired) {
    if (!Array.isArray(item) || item.length !== 2) {
      issue(
        path,
        item,
        "expected a [location, weight] pair, as providers[0] is (give every dataset a weight, " +
          "or none)",
      );
      return undefined;
    }
    [locationValue] = item;
    locationPath = `${path}[0]`;
    const w = item[1];
    if (typeof w !== "number" || !Number.isFinite(w) || w <= 0) {
      issue(
        `${path}[1]`,
        w,
        "expected a weight: a number > 0 (leave a dataset out rather than weighting it 0)",
      );
    } else {
      weight = w;
    }
  }
  if (!isObject(locationValue)) {
    const hint = paired
      ? "expected an Http location { location, token_size_in_bytes, shuffle }"
      : "expected an Http location { location, token_size_in_bytes, shuffle }, as providers[0] " +
        "is (give every dataset a weight, or none)";
    issue(locationPath, locationValue, hint);
    return undefined;
  }
  const reader = new TableReader(locationValue, locationPath, issues);
  const location = readHttpDataLocation(reader);
  reader.finish();
  if (location === undefined) return undefined;
  const broken = validateHttpDataLocation(locationPath, location);
  issues.push(...broken);
  if (broken.length > 0 || (paired && weight === null)) return undefined;
  return { location, weight };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
