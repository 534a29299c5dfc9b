import assert from "node:assert/strict";
import fc from "fast-check";
import { ProtocolError } from "../../net/mod.ts";
import {
  clientFrameLimitFor,
  clientFrameLimits,
  type ClientMessage,
  decodeClientMessage,
  decodeServerMessage,
  encodeClientMessage,
  encodeServerMessage,
  isStateFrame,
  MAX_RELAY_ADDRESS_BYTES,
  MAX_RELAY_ADDRESSES,
  peekClientMessage,
  type ServerMessage,
} from "./protocol.ts";
import {
  type Bloom,
  type Checkpoint,
  COORDINATOR_ERROR_CODES,
  NO_DIGEST,
  VERIFICATION_EVIDENCE,
  type Witness,
  witnessBloomParameters,
  type WitnessMetadata,
} from "../core/mod.ts";

const u32 = fc.nat({ max: 0xffff_ffff });
const key = fc.uint8Array({ minLength: 32, maxLength: 32 });
const safe = fc.nat({ max: Number.MAX_SAFE_INTEGER });
const f64 = fc.double();

const bloom: fc.Arbitrary<Bloom> = fc.record({
  keys: fc.array(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { minLength: 1, maxLength: 8 })
    .map((k) => BigUint64Array.from(k)),
  bits: fc.integer({ min: 1, max: 8 }).chain((words) =>
    fc.uint8Array({ minLength: words * 8, maxLength: words * 8 })
  ),
});

const witness: fc.Arbitrary<Witness> = fc.record({
  proof: fc.record({ position: safe, index: safe, witness: fc.boolean() }),
  participantBloom: bloom,
  broadcastBloom: bloom,
  broadcastMerkle: key,
});

const metadata: fc.Arbitrary<WitnessMetadata> = fc.record({
  step: u32,
  tokensPerSec: f64,
  bandwidthPerSec: f64,
  loss: f64,
  evals: fc.array(fc.record({ name: fc.string({ maxLength: 8 }), value: f64 }), { maxLength: 8 }),
  promptResults: fc.array(fc.integer({ min: -0x8000_0000, max: 0x7fff_ffff }), {
    maxLength: 16,
  }),
  promptIndex: fc.nat({ max: 255 }),
  efficiency: f64,
});

const optional = (s: fc.Arbitrary<string>) => fc.option(s, { nil: null });
const repoString = fc.string({ maxLength: 16 });
const checkpoint: fc.Arbitrary<Checkpoint> = fc.oneof(
  fc.constant({ kind: "Ephemeral" as const }),
  fc.record({
    kind: fc.constantFrom("Dummy" as const, "Hub" as const, "P2P" as const),
    repo: fc.record({ repoId: repoString, revision: optional(repoString) }),
  }),
  fc.record({
    kind: fc.constantFrom("Gcs" as const, "P2PGcs" as const),
    repo: fc.record({ bucket: repoString, prefix: optional(repoString) }),
  }),
);

const clientMessage: fc.Arbitrary<ClientMessage> = fc.oneof(
  fc.record({
    kind: fc.constant("Join" as const),
    requestId: u32,
    runId: fc.string({ maxLength: 32 }).filter((s) => new TextEncoder().encode(s).length <= 32),
  }),
  fc.record({
    kind: fc.constant("Witness" as const),
    requestId: u32,
    witness,
    metadata,
    paramsDigest: key,
  }),
  fc.record({
    kind: fc.constant("WarmupWitness" as const),
    requestId: u32,
    witness,
    paramsDigest: key,
  }),
  fc.record({ kind: fc.constant("Withdraw" as const), requestId: u32 }),
  fc.record({
    kind: fc.constant("CooldownWitness" as const),
    requestId: u32,
    proof: fc.record({ position: u32, index: u32, witness: fc.boolean() }),
    paramsDigest: key,
  }),
  fc.record({
    kind: fc.constant("HealthCheck" as const),
    requestId: u32,
    checks: fc.array(
      fc.record({
        id: fc.record({ signer: key, p2pIdentity: key }),
        proof: fc.record({
          committee: fc.constantFrom(
            "TieBreaker" as const,
            "Verifier" as const,
            "Trainer" as const,
          ),
          position: safe,
          index: safe,
        }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
  }),
  fc.record({ kind: fc.constant("Checkpoint" as const), requestId: u32, repo: checkpoint }),
  fc.record({
    kind: fc.constant("Telemetry" as const),
    requestId: u32,
    telemetry: fc.record({
      step: u32,
      bytesSent: safe,
      bytesReceived: safe,
      tokensPerSec: fc.double({ min: 0, max: 1e12, noNaN: true }),
      breakdownMs: fc.record({
        train: fc.double({ min: 0, max: 86_400_000, noNaN: true }),
        encode: fc.double({ min: 0, max: 86_400_000, noNaN: true }),
        exchange: fc.double({ min: 0, max: 86_400_000, noNaN: true }),
        apply: fc.double({ min: 0, max: 86_400_000, noNaN: true }),
        wait: fc.double({ min: 0, max: 86_400_000, noNaN: true }),
      }),
    }),
  }),
  fc.record({
    kind: fc.constant("Verification" as const),
    requestId: u32,
    report: fc.record({
      height: u32,
      trainer: fc.nat({ max: 0xffff }),
      verdict: fc.constantFrom("Pass" as const, "Fail" as const),
      evidence: fc.constantFrom(...VERIFICATION_EVIDENCE),
      detail: u32,
    }),
  }),
);

const serverMessage: fc.Arbitrary<ServerMessage> = fc.oneof(
  fc.record({ kind: fc.constant("State" as const), bytes: fc.uint8Array({ maxLength: 64 }) }),
  fc.record({ kind: fc.constant("Ack" as const), requestId: u32 }),
  fc.record({
    kind: fc.constant("Error" as const),
    requestId: u32,
    code: fc.constantFrom(...COORDINATOR_ERROR_CODES),
    message: fc.string({ maxLength: 40 }),
  }),
  fc.record({ kind: fc.constant("Refused" as const), reason: fc.string({ maxLength: 40 }) }),
  fc.record({
    kind: fc.constant("Relays" as const),
    addresses: fc.array(fc.string({ maxLength: 60 }), { maxLength: 4 }),
  }),
  fc.record({
    kind: fc.constant("StateDelta" as const),
    length: fc.nat({ max: 1 << 20 }),
    checksum: fc.uint8Array({ minLength: 8, maxLength: 8 }),
    ops: fc.array(
      fc.oneof(
        fc.record({ kind: fc.constant("copy" as const), offset: u32, length: u32 }),
        fc.record({
          kind: fc.constant("insert" as const),
          bytes: fc.uint8Array({ maxLength: 16 }),
        }),
      ),
      { maxLength: 4 },
    ),
  }),
);

Deno.test("client messages round-trip, and every truncation or extension is a ProtocolError", () => {
  fc.assert(
    fc.property(clientMessage, (msg) => {
      const bytes = encodeClientMessage(msg);
      assert.deepEqual(decodeClientMessage(bytes), structuredClone(msg));
      for (const cut of [0, 1, 4, bytes.length >> 1, bytes.length - 1]) {
        if (cut >= bytes.length) continue;
        assert.throws(() => decodeClientMessage(bytes.subarray(0, cut)), ProtocolError);
      }
      const longer = new Uint8Array(bytes.length + 1);
      longer.set(bytes);
      assert.throws(() => decodeClientMessage(longer), /trailing bytes/);
    }),
    { numRuns: 200 },
  );
});

Deno.test("server messages round-trip, and truncations are ProtocolErrors", () => {
  fc.assert(
    fc.property(serverMessage, (msg) => {
      const bytes = encodeServerMessage(msg);
      assert.deepEqual(decodeServerMessage(bytes), structuredClone(msg));
      assert.throws(() => decodeServerMessage(bytes.subarray(0, bytes.length - 1)), ProtocolError);
    }),
    { numRuns: 200 },
  );
});

Deno.test("random bytes decode to a message or a ProtocolError, nothing else", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      for (const decode of [decodeClientMessage, decodeServerMessage]) {
        try {
          decode(bytes);
        } catch (e) {
          assert.ok(e instanceof ProtocolError, String(e));
        }
      }
    }),
    { numRuns: 500 },
  );
});

Deno.test("decoder names the message and field it rejects", () => {
  assert.throws(() => decodeClientMessage(new Uint8Array([9])), /unknown tag 9, expected 0..8/);
  const report = encodeClientMessage({
    kind: "Verification",
    requestId: 1,
    report: { height: 3, trainer: 2, verdict: "Fail", evidence: "StateMismatch", detail: 7 },
  });
  const badVerdict = report.slice();
  badVerdict[11] = 2;
  assert.throws(
    () => decodeClientMessage(badVerdict),
    /Verification: field "verdict" has code 2, expected 0..1/,
  );
  const badEvidence = report.slice();
  badEvidence[12] = 99;
  assert.throws(() => decodeClientMessage(badEvidence), /field "evidence" has code 99/);
  assert.throws(
    () => decodeClientMessage(report.subarray(0, report.length - 1)),
    /Verification/,
  );
  const join = encodeClientMessage({ kind: "Join", requestId: 1, runId: "a" });
  // Declare a 40-byte run id: over the 32-byte cap.
  const long = new Uint8Array([...join.subarray(0, 5), 0, 40, ...new Uint8Array(40)]);
  assert.throws(() => decodeClientMessage(long), /Join: field "runId" is 40 bytes, at most 32/);
  const health = encodeClientMessage({
    kind: "HealthCheck",
    requestId: 1,
    checks: [{
      id: { signer: new Uint8Array(32), p2pIdentity: new Uint8Array(32) },
      proof: { committee: "Trainer", position: 0, index: 0 },
    }],
  });
  const bad = health.slice();
  bad[5 + 4 + 64] = 7; // committee code
  assert.throws(() => decodeClientMessage(bad), /checks\[0\]\.committee" has code 7/);
  const zero = health.slice(0, 9);
  zero[8] = 0; // count 0
  assert.throws(() => decodeClientMessage(zero), /"checks" counts 0 items, expected 1..65535/);
  const err = encodeServerMessage({ kind: "Error", requestId: 3, code: "Halted", message: "x" });
  err[6] = 200;
  assert.throws(() => decodeServerMessage(err), /unknown code 200/);
});

Deno.test("encoders refuse values the decoder would refuse", () => {
  assert.throws(
    () => encodeClientMessage({ kind: "Join", requestId: 1, runId: "x".repeat(33) }),
    RangeError,
  );
  const w: Witness = {
    proof: { position: 0, index: 0, witness: true },
    participantBloom: { keys: new BigUint64Array(1), bits: new Uint8Array(8) },
    broadcastBloom: { keys: new BigUint64Array(1), bits: new Uint8Array(8) },
    broadcastMerkle: new Uint8Array(31),
  };
  assert.throws(
    () =>
      encodeClientMessage({
        kind: "WarmupWitness",
        requestId: 1,
        witness: w,
        paramsDigest: NO_DIGEST,
      }),
    /broadcastMerkle must be 32 bytes, found 31/,
  );
});

Deno.test("long Error messages are cut on a character boundary", () => {
  const message = "é".repeat(600); // 1200 UTF-8 bytes
  const decoded = decodeServerMessage(
    encodeServerMessage({ kind: "Error", requestId: 1, code: "WrongRunState", message }),
  );
  assert.equal(decoded.kind, "Error");
  if (decoded.kind === "Error") assert.equal(decoded.message, "é".repeat(512));
});

/** `msg` with its witness blooms resized to a run of `maxClients` (random bits kept short). */
function sizedForRun(msg: ClientMessage, maxClients: number): ClientMessage {
  if (msg.kind !== "Witness" && msg.kind !== "WarmupWitness") return msg;
  const { numBits, numKeys } = witnessBloomParameters(maxClients);
  const resize = (b: Bloom): Bloom => {
    const bits = new Uint8Array(numBits / 8);
    bits.set(b.bits.subarray(0, bits.length));
    return { keys: new BigUint64Array(numKeys).fill(b.keys[0]), bits };
  };
  const w = msg.witness;
  const witness = {
    ...w,
    participantBloom: resize(w.participantBloom),
    broadcastBloom: resize(w.broadcastBloom),
  };
  return { ...msg, witness };
}

Deno.test("every message a run accepts fits its kind's frame limit; a larger one does not", () => {
  fc.assert(
    fc.property(fc.integer({ min: 4, max: 400 }), clientMessage, (maxClients, msg) => {
      const limits = clientFrameLimits(maxClients);
      const bytes = encodeClientMessage(sizedForRun(msg, maxClients));
      assert.ok(bytes.length <= limits[msg.kind], `${msg.kind}: ${bytes.length}`);
      assert.equal(clientFrameLimitFor(limits)(bytes[0]).maxBytes, limits[msg.kind]);
    }),
    { numRuns: 200 },
  );
  const limits = clientFrameLimits(5);
  const entry = {
    id: { signer: new Uint8Array(32), p2pIdentity: new Uint8Array(32) },
    proof: { committee: "Trainer" as const, position: 0, index: 0 },
  };
  const checks = (n: number) =>
    encodeClientMessage({ kind: "HealthCheck", requestId: 1, checks: new Array(n).fill(entry) });
  assert.equal(checks(5).length, limits.HealthCheck, "the limit is exactly maxClients entries");
  assert.ok(checks(6).length > limits.HealthCheck);
  const oversized = sizedForRun(
    {
      kind: "WarmupWitness",
      requestId: 1,
      witness: {
        proof: { position: 0, index: 0, witness: false },
        participantBloom: { keys: new BigUint64Array(1), bits: new Uint8Array(8) },
        broadcastBloom: { keys: new BigUint64Array(1), bits: new Uint8Array(8) },
        broadcastMerkle: new Uint8Array(32),
      },
      paramsDigest: NO_DIGEST,
    },
    100, // blooms of a larger run
  );
  assert.ok(encodeClientMessage(oversized).length > limits.WarmupWitness);
  assert.equal(
    clientFrameLimitFor(limits)(9).maxBytes,
    Math.max(...Object.values(limits)),
    "an unknown tag gets the largest limit; the decoder names the tag",
  );
  assert.throws(() => clientFrameLimits(0), /maxClients must be in 1..65535, found 0/);
});

Deno.test("peekClientMessage reads the kind, request id and health-check count only", () => {
  const entry = {
    id: { signer: new Uint8Array(32), p2pIdentity: new Uint8Array(32) },
    proof: { committee: "Trainer" as const, position: 0, index: 0 },
  };
  const health = encodeClientMessage({ kind: "HealthCheck", requestId: 7, checks: [entry, entry] });
  assert.deepEqual(peekClientMessage(health), { kind: "HealthCheck", requestId: 7, entries: 2 });
  // The head alone is enough: the entries need not be there (nor be valid).
  assert.deepEqual(peekClientMessage(health.subarray(0, 9)).entries, 2);
  const join = encodeClientMessage({ kind: "Join", requestId: 3, runId: "r" });
  assert.deepEqual(peekClientMessage(join), { kind: "Join", requestId: 3, entries: null });
  assert.throws(() => peekClientMessage(new Uint8Array([9, 0, 0, 0, 0])), /unknown tag 9/);
  assert.throws(() => peekClientMessage(health.subarray(0, 7)), ProtocolError);
});

Deno.test("a Relays message names at most 16 addresses, each at most 256 bytes, both ways", () => {
  const many = Array.from({ length: MAX_RELAY_ADDRESSES + 1 }, (_, i) => `/ip4/10.0.0.${i}`);
  assert.throws(() => encodeServerMessage({ kind: "Relays", addresses: many }), /at most 16/);
  const long = "/dns4/" + "x".repeat(MAX_RELAY_ADDRESS_BYTES);
  assert.throws(() => encodeServerMessage({ kind: "Relays", addresses: [long] }), /256 bytes/);
  // A forged frame claiming 17 addresses is refused before any is read.
  const forged = new Uint8Array([4, MAX_RELAY_ADDRESSES + 1]);
  assert.throws(() => decodeServerMessage(forged), /17 addresses, at most 16/);
});

Deno.test("a StateDelta round-trips; a count, an operation or a length it cannot hold is refused", () => {
  const delta: ServerMessage = {
    kind: "StateDelta",
    length: 70,
    checksum: new Uint8Array(8).fill(9),
    ops: [
      { kind: "copy", offset: 0, length: 64 },
      { kind: "insert", bytes: new Uint8Array([1, 2, 3, 4, 5, 6]) },
    ],
  };
  const bytes = encodeServerMessage(delta);
  assert.deepEqual(decodeServerMessage(bytes), delta);
  assert.ok(isStateFrame(bytes));
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.throws(() => decodeServerMessage(bytes.subarray(0, cut)), ProtocolError);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  const lying = bytes.slice();
  new DataView(lying.buffer).setUint32(1 + 4 + 8, 1000); // 1000 operations in 20 bytes
  assert.throws(() => decodeServerMessage(lying), /1000 operations in 20 bytes/);
  const unknown = bytes.slice();
  unknown[1 + 4 + 8 + 4] = 7;
  assert.throws(() => decodeServerMessage(unknown), /unknown operation 7/);
  const huge = bytes.slice();
  new DataView(huge.buffer).setUint32(1, 0xffff_ffff);
  assert.throws(() => decodeServerMessage(huge), /rebuilds 4294967295 bytes/);
  assert.equal(view.getUint32(1), 70);
  assert.throws(
    () => encodeServerMessage({ ...delta, checksum: new Uint8Array(7) } as ServerMessage),
    /checksum must be 8 bytes/,
  );
});
