/**
 * The meeting addresses of a layout version 4 coordinator account (meeting_addresses.ts): read
 * with the rule the program writes them by, so an account holding an address the program would
 * have refused does not decode.
 *
 * @module
 */

import { AccountDecodeError, limit } from "./account_error.ts";
import { layoutConstant, structLayout } from "./layout.ts";
import {
  MEETING_ADDRESS_KINDS,
  type MeetingAddress,
  meetingAddressProblem,
} from "./meeting_addresses.ts";

const ACCOUNT = structLayout("account_t").offsets;
const ENTRY = structLayout("meeting_address_t");

/** The account's meeting addresses, in order; AccountDecodeError names a defect. */
export function readMeetingAddresses(bytes: Uint8Array): MeetingAddress[] {
  const count = limit(
    "meetingAddresses.length",
    ACCOUNT.meetingAddressesLen,
    bytes[ACCOUNT.meetingAddressesLen],
    layoutConstant("MAX_MEETING_ADDRESSES"),
  );
  const out: MeetingAddress[] = [];
  for (let i = 0; i < count; i++) {
    const at = ACCOUNT.meetingAddresses + i * ENTRY.size;
    const field = `meetingAddresses[${i}]`;
    const kind = MEETING_ADDRESS_KINDS[bytes[at + ENTRY.offsets.kind]];
    if (kind === undefined) {
      throw new AccountDecodeError(
        `${field}.kind`,
        at + ENTRY.offsets.kind,
        `unknown code ${bytes[at + ENTRY.offsets.kind]} (expected 0 Relay or 1 Bootstrap)`,
      );
    }
    const len = limit(
      `${field}.address.length`,
      at + ENTRY.offsets.len,
      bytes[at + ENTRY.offsets.len],
      layoutConstant("MEETING_ADDRESS_BYTES"),
    );
    const start = at + ENTRY.offsets.address;
    // The rule admits printable ASCII only, so any byte string it accepts is its own text.
    const address = String.fromCharCode(...bytes.subarray(start, start + len));
    const problem = meetingAddressProblem(address);
    if (problem !== null) throw new AccountDecodeError(`${field}.address`, start, problem);
    out.push({ kind, address });
  }
  return out;
}
