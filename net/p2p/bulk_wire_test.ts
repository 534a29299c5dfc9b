import assert from "node:assert/strict";
import fc from "fast-check";
import {
  BULK_OK_FROM_HEADER_BYTES,
  BULK_OK_HEADER_BYTES,
  BULK_REQUEST_BYTES,
  BULK_REQUEST_FROM_BYTES,
  BULK_STATUSES,
  bulkRequestBytes,
  bulkResponseHeaderBytes,
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
    assert.deepEqual(decodeBulkRequest(bytes), { ticket, hash, offset: 0 });
  }));
  const good = encodeBulkRequest({ ticket: new Uint8Array(32), hash: new Uint8Array(32) });
  assert.throws(
    () => decodeBulkRequest(Uint8Array.of(7, ...good.subarray(1))),
    /at byte 0: version is 7, expected 1 or 2/,
  );
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

Deno.test("a request from an offset is version 2, 8 bytes longer; offset 0 stays version 1", () => {
  fc.assert(fc.property(bytes32, bytes32, fc.maxSafeNat(), (ticket, hash, offset) => {
    const bytes = encodeBulkRequest({ ticket, hash, offset });
    assert.equal(bytes.length, offset === 0 ? BULK_REQUEST_BYTES : BULK_REQUEST_FROM_BYTES);
    assert.equal(bytes[0], offset === 0 ? 1 : 2);
    assert.equal(bulkRequestBytes(bytes[0]), bytes.length);
    assert.deepEqual(decodeBulkRequest(bytes), { ticket, hash, offset });
  }));
  // A whole request is byte for byte what a listener without offsets reads.
  const ticket = new Uint8Array(32).fill(1);
  const hash = new Uint8Array(32).fill(2);
  assert.deepEqual(
    encodeBulkRequest({ ticket, hash, offset: 0 }),
    encodeBulkRequest({ ticket, hash }),
  );
  assert.equal(bulkRequestBytes(3), undefined);
});

Deno.test("bad requests from an offset are refused with an offset", () => {
  const from = encodeBulkRequest({
    ticket: new Uint8Array(32),
    hash: new Uint8Array(32),
    offset: 5,
  });
  const zero = from.slice();
  new DataView(zero.buffer).setBigUint64(BULK_REQUEST_BYTES, 0n);
  assert.throws(() => decodeBulkRequest(zero), /at byte 65: a request from an offset has offset 0/);
  const huge = from.slice();
  new DataView(huge.buffer).setBigUint64(BULK_REQUEST_BYTES, 1n << 60n);
  assert.throws(() => decodeBulkRequest(huge), /at byte 65: offset \d+ exceeds 2\^53-1/);
  // A version 2 request cut to a version 1 length, and one with a byte too many.
  assert.throws(
    () => decodeBulkRequest(from.subarray(0, 65)),
    /at byte 65: length is 65, expected 73/,
  );
  assert.throws(() => decodeBulkRequest(Uint8Array.of(...from, 0)), /length is 74, expected 73/);
  for (const offset of [-1, 0.5, 2 ** 53]) {
    assert.throws(
      () => encodeBulkRequest({ ticket: new Uint8Array(32), hash: new Uint8Array(32), offset }),
      /offset must be a non-negative safe integer/,
    );
  }
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
  fc.assert(fc.property(fc.maxSafeNat(), fc.maxSafeNat(), (a, b) => {
    if (a === b) return;
    const [offset, length] = a < b ? [a, b] : [b, a];
    const bytes = encodeBulkResponseHeader({ status: "OkFrom", length, offset });
    assert.equal(bytes.length, BULK_OK_FROM_HEADER_BYTES);
    assert.equal(bulkResponseHeaderBytes(bytes[0]), BULK_OK_FROM_HEADER_BYTES);
    assert.deepEqual(decodeBulkResponseHeader(bytes), {
      header: { status: "OkFrom", length, offset },
      size: BULK_OK_FROM_HEADER_BYTES,
    });
    for (let n = 0; n < bytes.length; n++) {
      assert.equal(decodeBulkResponseHeader(bytes.subarray(0, n)), undefined);
    }
  }));
  for (const status of BULK_STATUSES) {
    if (status === "Ok" || status === "OkFrom") continue;
    const bytes = encodeBulkResponseHeader({ status });
    assert.deepEqual(decodeBulkResponseHeader(bytes), { header: { status }, size: 1 });
    assert.equal(bulkResponseHeaderBytes(bytes[0]), 1);
  }
  assert.deepEqual(
    (["OkFrom", "BadOffset", "WrongOffset"] as const).map((s) => BULK_STATUSES.indexOf(s)),
    [8, 9, 10],
    "codes 0..7 keep their meaning",
  );
});

Deno.test("bad bulk response headers are refused with an offset", () => {
  assert.throws(() => decodeBulkResponseHeader(Uint8Array.of(99)), /at byte 0: unknown status/);
  const huge = encodeBulkResponseHeader({ status: "Ok", length: 0 });
  new DataView(huge.buffer).setBigUint64(1, 1n << 60n);
  assert.throws(() => decodeBulkResponseHeader(huge), /at byte 1: length .* exceeds 2\^53-1/);
  assert.throws(() => encodeBulkResponseHeader({ status: "Ok", length: -1 }), RangeError);
  assert.equal(bulkResponseHeaderBytes(11), undefined);
  const from = encodeBulkResponseHeader({ status: "OkFrom", length: 10, offset: 3 });
  new DataView(from.buffer).setBigUint64(BULK_OK_HEADER_BYTES, 10n);
  assert.throws(
    () => decodeBulkResponseHeader(from),
    /at byte 9: offset 10 is not below the content length 10/,
  );
  assert.throws(
    () => encodeBulkResponseHeader({ status: "OkFrom", length: 10, offset: 10 }),
    /offset 10 must be below the length 10/,
  );
});
