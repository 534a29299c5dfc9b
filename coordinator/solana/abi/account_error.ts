/**
 * The error of the coordinator account's decoder (account.ts and the parts it reads beside the
 * state encoding, account_verification.ts).
 *
 * @module
 */

/** Account bytes that are not a coordinator account of this layout. */
export class AccountDecodeError extends Error {
  /** The failing field (a dotted path). */
  readonly field: string;
  /** Byte offset in the account, or -1 when the state decoder found it. */
  readonly offset: number;
  constructor(field: string, offset: number, detail: string) {
    super(
      `Cannot decode coordinator account field "${field}"` +
        (offset >= 0 ? ` at offset ${offset}` : "") + `: ${detail}`,
    );
    this.name = "AccountDecodeError";
    this.field = field;
    this.offset = offset;
  }
}

/** `value`, or AccountDecodeError naming `field` when it exceeds `max`. */
export function limit(field: string, at: number, value: number, max: number): number {
  if (value > max) {
    throw new AccountDecodeError(field, at, `${value} exceeds the capacity ${max}`);
  }
  return value;
}
