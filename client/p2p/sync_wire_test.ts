import assert from "node:assert/strict";
import {
  decodeSyncRequest,
  decodeSyncResponse,
  encodeSyncRequest,
  encodeSyncResponse,
  maxSyncResponseBytes,
  SYNC_VERSION,
  syncResponseCount,
  SyncWireError,
} from "./sync_wire.ts";
import { MAX_ANNOUNCEMENT_BYTES } from "./announcement.ts";

const bytes = (length: number, fill: number) => new Uint8Array(length).fill(fill);

Deno.test("sync wire: a request carries its step, and nothing else decodes", () => {
  for (const step of [0, 7, 0xffff_ffff]) {
    assert.equal(decodeSyncRequest(encodeSyncRequest(step)), step);
  }
  assert.throws(() => encodeSyncRequest(-1), RangeError);
  assert.throws(() => encodeSyncRequest(2 ** 32), RangeError);
  assert.throws(() => decodeSyncRequest(new Uint8Array([SYNC_VERSION, 0, 0, 1])), SyncWireError);
  assert.throws(() => decodeSyncRequest(new Uint8Array([9, 0, 0, 0, 1])), /version 9/);
  const long = new Uint8Array(6);
  long.set(encodeSyncRequest(3));
  assert.throws(() => decodeSyncRequest(long), /6 bytes, expected 5/);
});

Deno.test("sync wire: a response round-trips its envelopes, empty ones and the largest", () => {
  const envelopes = [bytes(150, 1), bytes(0, 0), bytes(MAX_ANNOUNCEMENT_BYTES, 3)];
  const encoded = encodeSyncResponse(envelopes);
  assert.equal(encoded.length, 3 + 3 * 2 + 150 + MAX_ANNOUNCEMENT_BYTES);
  assert.ok(encoded.length <= maxSyncResponseBytes(3));
  assert.deepEqual(decodeSyncResponse(encoded, 3), envelopes);
  assert.deepEqual(decodeSyncResponse(encodeSyncResponse([]), 0), []);
  assert.throws(() => encodeSyncResponse([bytes(MAX_ANNOUNCEMENT_BYTES + 1, 0)]), RangeError);
});

Deno.test("sync wire: a response is refused for its count before its bytes are read", () => {
  const encoded = encodeSyncResponse([bytes(10, 1), bytes(10, 2), bytes(10, 3)]);
  assert.equal(syncResponseCount(encoded.subarray(0, 3), 3), 3);
  assert.throws(() => syncResponseCount(encoded.subarray(0, 3), 2), /3 envelopes, at most 2/);
  assert.throws(() => syncResponseCount(encoded.subarray(0, 2), 3), /shorter than its header/);
  assert.throws(() => decodeSyncResponse(encoded, 2), SyncWireError);
});

Deno.test("sync wire: lengths past the limit, cut answers and trailing bytes are refused", () => {
  const one = encodeSyncResponse([bytes(10, 1)]);
  const oversized = one.slice();
  new DataView(oversized.buffer).setUint16(3, MAX_ANNOUNCEMENT_BYTES + 1);
  assert.throws(() => decodeSyncResponse(oversized, 1), /declares 2049 bytes, the limit is 2048/);
  assert.throws(() => decodeSyncResponse(one.subarray(0, one.length - 1), 1), /ends inside/);
  assert.throws(() => decodeSyncResponse(one.subarray(0, 4), 1), /ends inside envelope 0's length/);
  const trailing = new Uint8Array(one.length + 1);
  trailing.set(one);
  assert.throws(() => decodeSyncResponse(trailing, 1), /1 bytes after the last envelope/);
  const wrongVersion = one.slice();
  wrongVersion[0] = 2;
  assert.throws(() => decodeSyncResponse(wrongVersion, 1), /version 2/);
});
