import assert from "node:assert/strict";
import fc from "fast-check";
import { ed25519 } from "@noble/curves/ed25519.js";
import {
  type Announcement,
  AnnouncementDecodeError,
  decodeEnvelope,
  decodeMessage,
  encodeMessage,
  gossipTopic,
  MAX_ANNOUNCEMENT_BYTES,
  signAnnouncement,
  verifyEnvelope,
} from "./announcement.ts";
import { publicKeyOf } from "../../net/p2p/mod.ts";
import {
  forgeWithSmallOrderKey,
  signWithSmallOrderR,
  WEAK_POINTS,
} from "../../net/testing/weak_keys.ts";
import { hexToBytes } from "../../common/mod.ts";

const secret = new Uint8Array(32).fill(5);
const topic = gossipTopic("run-a");
const proof = { committee: "Trainer", position: 3, index: 7 } as const;
const result: Announcement = {
  kind: "TrainingResult",
  step: 12,
  proof,
  batch: { start: 40, end: 47 },
  commitment: new Uint8Array(32).fill(0xaa),
  contentHash: new Uint8Array(32).fill(0xbb),
  payloadSize: 123_456,
};
const finished: Announcement = {
  kind: "Finished",
  step: 12,
  proof,
  merkleRoot: new Uint8Array(32).fill(0xcc),
  warmup: true,
};

const hash = fc.uint8Array({ minLength: 32, maxLength: 32 });
const u32 = fc.integer({ min: 0, max: 0xffff_ffff });
const arbProof = fc.record({
  committee: fc.constantFrom("TieBreaker", "Verifier", "Trainer" as const),
  position: u32,
  index: u32,
}, { noNullPrototype: true });
const arbAnnouncement: fc.Arbitrary<Announcement> = fc.oneof(
  fc.record({
    kind: fc.constant("TrainingResult" as const),
    step: u32,
    proof: arbProof,
    batch: fc.tuple(fc.maxSafeNat(), fc.maxSafeNat()).map(([a, b]) => ({
      start: Math.min(a, b),
      end: Math.max(a, b),
    })),
    commitment: hash,
    contentHash: hash,
    payloadSize: fc.maxSafeNat(),
  }, { noNullPrototype: true }),
  fc.record({
    kind: fc.constant("PeerAddresses" as const),
    addresses: fc.array(fc.uint8Array({ minLength: 1, maxLength: 128 }), {
      minLength: 1,
      maxLength: 8,
    }),
  }, { noNullPrototype: true }),
  fc.record({
    kind: fc.constant("Finished" as const),
    step: u32,
    proof: arbProof,
    merkleRoot: hash,
    warmup: fc.boolean(),
  }, { noNullPrototype: true }),
);

Deno.test("gossip topic is sha256('psyche gossip' || run id) in hex", () => {
  // sha256("psyche gossiprun-a"), computed independently with coreutils' sha256sum.
  assert.equal(topic, "2c4ecd44c51201097c97b69f3ccb0fc588837e7ddd529e071365708f20c38fbd");
  assert.notEqual(gossipTopic("run-b"), topic);
});

Deno.test("messages round-trip through encode and decode", () => {
  fc.assert(fc.property(arbAnnouncement, (message) => {
    assert.deepEqual(decodeMessage(encodeMessage(message)), message);
  }));
});

Deno.test("envelopes round-trip, verify, and stay well under the size limit", () => {
  fc.assert(
    fc.property(arbAnnouncement, u32, (message, nonce) => {
      const bytes = signAnnouncement(message, { secretKey: secret, topic, nonce });
      assert.ok(bytes.length <= 1135 && bytes.length < MAX_ANNOUNCEMENT_BYTES);
      const envelope = decodeEnvelope(bytes);
      assert.deepEqual(envelope.message, message);
      assert.equal(envelope.nonce, nonce);
      assert.deepEqual(envelope.from, publicKeyOf(secret));
      assert.ok(verifyEnvelope(envelope, topic));
    }),
    { numRuns: 30 },
  );
});

Deno.test("a signature does not verify after any byte is changed, or on another topic", () => {
  const bytes = signAnnouncement(result, { secretKey: secret, topic, nonce: 9 });
  assert.equal(verifyEnvelope(decodeEnvelope(bytes), gossipTopic("run-b")), false);
  for (let i = 1; i < bytes.length; i += 3) {
    const forged = bytes.slice();
    forged[i] ^= 0x01;
    let envelope;
    try {
      envelope = decodeEnvelope(forged);
    } catch (e) {
      assert.ok(e instanceof AnnouncementDecodeError); // some flips make it malformed instead
      continue;
    }
    assert.equal(verifyEnvelope(envelope, topic), false, `flip at byte ${i} still verified`);
  }
});

Deno.test("a resend differs only in nonce and signature", () => {
  const a = decodeEnvelope(signAnnouncement(finished, { secretKey: secret, topic, nonce: 1 }));
  const b = decodeEnvelope(signAnnouncement(finished, { secretKey: secret, topic, nonce: 2 }));
  assert.deepEqual(a.messageBytes, b.messageBytes);
  assert.notDeepEqual(a.signature, b.signature);
});

Deno.test("every truncation and any trailing byte is rejected with an offset", () => {
  for (const message of [result, finished]) {
    const bytes = signAnnouncement(message, { secretKey: secret, topic, nonce: 0 });
    for (let n = 0; n < bytes.length; n++) {
      assert.throws(() => decodeEnvelope(bytes.subarray(0, n)), AnnouncementDecodeError);
    }
    const longer = new Uint8Array(bytes.length + 1);
    longer.set(bytes);
    assert.throws(() => decodeEnvelope(longer), /expected \d+/);
  }
});

Deno.test("bad field values are rejected by name", () => {
  const bytes = signAnnouncement(finished, { secretKey: secret, topic, nonce: 0 });
  const badVersion = bytes.slice();
  badVersion[0] = 2;
  assert.throws(() => decodeEnvelope(badVersion), /at byte 0: version is 2, expected 1/);
  const badWarmup = bytes.slice();
  badWarmup[badWarmup.length - 1] = 2;
  assert.throws(() => decodeEnvelope(badWarmup), /warmup flag must be 0 or 1, found 2/);
  const badCommittee = bytes.slice();
  badCommittee[101 + 5] = 3;
  assert.throws(() => decodeEnvelope(badCommittee), /at byte 106: unknown committee code 3/);
  const badKind = bytes.slice();
  badKind[101] = 9;
  assert.throws(() => decodeEnvelope(badKind), /unknown announcement kind code 9/);
  assert.throws(
    () => decodeEnvelope(new Uint8Array(MAX_ANNOUNCEMENT_BYTES + 1)),
    /the limit is 2048/,
  );
  const reversed = { ...result, batch: { start: 5, end: 4 } } as Announcement;
  assert.throws(() => encodeMessage(reversed), /batch.start must be <= batch.end/);
  const shortHash = { ...result, contentHash: new Uint8Array(31) } as Announcement;
  assert.throws(() => encodeMessage(shortHash), /contentHash must be 32 bytes, found 31/);
  assert.throws(
    () => signAnnouncement(result, { secretKey: secret, topic, nonce: -1 }),
    /nonce must be an integer/,
  );
});

Deno.test("a batch bound above 2^53 on the wire is refused", () => {
  const bytes = encodeMessage(result);
  new DataView(bytes.buffer).setBigUint64(14, 1n << 60n);
  assert.throws(() => decodeMessage(bytes), /batch.start \d+ exceeds 2\^53-1/);
});

Deno.test("PeerAddresses: counts and lengths are checked both ways", () => {
  const one = { kind: "PeerAddresses" as const, addresses: [Uint8Array.of(4, 127, 0, 0, 1)] };
  const bytes = encodeMessage(one);
  assert.deepEqual([...bytes], [2, 1, 5, 4, 127, 0, 0, 1]);
  assert.deepEqual(decodeMessage(bytes), one);
  assert.throws(() => decodeMessage(Uint8Array.of(2)), /no address count/);
  assert.throws(() => decodeMessage(Uint8Array.of(2, 0)), /address count must be 1..8, found 0/);
  assert.throws(() => decodeMessage(Uint8Array.of(2, 9)), /found 9/);
  assert.throws(() => decodeMessage(Uint8Array.of(2, 1, 0)), /address 0 length must be 1..128/);
  assert.throws(() => decodeMessage(Uint8Array.of(2, 1, 5, 1)), /needs 5 bytes, 1 remain/);
  assert.throws(() => decodeMessage(Uint8Array.of(2, 2, 1, 1)), /ends before address 1 of 2/);
  assert.throws(() => decodeMessage(Uint8Array.of(...bytes, 0)), /1 bytes after the last address/);
  assert.throws(
    () => encodeMessage({ kind: "PeerAddresses", addresses: [] }),
    /1..8 entries, found 0/,
  );
  assert.throws(
    () => encodeMessage({ kind: "PeerAddresses", addresses: [new Uint8Array(129)] }),
    /addresses\[0\] must be 1..128 bytes, found 129/,
  );
});

/** The bytes an envelope's signature covers (the wire format in the module doc). */
function signedInput(topicHex: string, envelope: Uint8Array): Uint8Array {
  const domain = new TextEncoder().encode("psyche-ts announcement v1");
  return new Uint8Array([
    ...domain,
    ...hexToBytes(topicHex, 32, "topic"),
    ...envelope.subarray(97),
  ]);
}

/** `bytes` (a signed envelope) with its sender key and signature replaced. */
function withSender(bytes: Uint8Array, from: Uint8Array, signature: Uint8Array): Uint8Array {
  const out = bytes.slice();
  out.set(from, 1);
  out.set(signature, 33);
  return out;
}

Deno.test("envelopes from small-order or non-canonical keys, or with such an R, never verify", () => {
  const honest = signAnnouncement(result, { secretKey: secret, topic, nonce: 1 });
  assert.ok(verifyEnvelope(decodeEnvelope(honest), topic), "the honest envelope verifies");
  const resigned = withSender(
    honest,
    publicKeyOf(secret),
    ed25519.sign(signedInput(topic, honest), secret),
  );
  assert.ok(verifyEnvelope(decodeEnvelope(resigned), topic), "the test's signing input is right");
  for (const weak of WEAK_POINTS) {
    const forged = withSender(honest, weak.bytes, forgeWithSmallOrderKey());
    assert.equal(verifyEnvelope(decodeEnvelope(forged), topic), false, `${weak.name} as sender`);
    const badR = withSender(
      honest,
      publicKeyOf(secret),
      signWithSmallOrderR(secret, signedInput(topic, honest), weak.bytes),
    );
    assert.equal(verifyEnvelope(decodeEnvelope(badR), topic), false, `${weak.name} as R`);
  }
});
