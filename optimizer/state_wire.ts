/**
 * A trainer's DisTrO state as bytes: what a sampled trainer serves to its verifiers, and what
 * its results' state digests are the sha256 of (docs/protocol.md, "Verification"). The state is
 * exactly what the GPU optimizer reads and loads (`DistroState`): the residual δ and the last own
 * result (unquantized), whose values the next step subtracts from δ.
 *
 * Layout (little-endian):
 *
 * | field | bytes |
 * |---|---|
 * | magic `"DSTA"` | 4 |
 * | version (1) | 1 |
 * | flags (bit 0: an own result follows; others 0) | 1 |
 * | reserved (0) | 2 |
 * | P (floats of δ) u32, E (own entries) u32 | 8 |
 * | δ: f32 × P | 4P |
 * | with flag bit 0: own indices u32 × E, own values f32 × E | 8E |
 *
 * Pure. The decoder is the one entry point for untrusted state bytes: it checks every length and
 * that every float is finite and every index below its chunk's size.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { ChunkLayout } from "./layout.ts";
import type { DistroState } from "./optimizer.ts";

/** First four bytes of every encoded state. */
export const STATE_MAGIC = new Uint8Array([0x44, 0x53, 0x54, 0x41]); // "DSTA"
/** The state format version written and accepted. */
export const STATE_VERSION = 1;
const HEADER_BYTES = 16;
const FLAG_OWN = 1;

/** State bytes that are not a valid state of the expected model; `where` names the spot. */
export class StateDecodeError extends Error {
  constructor(readonly where: string, detail: string) {
    super(`Invalid DisTrO state at ${where}: ${detail}`);
    this.name = "StateDecodeError";
  }
}

/** The shape a state must have: the model's chunk layouts, in parameter order. */
export interface StateShape {
  /** Floats of δ: the flat parameter buffer's size (padding between parameters included). */
  readonly size: number;
  readonly layouts: readonly ChunkLayout[];
}

/** Own-result entries of a model: Σ chunks·k over its parameters. */
export function stateEntries(layouts: readonly ChunkLayout[]): number {
  let e = 0;
  for (const l of layouts) e += l.chunks * l.k;
  return e;
}

/** The exact byte sizes a state of `shape` may have: without and with an own result. */
export function stateBytes(shape: StateShape): { withoutOwn: number; withOwn: number } {
  const withoutOwn = HEADER_BYTES + 4 * shape.size;
  return { withoutOwn, withOwn: withoutOwn + 8 * stateEntries(shape.layouts) };
}

/** Encodes `state` for `shape`; RangeError when its sizes do not match. */
export function encodeState(state: DistroState, shape: StateShape): Uint8Array {
  const entries = stateEntries(shape.layouts);
  if (state.delta.length !== shape.size) {
    throw new RangeError(`state δ holds ${state.delta.length} floats, the model ${shape.size}`);
  }
  const own = state.own;
  if (own !== null && (own.indices.length !== entries || own.values.length !== entries)) {
    throw new RangeError(
      `state own result holds ${own.indices.length} indices and ${own.values.length} values, ` +
        `the model ${entries} entries`,
    );
  }
  const sizes = stateBytes(shape);
  const out = new Uint8Array(own === null ? sizes.withoutOwn : sizes.withOwn);
  const view = new DataView(out.buffer);
  out.set(STATE_MAGIC, 0);
  view.setUint8(4, STATE_VERSION);
  view.setUint8(5, own === null ? 0 : FLAG_OWN);
  view.setUint32(8, shape.size, true);
  view.setUint32(12, entries, true);
  // Little-endian hosts: the typed arrays' bytes are the layout's.
  out.set(new Uint8Array(state.delta.buffer, state.delta.byteOffset, 4 * shape.size), 16);
  if (own !== null) {
    const at = 16 + 4 * shape.size;
    out.set(new Uint8Array(own.indices.buffer, own.indices.byteOffset, 4 * entries), at);
    out.set(
      new Uint8Array(own.values.buffer, own.values.byteOffset, 4 * entries),
      at + 4 * entries,
    );
  }
  return out;
}

/**
 * Decodes untrusted state bytes for `shape`: the magic, version, flags, sizes, every float finite,
 * every own index below its chunk's coefficient count, no trailing byte. Throws only
 * {@link StateDecodeError}. The arrays returned are copies.
 */
export function decodeState(bytes: Uint8Array, shape: StateShape): DistroState {
  const entries = stateEntries(shape.layouts);
  const sizes = stateBytes(shape);
  if (bytes.length !== sizes.withoutOwn && bytes.length !== sizes.withOwn) {
    throw new StateDecodeError(
      "size",
      `${bytes.length} bytes, expected ${sizes.withoutOwn} or ${sizes.withOwn}`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!STATE_MAGIC.every((b, i) => bytes[i] === b)) {
    throw new StateDecodeError("magic", `expected "DSTA", found [${bytes.subarray(0, 4)}]`);
  }
  if (view.getUint8(4) !== STATE_VERSION) {
    throw new StateDecodeError("version", `expected ${STATE_VERSION}, found ${view.getUint8(4)}`);
  }
  const flags = view.getUint8(5);
  if ((flags & ~FLAG_OWN) !== 0 || view.getUint16(6, true) !== 0) {
    throw new StateDecodeError("flags", `unknown flags ${flags} or reserved bits set`);
  }
  const hasOwn = flags === FLAG_OWN;
  if (bytes.length !== (hasOwn ? sizes.withOwn : sizes.withoutOwn)) {
    throw new StateDecodeError("size", `${bytes.length} bytes do not match the own-result flag`);
  }
  if (view.getUint32(8, true) !== shape.size || view.getUint32(12, true) !== entries) {
    throw new StateDecodeError(
      "sizes",
      `P ${view.getUint32(8, true)} and E ${view.getUint32(12, true)}, expected ${shape.size} ` +
        `and ${entries}`,
    );
  }
  const delta = new Float32Array(bytes.slice(16, 16 + 4 * shape.size).buffer);
  const bad = delta.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) throw new StateDecodeError(`δ[${bad}]`, `${delta[bad]} is not finite`);
  if (!hasOwn) return { kind: "distro", delta, own: null };
  const at = 16 + 4 * shape.size;
  const indices = new Uint32Array(bytes.slice(at, at + 4 * entries).buffer);
  const values = new Float32Array(bytes.slice(at + 4 * entries, at + 8 * entries).buffer);
  let e = 0;
  for (const l of shape.layouts) {
    for (let i = 0; i < l.chunks * l.k; i++, e++) {
      if (indices[e] >= l.totalk) {
        throw new StateDecodeError(
          `own index ${e} ("${l.name}")`,
          `${indices[e]} is not below the chunk size ${l.totalk}`,
        );
      }
      if (!Number.isFinite(values[e])) {
        throw new StateDecodeError(`own value ${e} ("${l.name}")`, `${values[e]} is not finite`);
      }
    }
  }
  return { kind: "distro", delta, own: { indices, values } };
}

/** sha256 of state bytes: the digest a result's state chain names. */
export function stateDigest(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(bytes).digest());
}

const zeroDigests = new Map<string, Uint8Array>();

/**
 * The digest of the zero state of `shape` (δ all zero, no own result): where every trainer's
 * chain starts, and starts again after a cold start. Memoized per shape.
 */
export function zeroStateDigest(shape: StateShape): Uint8Array {
  const key = `${shape.size}:${stateEntries(shape.layouts)}`;
  let digest = zeroDigests.get(key);
  if (digest === undefined) {
    const zero = encodeState(
      { kind: "distro", delta: new Float32Array(shape.size), own: null },
      shape,
    );
    digest = stateDigest(zero);
    zeroDigests.set(key, digest);
  }
  return digest;
}
