/**
 * Typed, path-tracking access to a parsed TOML table. Every read either returns a value of
 * the requested type or records a {@link ConfigIssue} naming the full key path and returns
 * `undefined`, so a reader walks the whole file and reports every problem in one pass.
 * Unknown keys are reported by {@link TableReader.finish}.
 *
 * Shared by the run-config reader (coordinator/config/read.ts) and the data-server config
 * (data/data_config.ts).
 *
 * @module
 */
import { parse, TomlError } from "smol-toml";
import { type ConfigIssue, renderKey, renderValue, tomlTypeName } from "./config_error.ts";
import { durationProblem, MAX_TIME_SECONDS } from "./time.ts";

/** Unsigned integer widths used by Psyche's config structs. `u64` is capped at 2^53 - 1. */
export type IntegerKind = "u8" | "u16" | "u32" | "u64";

/** Largest value of each {@link IntegerKind} (u64 limited to what a JS number holds exactly). */
export const INTEGER_MAX: Readonly<Record<IntegerKind, number>> = {
  u8: 0xff,
  u16: 0xffff,
  u32: 0xffff_ffff,
  u64: Number.MAX_SAFE_INTEGER,
};

/**
 * Why TOML integers past ±(2^53 − 1) are refused: smol-toml returns them as bigints (we ask
 * for `integersAsBigInt: "asNeeded"`), and a double cannot hold them exactly.
 */
const INEXACT_INTEGER = "beyond ±(2^53 − 1) = ±9007199254740991 cannot be held exactly";

/** A parsed TOML table. */
export type TomlTable = Record<string, unknown>;

/**
 * Parses TOML text into a table. Syntax errors become one issue at path `(toml)` with the
 * line and column; the result is then `undefined`.
 */
export function parseTomlText(text: string, issues: ConfigIssue[]): TomlTable | undefined {
  try {
    return parse(text, { integersAsBigInt: "asNeeded", unsafeKeyBehaviour: "throw" });
  } catch (error) {
    if (error instanceof TomlError) {
      const firstLine = error.message.split("\n")[0];
      issues.push({
        path: "(toml)",
        found: null,
        message: `syntax error at line ${error.line}, column ${error.column}: ${firstLine}`,
      });
      return undefined;
    }
    throw error;
  }
}

/** Joins a key onto a dotted path, quoting keys that are not bare TOML keys. */
export function joinPath(path: string, key: string): string {
  const part = renderKey(key);
  return path === "" ? part : `${path}.${part}`;
}

function isTable(value: unknown): value is TomlTable {
  return value !== null && typeof value === "object" && !Array.isArray(value) &&
    !(value instanceof Date);
}

/** The chosen variant of an externally tagged enum (serde's default enum encoding). */
export interface VariantChoice {
  /** Variant name, e.g. `"Cosine"`. */
  tag: string;
  /** Path of the variant's payload, e.g. `model.LLM.lr_schedule.Cosine`. */
  path: string;
  /**
   * A reader over the one-key table `{ tag = payload }`, to read the payload with the usual
   * typed getters; `null` when the variant was written as a bare string (a unit variant).
   */
  holder: TableReader | null;
}

/**
 * Reads typed values out of one TOML table, recording problems into a shared list.
 * Call {@link TableReader.finish} once every expected key has been read.
 */
export class TableReader {
  /** Dotted key path of this table (`""` for the document root). */
  readonly path: string;
  readonly #table: TomlTable;
  readonly #issues: ConfigIssue[];
  readonly #seen = new Set<string>();

  /** Reads `table`, found at key path `path`, recording problems into `issues`. */
  constructor(table: TomlTable, path: string, issues: ConfigIssue[]) {
    this.path = path;
    this.#table = table;
    this.#issues = issues;
  }

  /** Full path of `key` inside this table. */
  keyPath(key: string): string {
    return joinPath(this.path, key);
  }

  /** Whether `key` is present (does not mark it as read). */
  has(key: string): boolean {
    return Object.hasOwn(this.#table, key);
  }

  /** Records a problem about `key` of this table. */
  report(key: string, found: unknown, message: string): void {
    this.#issues.push({
      path: this.keyPath(key),
      found: found === undefined ? null : renderValue(found),
      message,
    });
  }

  /** The raw value of `key`, marking it read; reports it missing when absent. */
  raw(key: string, expected: string): unknown {
    this.#seen.add(key);
    if (!this.has(key)) {
      this.report(key, undefined, `missing (required: ${expected})`);
      return undefined;
    }
    return this.#table[key];
  }

  #wrongType(key: string, value: unknown, expected: string): undefined {
    this.report(key, value, `expected ${expected}, found ${tomlTypeName(value)}`);
    return undefined;
  }

  /** A required string. */
  string(key: string): string | undefined {
    const value = this.raw(key, "a string");
    if (value === undefined) return undefined;
    return typeof value === "string" ? value : this.#wrongType(key, value, "a string");
  }

  /** An optional string: `null` when absent, `undefined` after a reported problem. */
  optionalString(key: string): string | null | undefined {
    return this.has(key) ? this.string(key) : this.#absent(key);
  }

  /** A required unsigned integer of the given width. */
  integer(key: string, kind: IntegerKind): number | undefined {
    const expected = `a ${kind} integer (0..${INTEGER_MAX[kind]})`;
    const value = this.raw(key, expected);
    if (value === undefined) return undefined;
    if (typeof value === "bigint") {
      const why = kind === "u64" ? ` (an integer ${INEXACT_INTEGER})` : "";
      this.report(key, value, `out of range: expected ${expected}${why}`);
      return undefined;
    }
    if (typeof value !== "number" || !Number.isInteger(value)) {
      return this.#wrongType(key, value, expected);
    }
    if (value < 0 || value > INTEGER_MAX[kind]) {
      this.report(key, value, `out of range: expected ${expected}`);
      return undefined;
    }
    return value;
  }

  /** An unsigned integer that defaults to `fallback` when absent. */
  integerOr(key: string, kind: IntegerKind, fallback: number): number | undefined {
    if (this.has(key)) return this.integer(key, kind);
    this.#seen.add(key);
    return fallback;
  }

  /**
   * A required duration in seconds: a TOML integer (whole seconds) or float with at most
   * millisecond precision (`0.25`), in [0, `max`]. Rules such as "> 0" are the validator's.
   */
  seconds(key: string, max: number = MAX_TIME_SECONDS): number | undefined {
    const expected = `seconds (0..${max}, at most millisecond precision)`;
    const value = this.raw(key, expected);
    if (value === undefined) return undefined;
    if (typeof value === "bigint") {
      this.report(key, value, `out of range: expected ${expected}`);
      return undefined;
    }
    if (typeof value !== "number") return this.#wrongType(key, value, expected);
    const problem = durationProblem(value, max);
    if (problem !== null) {
      this.report(key, value, `${problem} (expected ${expected})`);
      return undefined;
    }
    return value;
  }

  /**
   * A required float (TOML integers are accepted, as serde does for f32/f64 fields). An integer
   * beyond ±(2^53 − 1) is refused: as a double it would silently become another number
   * (2^53 + 1 reads as 2^53).
   */
  float(key: string): number | undefined {
    const value = this.raw(key, "a number");
    if (value === undefined) return undefined;
    if (typeof value === "bigint") {
      this.report(key, value, `integer ${INEXACT_INTEGER}; write a float if you mean one`);
      return undefined;
    }
    return typeof value === "number" ? value : this.#wrongType(key, value, "a number");
  }

  /** An optional float: `null` when absent, `undefined` after a reported problem. */
  optionalFloat(key: string): number | null | undefined {
    return this.has(key) ? this.float(key) : this.#absent(key);
  }

  /** A required boolean. */
  boolean(key: string): boolean | undefined {
    const value = this.raw(key, "a boolean");
    if (value === undefined) return undefined;
    return typeof value === "boolean" ? value : this.#wrongType(key, value, "a boolean");
  }

  /** A required string that must be one of `allowed`. */
  oneOf<T extends string>(key: string, allowed: readonly T[]): T | undefined {
    const expected = `one of ${allowed.map((name) => JSON.stringify(name)).join(", ")}`;
    const value = this.raw(key, expected);
    if (value === undefined) return undefined;
    if (typeof value !== "string") return this.#wrongType(key, value, expected);
    if (!(allowed as readonly string[]).includes(value)) {
      this.report(key, value, `expected ${expected}`);
      return undefined;
    }
    return value as T;
  }

  /** An optional string from `allowed`: `fallback` when absent. */
  oneOfOr<T extends string>(key: string, allowed: readonly T[], fallback: T): T | undefined {
    if (this.has(key)) return this.oneOf(key, allowed);
    this.#seen.add(key);
    return fallback;
  }

  /** A required array (element types are the caller's to check). */
  array(key: string, expected: string): unknown[] | undefined {
    const value = this.raw(key, expected);
    if (value === undefined) return undefined;
    return Array.isArray(value) ? value : this.#wrongType(key, value, expected);
  }

  /** A required array of exactly `length` u8 integers (a seed or key). */
  bytes(key: string, length: number): Uint8Array | undefined {
    const expected = `an array of ${length} integers in 0..255`;
    const value = this.array(key, expected);
    if (value === undefined) return undefined;
    if (value.length !== length) {
      this.report(key, value, `expected ${expected}, found ${value.length} elements`);
      return undefined;
    }
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) {
      const byte = value[i];
      if (typeof byte !== "number" || !Number.isInteger(byte) || byte < 0 || byte > 0xff) {
        this.report(key, value, `element ${i} is ${renderValue(byte)}: expected ${expected}`);
        return undefined;
      }
      out[i] = byte;
    }
    return out;
  }

  /** A required sub-table, as a reader. */
  table(key: string): TableReader | undefined {
    const value = this.raw(key, "a table");
    if (value === undefined) return undefined;
    if (!isTable(value)) return this.#wrongType(key, value, "a table");
    return new TableReader(value, this.keyPath(key), this.#issues);
  }

  /** An optional sub-table: `null` when absent, `undefined` after a reported problem. */
  optionalTable(key: string): TableReader | null | undefined {
    return this.has(key) ? this.table(key) : this.#absent(key);
  }

  /**
   * An externally tagged enum: either a bare string naming a unit variant (`"Dummy"`) or a
   * table with exactly one key naming the variant (`{ Server = "host:port" }`,
   * `[x.Cosine] ...`). The payload is read by the caller through `holder`.
   */
  variant(key: string, variants: readonly string[]): VariantChoice | undefined {
    const expected = `one of the variants ${variants.join(", ")}`;
    const value = this.raw(key, expected);
    if (value === undefined) return undefined;
    const path = this.keyPath(key);
    let tag: string;
    let holder: TableReader | null = null;
    if (typeof value === "string") {
      tag = value;
    } else if (isTable(value)) {
      const tags = Object.keys(value);
      if (tags.length !== 1) {
        const found = tags.length === 0 ? "none" : `${tags.length} (${tags.join(", ")})`;
        this.report(
          key,
          value,
          `must name exactly one variant (${variants.join(" | ")}), found ${found}`,
        );
        return undefined;
      }
      tag = tags[0];
      holder = new TableReader(value, path, this.#issues);
    } else {
      return this.#wrongType(key, value, `a string or a table naming ${expected}`);
    }
    if (!variants.includes(tag)) {
      this.report(key, value, `unknown variant ${JSON.stringify(tag)} (expected ${expected})`);
      return undefined;
    }
    return { tag, path: joinPath(path, tag), holder };
  }

  /**
   * Reads a unit variant's (absent) payload: fine for the bare-string form, and for the
   * table form only when the payload is an empty table (`Dummy = {}`).
   */
  unitPayload(choice: VariantChoice): true | undefined {
    if (choice.holder === null) return true;
    const inner = choice.holder.table(choice.tag);
    if (inner === undefined) return undefined;
    inner.finish();
    return true;
  }

  /**
   * The holder of a variant that carries a payload; reports the bare-string form
   * (`data_location = "Server"`), which has none.
   */
  payload(choice: VariantChoice, expected: string): TableReader | undefined {
    if (choice.holder !== null) return choice.holder;
    this.#issues.push({
      path: choice.path,
      found: null,
      message: `variant ${choice.tag} needs a value (${expected}), not a bare string`,
    });
    return undefined;
  }

  /** Reports every key of this table that no getter asked for. Returns `this` for chaining. */
  finish(): this {
    for (const key of Object.keys(this.#table)) {
      if (!this.#seen.has(key)) {
        const known = [...this.#seen].join(", ");
        this.report(key, undefined, `unknown key (known keys here: ${known || "none"})`);
      }
    }
    return this;
  }

  #absent(key: string): null {
    this.#seen.add(key);
    return null;
  }
}
