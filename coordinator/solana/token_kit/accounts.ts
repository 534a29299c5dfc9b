/**
 * What the token programs' account decoders share: the size, magic and version check every
 * account passes before it is read, and the 32-byte keys inside it.
 *
 * @module
 */
import { type Address, getAddressDecoder } from "@solana/kit";

/**
 * A view of `bytes` once they are `size` bytes long and start with the 8-byte `magic` and version
 * 1; otherwise throws `makeError` of a message naming the `what` account and what was found.
 */
export function checkAccountHeader(
  bytes: Uint8Array,
  header: { size: number; magic: string; what: string },
  makeError: (message: string) => Error,
): DataView {
  const { size, magic, what } = header;
  if (bytes.length !== size) {
    throw makeError(`A ${what} account is ${size} bytes, found ${bytes.length}`);
  }
  const found = new TextDecoder().decode(bytes.subarray(0, 8));
  if (found !== magic || bytes[8] !== 1) {
    throw makeError(
      `A ${what} account starts with "${magic}" and version 1, found "${found}" v${bytes[8]}`,
    );
  }
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** The address stored in the 32 bytes of `bytes` at `at`. */
export const readAddress = (bytes: Uint8Array, at: number): Address =>
  getAddressDecoder().decode(bytes.subarray(at, at + 32));
