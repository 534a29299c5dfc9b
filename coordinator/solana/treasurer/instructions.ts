/**
 * The treasurer's instructions: one closed union, its byte encoding (a u8 tag, then the fields,
 * as treasurer.c reads them) and a decoder that checks every length.
 *
 * @module
 */
import { type Address, getAddressDecoder, getAddressEncoder } from "@solana/kit";

/** Every instruction of the treasurer program. */
export type TreasurerInstruction =
  | { kind: "TreasuryCreate"; coordinatorProgram: Address }
  | { kind: "ParticipantCreate" }
  | { kind: "ParticipantClaim" };

/** The instruction kinds, in tag order (tag = index). */
export const TREASURER_INSTRUCTION_KINDS = [
  "TreasuryCreate",
  "ParticipantCreate",
  "ParticipantClaim",
] as const satisfies readonly TreasurerInstruction["kind"][];

/** Bytes that are not a treasurer instruction. */
export class TreasurerInstructionDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TreasurerInstructionDecodeError";
  }
}

/**
 * The instruction's bytes.
 *
 * @example
 * ```ts
 * import { encodeTreasurerInstruction } from "./instructions.ts";
 * const bytes = encodeTreasurerInstruction({ kind: "ParticipantClaim" });
 * if (bytes.length !== 1 || bytes[0] !== 2) throw new Error("tag 2, nothing else");
 * ```
 */
export function encodeTreasurerInstruction(ix: TreasurerInstruction): Uint8Array {
  const tag = TREASURER_INSTRUCTION_KINDS.indexOf(ix.kind);
  switch (ix.kind) {
    case "TreasuryCreate": {
      const out = new Uint8Array(33);
      out[0] = tag;
      out.set(getAddressEncoder().encode(ix.coordinatorProgram), 1);
      return out;
    }
    case "ParticipantCreate":
    case "ParticipantClaim":
      return Uint8Array.of(tag);
    default: {
      const never: never = ix;
      throw new TypeError(`Unknown treasurer instruction ${JSON.stringify(never)}`);
    }
  }
}

const LENGTHS = [33, 1, 1];

/** Decodes instruction bytes (throws {@linkcode TreasurerInstructionDecodeError}). */
export function decodeTreasurerInstruction(bytes: Uint8Array): TreasurerInstruction {
  if (bytes.length === 0) throw new TreasurerInstructionDecodeError("Empty instruction data");
  const kind = TREASURER_INSTRUCTION_KINDS[bytes[0]];
  if (kind === undefined) {
    throw new TreasurerInstructionDecodeError(`Unknown treasurer instruction tag ${bytes[0]}`);
  }
  if (bytes.length !== LENGTHS[bytes[0]]) {
    throw new TreasurerInstructionDecodeError(
      `${kind} is ${LENGTHS[bytes[0]]} bytes, found ${bytes.length}`,
    );
  }
  switch (kind) {
    case "TreasuryCreate":
      return { kind, coordinatorProgram: getAddressDecoder().decode(bytes.subarray(1, 33)) };
    case "ParticipantCreate":
    case "ParticipantClaim":
      return { kind };
  }
}
