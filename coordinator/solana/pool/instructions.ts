/**
 * The mining pool's instructions: one closed union, its byte encoding (a u8 tag, then the
 * fields, little-endian and packed, as pool.c reads them) and a decoder that checks every
 * length and range.
 *
 * @module
 */

/** Every instruction of the mining pool program. */
export type PoolInstruction =
  | { kind: "PoolCreate"; index: bigint; maxDeposit: bigint }
  | { kind: "PoolUpdate"; maxDeposit?: bigint; frozen?: boolean }
  | { kind: "PoolExtract"; amount: bigint }
  | { kind: "PoolClaimable"; totalClaimable: bigint }
  | { kind: "LenderCreate" }
  | { kind: "LenderDeposit"; amount: bigint }
  | { kind: "LenderClaim" };

/** The instruction kinds, in tag order (tag = index). */
export const POOL_INSTRUCTION_KINDS = [
  "PoolCreate",
  "PoolUpdate",
  "PoolExtract",
  "PoolClaimable",
  "LenderCreate",
  "LenderDeposit",
  "LenderClaim",
] as const satisfies readonly PoolInstruction["kind"][];

const U64_MAX = (1n << 64n) - 1n;

/** Bytes that are not a pool instruction. */
export class PoolInstructionDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PoolInstructionDecodeError";
  }
}

function u64(name: string, value: bigint): bigint {
  if (value < 0n || value > U64_MAX) {
    throw new RangeError(`${name} must be in [0, 2^64 - 1], found ${value}`);
  }
  return value;
}

/**
 * The instruction's bytes.
 *
 * @example
 * ```ts
 * import { encodePoolInstruction } from "./instructions.ts";
 * const bytes = encodePoolInstruction({ kind: "LenderDeposit", amount: 5n });
 * if (bytes.length !== 9 || bytes[0] !== 5 || bytes[1] !== 5) throw new Error("tag 5, u64le 5");
 * ```
 */
export function encodePoolInstruction(ix: PoolInstruction): Uint8Array {
  const tag = POOL_INSTRUCTION_KINDS.indexOf(ix.kind);
  switch (ix.kind) {
    case "PoolCreate": {
      const out = new Uint8Array(17);
      const v = new DataView(out.buffer);
      out[0] = tag;
      v.setBigUint64(1, u64("index", ix.index), true);
      v.setBigUint64(9, u64("maxDeposit", ix.maxDeposit), true);
      return out;
    }
    case "PoolUpdate": {
      const out = new Uint8Array(11);
      out[0] = tag;
      out[1] = (ix.maxDeposit !== undefined ? 1 : 0) | (ix.frozen !== undefined ? 2 : 0);
      new DataView(out.buffer).setBigUint64(2, u64("maxDeposit", ix.maxDeposit ?? 0n), true);
      out[10] = ix.frozen ? 1 : 0;
      return out;
    }
    case "PoolExtract":
    case "PoolClaimable":
    case "LenderDeposit": {
      const out = new Uint8Array(9);
      out[0] = tag;
      const value = ix.kind === "PoolClaimable" ? ix.totalClaimable : ix.amount;
      new DataView(out.buffer).setBigUint64(1, u64("amount", value), true);
      return out;
    }
    case "LenderCreate":
    case "LenderClaim":
      return Uint8Array.of(tag);
    default: {
      const never: never = ix;
      throw new TypeError(`Unknown pool instruction ${JSON.stringify(never)}`);
    }
  }
}

const LENGTHS = [17, 11, 9, 9, 1, 9, 1];

/** Decodes instruction bytes (throws {@linkcode PoolInstructionDecodeError}). */
export function decodePoolInstruction(bytes: Uint8Array): PoolInstruction {
  if (bytes.length === 0) throw new PoolInstructionDecodeError("Empty instruction data");
  const kind = POOL_INSTRUCTION_KINDS[bytes[0]];
  if (kind === undefined) {
    throw new PoolInstructionDecodeError(`Unknown pool instruction tag ${bytes[0]}`);
  }
  if (bytes.length !== LENGTHS[bytes[0]]) {
    throw new PoolInstructionDecodeError(
      `${kind} is ${LENGTHS[bytes[0]]} bytes, found ${bytes.length}`,
    );
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const at = (i: number) => v.getBigUint64(i, true);
  switch (kind) {
    case "PoolCreate":
      return { kind, index: at(1), maxDeposit: at(9) };
    case "PoolUpdate": {
      const flags = bytes[1];
      if ((flags & ~3) !== 0 || bytes[10] > 1) {
        throw new PoolInstructionDecodeError(
          `PoolUpdate flags must be within 0b11 and frozen 0 or 1, found ${flags} and ${bytes[10]}`,
        );
      }
      const out: PoolInstruction = { kind };
      if (flags & 1) out.maxDeposit = at(2);
      if (flags & 2) out.frozen = bytes[10] === 1;
      return out;
    }
    case "PoolExtract":
    case "LenderDeposit":
      return { kind, amount: at(1) };
    case "PoolClaimable":
      return { kind, totalClaimable: at(1) };
    case "LenderCreate":
    case "LenderClaim":
      return { kind };
  }
}
