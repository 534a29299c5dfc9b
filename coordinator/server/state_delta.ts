/**
 * A state push as the difference from the state this connection received last. Every push is
 * the whole coordinator state, and consecutive states share most of their bytes (the config,
 * the model, the clients, the stored rounds' witness blooms): at 256 clients a state is about
 * 120 kB, and a round's change to it a few kB. Pure: no I/O.
 *
 * The difference is a list of operations that rebuild the new bytes: copy a range of the base,
 * or insert literal bytes. It is found the way rsync finds it: the base's blocks of
 * {@link DELTA_BLOCK_BYTES} are indexed by a rolling hash, the new bytes are scanned a byte at a
 * time for a window matching one of them, and each match is grown forwards and backwards as
 * far as the bytes agree. Fields that grow or shrink (a witness added, a client gone) shift
 * everything after them, and the scan finds the shifted blocks anyway.
 *
 * @module
 */

/** Block size of the base's index: shorter finds more matches, longer keeps the index small. */
export const DELTA_BLOCK_BYTES = 32;

/** One operation of a delta. */
export type DeltaOp =
  | { readonly kind: "copy"; readonly offset: number; readonly length: number }
  | { readonly kind: "insert"; readonly bytes: Uint8Array };

/** A delta that does not fit its base: a copy out of range, or not the announced length. */
export class DeltaError extends Error {
  /** Always `"DeltaError"`. */
  override name = "DeltaError";
}

const PRIME = 0x01000193;
/** PRIME^(DELTA_BLOCK_BYTES - 1) mod 2^32: the weight of the byte leaving the window. */
const OUT_WEIGHT = (() => {
  let w = 1;
  for (let i = 1; i < DELTA_BLOCK_BYTES; i++) w = Math.imul(w, PRIME);
  return w >>> 0;
})();

function windowHash(bytes: Uint8Array, at: number): number {
  let h = 0;
  for (let i = 0; i < DELTA_BLOCK_BYTES; i++) h = (Math.imul(h, PRIME) + bytes[at + i]) >>> 0;
  return h;
}

function roll(h: number, out: number, into: number): number {
  return (Math.imul((h - Math.imul(out, OUT_WEIGHT)) >>> 0, PRIME) + into) >>> 0;
}

function sameWindow(a: Uint8Array, at: number, b: Uint8Array, bt: number): boolean {
  for (let i = 0; i < DELTA_BLOCK_BYTES; i++) if (a[at + i] !== b[bt + i]) return false;
  return true;
}

/** The operations that rebuild `next` from `base`. */
export function diffBytes(base: Uint8Array, next: Uint8Array): DeltaOp[] {
  const B = DELTA_BLOCK_BYTES;
  const ops: DeltaOp[] = [];
  const index = new Map<number, number>();
  for (let at = 0; at + B <= base.length; at += B) {
    const h = windowHash(base, at);
    if (!index.has(h)) index.set(h, at);
  }
  let literal = 0; // where the bytes not yet covered by an operation start
  const insertUpTo = (end: number) => {
    if (end > literal) ops.push({ kind: "insert", bytes: next.slice(literal, end) });
  };
  let i = 0;
  let h = next.length >= B ? windowHash(next, 0) : 0;
  while (i + B <= next.length) {
    const found = index.get(h);
    if (found !== undefined && sameWindow(base, found, next, i)) {
      let from = found;
      let start = i;
      // Grow backwards over bytes still pending as literal, then forwards.
      while (start > literal && from > 0 && base[from - 1] === next[start - 1]) {
        from--;
        start--;
      }
      let end = i + B;
      while (end < next.length && from + (end - start) < base.length) {
        if (base[from + (end - start)] !== next[end]) break;
        end++;
      }
      insertUpTo(start);
      const last = ops.at(-1);
      if (last?.kind === "copy" && last.offset + last.length === from && literal === start) {
        ops[ops.length - 1] = {
          kind: "copy",
          offset: last.offset,
          length: last.length + end - start,
        };
      } else {
        ops.push({ kind: "copy", offset: from, length: end - start });
      }
      literal = end;
      i = end;
      if (i + B <= next.length) h = windowHash(next, i);
      continue;
    }
    if (i + B < next.length) h = roll(h, next[i], next[i + B]);
    i++;
  }
  insertUpTo(next.length);
  return ops;
}

/**
 * Rebuilds the bytes `ops` describe from `base`; {@link DeltaError} when a copy reaches past
 * the base or the result is not `length` bytes long (checked before anything is allocated).
 */
export function applyDelta(base: Uint8Array, ops: readonly DeltaOp[], length: number): Uint8Array {
  let total = 0;
  for (const op of ops) {
    if (op.kind === "copy") {
      if (op.offset + op.length > base.length) {
        throw new DeltaError(
          `copy of ${op.length} bytes at ${op.offset} reaches past the ${base.length}-byte base`,
        );
      }
      total += op.length;
    } else {
      total += op.bytes.length;
    }
  }
  if (total !== length) {
    throw new DeltaError(`the operations make ${total} bytes, the delta announced ${length}`);
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const op of ops) {
    if (op.kind === "copy") {
      out.set(base.subarray(op.offset, op.offset + op.length), at);
      at += op.length;
    } else {
      out.set(op.bytes, at);
      at += op.bytes.length;
    }
  }
  return out;
}

/** Bytes the operations take on the wire (see `encodeServerMessage`'s `StateDelta`). */
export function deltaWireBytes(ops: readonly DeltaOp[]): number {
  let n = 0;
  for (const op of ops) n += op.kind === "copy" ? 9 : 5 + op.bytes.length;
  return n;
}
