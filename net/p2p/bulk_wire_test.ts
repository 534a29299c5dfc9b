import assert from "node:assert/strict";
import fc from "fast-check";
import {
  BULK_OK_HEADER_BYTES,
  BULK_REQUEST_BYTES,
  BULK_STATUSES,
  BulkWireError,
  decodeBulkRequest,
  decodeBulkResponseHeader,
  encodeBulkRequest,
  encodeBulkResponseHeader,
} from "./bulk_wire.ts";

const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 });

Deno.test("bulk requests round-trip; wrong versions and lengths are refused", () => {
  fc.assert(fc.property(bytes32, bytes32, (ticket, hash) => {
    const bytes = encodeBulkRequest({ ticket, hash });
    assert.equal(bytes.length, BULK_REQUEST_BYTES);
    assert.deepEqual(decodeBulkRequest(bytes), { ticket, hash });
  }));
  const good = encodeBulkRequest({ ticket: new Uint8Array(32), hash: new Uint8Array(32) });
  assert.throws(() => decodeBulkRequest(Uint8Array.of(7, ...good.subarray(1))), /version is 7/);
  assert.throws(() => decodeBulkRequest(good.subarray(0, 64)), /at byte 64: length is 64/);
  assert.throws(() => decodeBulkRequest(Uint8Array.of(...good, 0)), BulkWireError);
  assert.throws(
    () => encodeBulkRequest({ ticket: new Uint8Array(3), hash: new Uint8Array(32) }),
    /ticket must be 32 bytes, found 3/,
  );
  assert.throws(
    () => encodeBulkRequest({ ticket: new Uint8Array(32), hash: new Uint8Array(31) }),
    /hash must be 32 bytes, found 31/,
  );
});

Deno.test("bulk response headers round-trip and need every byte", () => {
  fc.assert(fc.property(fc.maxSafeNat(), (length) => {
    const bytes = encodeBulkResponseHeader({ status: "Ok", length });
    assert.equal(bytes.length, BULK_OK_HEADER_BYTES);
    assert.deepEqual(decodeBulkResponseHeader(bytes), {
      header: { status: "Ok", length },
      size: BULK_OK_HEADER_BYTES,
    });
    for (let n = 0; n < bytes.length; n++) {
      assert.equal(decodeBulkResponseHeader(bytes.subarray(0, n)), undefined);
    }
  }));
  for (const status of BULK_STATUSES) {
    if (status === "Ok") continue;
    const bytes = encodeBulkResponseHeader({ status });
    assert.deepEqual(decodeBulkResponseHeader(bytes), { header: { status }, size: 1 });
  }
});

Deno.test("bad bulk response headers are refused with an offset", () => {
  assert.throws(() => decodeBulkResponseHeader(Uint8Array.of(99)), /at byte 0: unknown status/);
  const huge = encodeBulkResponseHeader({ status: "Ok", length: 0 });
  new DataView(huge.buffer).setBigUint64(1, 1n << 60n);
  assert.throws(() => decodeBulkResponseHeader(huge), /at byte 1: length .* exceeds 2\^53-1/);
  assert.throws(() => encodeBulkResponseHeader({ status: "Ok", length: -1 }), RangeError);
});
