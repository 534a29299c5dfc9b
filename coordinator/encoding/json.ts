/**
 * A readable JSON form of {@linkcode CoordinatorState}, for logs, debugging endpoints and
 * saved snapshots: byte strings (keys, seeds, bloom bits, Merkle roots) become lower-case
 * hex, bigints (round seeds, bloom keys) decimal strings; everything else is as in the
 * state. `JSON.stringify(coordinatorStateToJson(s))` is valid JSON text.
 *
 * {@linkcode coordinatorStateFromJson} is strict: it accepts exactly what
 * {@linkcode coordinatorStateToJson} produces for a state the binary layout can carry
 * (same validation as encoding.ts), and rejects unknown keys, wrong types and bad hex
 * with an error naming the path.
 *
 * @module
 */

import { fromHex, toHex } from "../../common/mod.ts";
import type { CoordinatorState } from "../core/mod.ts";
import { decodeCoordinatorState } from "./read.ts";
import { encodeCoordinatorState } from "./write.ts";

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Keys whose values are byte strings (hex in JSON). */
const BYTES_KEYS = new Set(["signer", "p2pIdentity", "seed", "bits", "broadcastMerkle", "digest"]);
/** Keys whose values are u64 bigints (decimal strings in JSON). */
const BIGINT_KEYS = new Set(["randomSeed"]);
/** Keys whose values are arrays of u64 bigints (arrays of decimal strings in JSON). */
const BIGINT_ARRAY_KEYS = new Set(["keys"]);

function toJsonValue(v: unknown): Json {
  if (v instanceof Uint8Array) return toHex(v);
  if (v instanceof BigUint64Array) return Array.from(v, (x) => x.toString());
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) return v.map(toJsonValue);
  if (typeof v === "object" && v !== null) {
    const out: { [key: string]: Json } = {};
    for (const [k, x] of Object.entries(v)) out[k] = toJsonValue(x);
    return out;
  }
  return v as Json;
}

/**
 * The JSON form of `state` (hex for byte strings, decimal strings for bigints).
 *
 * @example
 * ```ts
 * import { coordinatorStateFromJson, coordinatorStateToJson } from "./json.ts";
 * import { testState } from "../../tests/support/coordinator_fixtures.ts";
 * const text = JSON.stringify(coordinatorStateToJson(testState()), null, 2);
 * const again = coordinatorStateFromJson(JSON.parse(text));
 * if (again.config.maxClients !== testState().config.maxClients) throw new Error("round trip");
 * ```
 */
export function coordinatorStateToJson(state: CoordinatorState): Json {
  return toJsonValue(state);
}

function parseU64(path: string, v: unknown): bigint {
  if (typeof v !== "string" || !/^(0|[1-9][0-9]{0,19})$/.test(v)) {
    throw new TypeError(`${path} must be a decimal u64 string, found ${JSON.stringify(v)}`);
  }
  const x = BigInt(v);
  if (x >= 1n << 64n) throw new RangeError(`${path} = ${v} does not fit in a u64`);
  return x;
}

function fromJsonValue(path: string, key: string, v: unknown): unknown {
  if (BYTES_KEYS.has(key)) {
    if (typeof v !== "string") {
      throw new TypeError(`${path} must be a hex string, found ${JSON.stringify(v)}`);
    }
    try {
      return fromHex(v);
    } catch (e) {
      throw new TypeError(`${path}: ${(e as Error).message}`);
    }
  }
  if (BIGINT_KEYS.has(key)) return parseU64(path, v);
  if (BIGINT_ARRAY_KEYS.has(key)) {
    if (!Array.isArray(v)) throw new TypeError(`${path} must be an array of decimal strings`);
    return BigUint64Array.from(v.map((x, i) => parseU64(`${path}[${i}]`, x)));
  }
  if (Array.isArray(v)) return v.map((x, i) => fromJsonValue(`${path}[${i}]`, "", x));
  if (typeof v === "object" && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = fromJsonValue(path ? `${path}.${k}` : k, k, x);
    return out;
  }
  return v;
}

/** The first path where `a` and `b` differ, or null when they are equal JSON values. */
function firstDifference(path: string, a: unknown, b: unknown): string | null {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return path;
    for (let i = 0; i < a.length; i++) {
      const d = firstDifference(`${path}[${i}]`, a[i], b[i]);
      if (d !== null) return d;
    }
    return null;
  }
  if (
    typeof a === "object" && a !== null && typeof b === "object" && b !== null &&
    !Array.isArray(a) && !Array.isArray(b)
  ) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const d = firstDifference(
        path ? `${path}.${k}` : k,
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
      );
      if (d !== null) return d;
    }
    return null;
  }
  return Object.is(a, b) ? null : path;
}

/**
 * The state whose JSON form is `json` (a parsed value, not text). Throws TypeError or
 * RangeError naming the path of the first problem: a missing or unknown key, a wrong
 * type, bad hex, a value out of range or over its cap.
 */
export function coordinatorStateFromJson(json: unknown): CoordinatorState {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new TypeError(`Coordinator state JSON must be an object, found ${typeof json}`);
  }
  const candidate = fromJsonValue("", "", json) as CoordinatorState;
  // The binary codec validates every field; decoding gives the canonical value.
  const state = decodeCoordinatorState(encodeCoordinatorState(candidate));
  const diff = firstDifference("", coordinatorStateToJson(state), json);
  if (diff !== null) {
    throw new TypeError(`Coordinator state JSON: unexpected key or value at ${diff}`);
  }
  return state;
}
