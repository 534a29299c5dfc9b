/**
 * The list-runs slices against the whole account: a live run written by the program, its
 * slices cut as an RPC's dataSlice would, decodes to what the full decoder says.
 */
import assert from "node:assert/strict";
import { ACCOUNT_SIZE, AccountDecodeError, decodeCoordinatorAccount, OFFSETS } from "./account.ts";
import {
  type AccountSlice,
  decodeNonce,
  decodeRunHead,
  decodeRunListing,
  registrySlice,
  RUN_LISTING_SLICES,
  runListingOf,
} from "./run_listing.ts";
import { structLayout } from "./layout.ts";
import { measureComputeUnits } from "../testing/compute_units.ts";
import { CoordinatorSvm } from "../testing/svm.ts";

const svm = await CoordinatorSvm.create();
const { coordinator } = await measureComputeUnits(16, svm);
const LIVE = svm.accountBytes(coordinator)!;

const cut = (b: Uint8Array, s: AccountSlice) => b.slice(s.offset, s.offset + s.length);

/** The live run with an earning rate, a join deposit and a mix of pending and older joins. */
function edited(): Uint8Array {
  const b = LIVE.slice();
  const v = new DataView(b.buffer);
  v.setBigUint64(OFFSETS.currentEpochRates, 12_345n, true);
  v.setBigUint64(OFFSETS.joinDeposit, 400n, true);
  const mint = OFFSETS.joinDeposit + structLayout("join_deposit_t").offsets.mint;
  b.fill(7, mint, mint + 32);
  const next = v.getBigUint64(OFFSETS.nextActive, true);
  const reg = structLayout("registration_t");
  // Every third registration pending for the next epoch, the rest for the running one.
  const n = v.getUint16(OFFSETS.registryLen, true);
  for (let i = 0; i < n; i++) {
    const at = OFFSETS.registry + i * reg.size + reg.offsets.active;
    v.setBigUint64(at, i % 3 === 0 ? next : next - 1n, true);
  }
  return b;
}

function fromSlices(b: Uint8Array) {
  const head = decodeRunHead(cut(b, RUN_LISTING_SLICES.head));
  return decodeRunListing(head, {
    registry: cut(b, registrySlice(head.registered)),
    rates: cut(b, RUN_LISTING_SLICES.rates),
    deposit: cut(b, RUN_LISTING_SLICES.deposit),
  });
}

Deno.test("run listing: the slices decode to what the whole account says", () => {
  for (const bytes of [LIVE, edited()]) {
    const whole = runListingOf(decodeCoordinatorAccount(bytes));
    assert.deepEqual(fromSlices(bytes), whole);
  }
  const e = fromSlices(edited());
  // The edits show, so the comparison above compared something.
  assert.equal(e.earningRateTotalShared, 12_345n);
  assert.deepEqual(e.joinDeposit, { amount: 400n, mint: new Uint8Array(32).fill(7) });
  assert.equal(e.clients, 16);
  assert.equal(e.registered, 16);
  assert.equal(e.pending, 6);
  assert.equal(decodeNonce(cut(LIVE, RUN_LISTING_SLICES.nonce)), decodeRunHead(LIVE).nonce);
});

Deno.test("run listing: a few kilobytes of the 227,888", () => {
  const { head, rates, deposit, nonce } = RUN_LISTING_SLICES;
  const full = head.length + registrySlice(256).length + rates.length + deposit.length +
    nonce.length;
  assert.equal(head.length, 1202);
  assert.ok(full < ACCOUNT_SIZE / 10, `${full} bytes`);
});

Deno.test("run listing: a short slice or another account is refused by name", () => {
  const b = edited();
  const { head, rates, deposit } = RUN_LISTING_SLICES;
  const refused = (f: () => unknown, message: RegExp) =>
    assert.throws(f, (e) => e instanceof AccountDecodeError && message.test(e.message));
  refused(
    () => decodeRunHead(cut(b, head).subarray(0, 1000)),
    /"head slice" at offset 0: expected 1202 bytes \(account bytes 0\.\.1202\), found 1000/,
  );
  const h = decodeRunHead(cut(b, head));
  const slices = {
    registry: cut(b, registrySlice(h.registered)),
    rates: cut(b, rates),
    deposit: cut(b, deposit),
  };
  refused(
    () => decodeRunListing(h, { ...slices, registry: slices.registry.subarray(72) }),
    new RegExp(`"registry slice" at offset ${OFFSETS.registry}: expected 1152 bytes`),
  );
  refused(() => decodeRunListing(h, { ...slices, rates: new Uint8Array(4) }), /"rates slice"/);
  refused(() => decodeRunListing(h, { ...slices, deposit: new Uint8Array(0) }), /"deposit slice"/);
  // A longer registry slice (read for a batch of runs) is fine.
  assert.equal(
    decodeRunListing(h, { ...slices, registry: cut(b, registrySlice(256)) }).pending,
    6,
  );
  const other = cut(b, head);
  other[OFFSETS.version] = 5;
  refused(() => decodeRunHead(other), /"version" at offset 8: expected 7, found 5/);
  other.fill(0, 0, 8);
  refused(() => decodeRunHead(other), /"magic"/);
  const badState = cut(b, head);
  badState[OFFSETS.runState] = 99;
  refused(() => decodeRunHead(badState), /"runState" .*unknown code 99/);
});
