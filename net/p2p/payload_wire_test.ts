import assert from "node:assert/strict";
import fc from "fast-check";
import {
  decodeRequest,
  decodeResponseHeader,
  encodeRequest,
  encodeResponseHeader,
  FLAG_ACCEPT_BULK,
  FLAG_FROM_OFFSET,
  MAX_NAME_BYTES,
  OFFER_BYTES,
  OK_FROM_HEADER_BYTES,
  OK_HEADER_BYTES,
  type PayloadRequest,
  PayloadWireError,
} from "./payload_wire.ts";

/** Whole requests (bulk or not) and resumed ones (from an offset, never bulk). */
const arbWants = fc.oneof(
  fc.boolean().map((acceptBulk) => ({ acceptBulk, offset: 0 })),
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }).map((offset) => ({
    acceptBulk: false,
    offset,
  })),
);

const arbRequest: fc.Arbitrary<PayloadRequest> = fc.oneof(
  fc.tuple(fc.uint8Array({ minLength: 32, maxLength: 32 }), arbWants).map((
    [hash, wants],
  ) => ({ kind: "ByHash" as const, hash, ...wants })),
  fc.tuple(fc.string({ minLength: 1, maxLength: 64, unit: "binary" }), arbWants).map((
    [name, wants],
  ) => ({ kind: "ByName" as const, name, ...wants })),
);

Deno.test("requests round-trip and need every byte", () => {
  fc.assert(fc.property(arbRequest, (request) => {
    const bytes = encodeRequest(request);
    assert.deepEqual(decodeRequest(bytes), request);
    for (let n = 0; n < bytes.length; n++) {
      assert.equal(decodeRequest(bytes.subarray(0, n)), undefined);
    }
  }));
});

Deno.test("malformed requests are refused with an offset", () => {
  const good = encodeRequest({ kind: "ByHash", hash: new Uint8Array(32) });
  assert.deepEqual(decodeRequest(good), {
    kind: "ByHash",
    hash: new Uint8Array(32),
    acceptBulk: false,
    offset: 0,
  });
  assert.throws(() => decodeRequest(Uint8Array.of(1)), /at byte 0: version is 1, expected 2/);
  assert.throws(() => decodeRequest(Uint8Array.of(2, 4)), /at byte 1: unknown flags 4/);
  assert.throws(() => decodeRequest(Uint8Array.of(2, 0, 7)), /at byte 2: unknown request kind 7/);
  assert.throws(
    () => decodeRequest(Uint8Array.of(2, 0, 1, 0, 0)),
    /at byte 3: name length must be 1..256, found 0/,
  );
  assert.throws(() => decodeRequest(Uint8Array.of(2, 0, 1, 0xff, 0xff)), PayloadWireError);
  assert.throws(() => decodeRequest(Uint8Array.of(2, 0, 1, 0, 1, 0xff)), /not valid UTF-8/);
  assert.throws(
    () => decodeRequest(Uint8Array.of(...good, 0)),
    /at byte 35: 1 bytes after the request/,
  );
  assert.throws(
    () => encodeRequest({ kind: "ByName", name: "x".repeat(MAX_NAME_BYTES + 1) }),
    /blob name must be 1..256 UTF-8 bytes, found 257/,
  );
  assert.throws(() => encodeRequest({ kind: "ByHash", hash: new Uint8Array(3) }), /found 3/);
});

Deno.test("response headers round-trip", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.maxSafeNat(),
      (hash, length) => {
        const bytes = encodeResponseHeader({ status: "Ok", hash, length });
        assert.equal(bytes.length, OK_HEADER_BYTES);
        assert.deepEqual(decodeResponseHeader(bytes), {
          header: { status: "Ok", hash, length },
          size: 41,
        });
        assert.equal(decodeResponseHeader(bytes.subarray(0, 40)), undefined);
      },
    ),
  );
  assert.deepEqual(decodeResponseHeader(encodeResponseHeader({ status: "NotFound" })), {
    header: { status: "NotFound" },
    size: 1,
  });
});

Deno.test("bulk offers round-trip and need every byte", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.maxSafeNat(),
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.integer({ min: 1, max: 65_535 }),
      (hash, length, ticket, port) => {
        const header = { status: "BulkOffer" as const, hash, length, ticket, port };
        const bytes = encodeResponseHeader(header);
        assert.equal(bytes.length, OFFER_BYTES);
        assert.deepEqual(decodeResponseHeader(bytes), { header, size: OFFER_BYTES });
        for (let n = 0; n < OFFER_BYTES; n++) {
          assert.equal(decodeResponseHeader(bytes.subarray(0, n)), undefined);
        }
      },
    ),
  );
  const offer = { status: "BulkOffer" as const, hash: new Uint8Array(32), length: 1, port: 9 };
  assert.throws(
    () => encodeResponseHeader({ ...offer, ticket: new Uint8Array(31) }),
    /bulk ticket must be 32 bytes, found 31/,
  );
  assert.throws(
    () => encodeResponseHeader({ ...offer, ticket: new Uint8Array(32), port: 0 }),
    /bulk port must be an integer in 1..65535, found 0/,
  );
  const zeroPort = encodeResponseHeader({ ...offer, ticket: new Uint8Array(32) });
  zeroPort[OFFER_BYTES - 1] = 0;
  assert.throws(() => decodeResponseHeader(zeroPort), /at byte 73: bulk offer port is 0/);
});

Deno.test("bad response headers are refused", () => {
  assert.throws(() => decodeResponseHeader(Uint8Array.of(9)), /unknown status code 9/);
  const huge = encodeResponseHeader({ status: "Ok", hash: new Uint8Array(32), length: 0 });
  new DataView(huge.buffer).setBigUint64(33, 1n << 62n);
  assert.throws(() => decodeResponseHeader(huge), /exceeds 2\^53-1/);
});

Deno.test("an offset travels after the request and is checked", () => {
  const hash = new Uint8Array(32).fill(7);
  const resumed = encodeRequest({ kind: "ByHash", hash, offset: 65_536 });
  assert.equal(resumed.length, 3 + 32 + 8);
  assert.equal(resumed[1], FLAG_FROM_OFFSET);
  assert.deepEqual(decodeRequest(resumed), {
    kind: "ByHash",
    hash,
    acceptBulk: false,
    offset: 65_536,
  });
  // Offset 0 is a whole request: byte for byte what a requester without resuming sends.
  assert.deepEqual(
    encodeRequest({ kind: "ByName", name: "w", offset: 0 }),
    encodeRequest({ kind: "ByName", name: "w" }),
  );
  // A rest may welcome a bulk offer: both flags, the offset after the request as before.
  const restBulk = encodeRequest({ kind: "ByHash", hash, offset: 5, acceptBulk: true });
  assert.equal(restBulk[1], FLAG_FROM_OFFSET | FLAG_ACCEPT_BULK);
  const restInBand = encodeRequest({ kind: "ByHash", hash, offset: 5 });
  assert.deepEqual(restBulk.subarray(2), restInBand.subarray(2));
  assert.deepEqual(decodeRequest(restBulk), { kind: "ByHash", hash, acceptBulk: true, offset: 5 });
  for (const offset of [-1, 1.5, 2 ** 53]) {
    assert.throws(
      () => encodeRequest({ kind: "ByHash", hash, offset }),
      /request offset must be a non-negative safe integer/,
    );
  }
  const withOffset = (offset: bigint, flags = FLAG_FROM_OFFSET) => {
    const bytes = encodeRequest({ kind: "ByHash", hash, offset: 1 });
    bytes[1] = flags;
    new DataView(bytes.buffer).setBigUint64(35, offset);
    return bytes;
  };
  assert.throws(() => decodeRequest(withOffset(0n)), /at byte 35: offset flag set with offset 0/);
  assert.throws(
    () => decodeRequest(withOffset(1n << 60n)),
    /at byte 35: offset \d+ exceeds 2\^53-1/,
  );
  assert.throws(
    () => decodeRequest(withOffset(0n, FLAG_FROM_OFFSET | FLAG_ACCEPT_BULK)),
    /at byte 35: offset flag set with offset 0/,
  );
  // The flag promises 8 more bytes: fewer is an incomplete request, more is malformed.
  assert.equal(decodeRequest(resumed.subarray(0, 40)), undefined);
  assert.throws(() => decodeRequest(Uint8Array.of(...resumed, 0)), /at byte 43: 1 bytes after/);
});

Deno.test("OkFrom headers round-trip; an offset not below the length is refused", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (hash, length, at) => {
        const offset = Math.floor(at * length);
        const header = { status: "OkFrom" as const, hash, length, offset };
        const bytes = encodeResponseHeader(header);
        assert.equal(bytes.length, OK_FROM_HEADER_BYTES);
        assert.deepEqual(decodeResponseHeader(bytes), { header, size: OK_FROM_HEADER_BYTES });
        for (let n = 0; n < OK_FROM_HEADER_BYTES; n++) {
          assert.equal(decodeResponseHeader(bytes.subarray(0, n)), undefined);
        }
      },
    ),
  );
  const header = { status: "OkFrom" as const, hash: new Uint8Array(32), length: 10, offset: 10 };
  assert.throws(() => encodeResponseHeader(header), /offset 10 must be below the length 10/);
  assert.throws(
    () => encodeResponseHeader({ ...header, offset: -1 }),
    /response offset must be a non-negative safe integer, found -1/,
  );
  const past = encodeResponseHeader({ ...header, offset: 3 });
  new DataView(past.buffer).setBigUint64(OK_HEADER_BYTES, 11n);
  assert.throws(
    () => decodeResponseHeader(past),
    /at byte 41: offset 11 is not below the content length 10/,
  );
  assert.deepEqual(decodeResponseHeader(encodeResponseHeader({ status: "BadOffset" })), {
    header: { status: "BadOffset" },
    size: 1,
  });
});
