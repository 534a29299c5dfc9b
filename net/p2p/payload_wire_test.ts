import assert from "node:assert/strict";
import fc from "fast-check";
import {
  decodeRequest,
  decodeResponseHeader,
  encodeRequest,
  encodeResponseHeader,
  MAX_NAME_BYTES,
  OFFER_BYTES,
  OK_HEADER_BYTES,
  type PayloadRequest,
  PayloadWireError,
} from "./payload_wire.ts";

const arbRequest: fc.Arbitrary<PayloadRequest> = fc.oneof(
  fc.tuple(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.boolean()).map((
    [hash, acceptBulk],
  ) => ({ kind: "ByHash" as const, hash, acceptBulk })),
  fc.tuple(fc.string({ minLength: 1, maxLength: 64, unit: "binary" }), fc.boolean()).map((
    [name, acceptBulk],
  ) => ({ kind: "ByName" as const, name, acceptBulk })),
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
  });
  assert.throws(() => decodeRequest(Uint8Array.of(1)), /at byte 0: version is 1, expected 2/);
  assert.throws(() => decodeRequest(Uint8Array.of(2, 2)), /at byte 1: unknown flags 2/);
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
