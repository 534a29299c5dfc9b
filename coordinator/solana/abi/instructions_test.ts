import assert from "node:assert/strict";
import fc from "fast-check";
import { arbCoordinatorState } from "../../encoding/testing/arbitraries.ts";
import { testConfig, testModel } from "../../../tests/support/coordinator_fixtures.ts";
import {
  type CoordinatorInstruction,
  decodeCoordinatorInstruction,
  encodeCoordinatorInstruction,
  INSTRUCTION_KINDS,
  InstructionDecodeError,
  VERIFICATION_REPORT_BYTES,
  WITNESS_TAIL_BYTES,
  witnessInstructionBytes,
} from "./instructions.ts";
import {
  decodeConfigBytes,
  decodeModelBytes,
  encodeConfigBytes,
  encodeModelBytes,
  zeroConfig,
} from "./state_parts.ts";
import { NO_DIGEST, type Witness, witnessBloomParameters } from "../../core/mod.ts";

/** The parameter digest reports carry. */
const DIGEST = NO_DIGEST;

const key = (b: number) => new Uint8Array(32).fill(b);

function witnessFor(maxClients: number): Witness {
  const { numBits, numKeys } = witnessBloomParameters(maxClients);
  const bloom = () => ({
    keys: new BigUint64Array(numKeys).map((_, i) => BigInt(i) * 0x1234567890abcdefn),
    bits: new Uint8Array(numBits / 8).map((_, i) => i * 7),
  });
  return {
    proof: { position: 3, index: 9, witness: true },
    participantBloom: bloom(),
    broadcastBloom: bloom(),
    broadcastMerkle: key(5),
  };
}

const EXAMPLES: CoordinatorInstruction[] = [
  { kind: "InitCoordinator", runId: "run-ü", joinAuthority: key(1), permissionless: true },
  {
    kind: "Update",
    metadata: { name: "n", description: "d".repeat(280), numParameters: 2 ** 40, vocabSize: 32000 },
    config: testConfig(),
    model: testModel(),
    progress: { epoch: 3, step: 40, epochStartDataIndex: 1000 },
  },
  { kind: "Update", progress: { epoch: 0, step: 1, epochStartDataIndex: 0 } },
  {
    kind: "Update",
    metadata: { name: "m", description: "", numParameters: 1, vocabSize: 2 },
    meetingAddresses: [
      { kind: "Relay", address: "/ip4/203.0.113.7/tcp/4001/p2p/12D3KooWabc" },
      { kind: "Bootstrap", address: "/dns4/peer.example/tcp/4001/p2p/12D3KooWdef" },
    ],
  },
  { kind: "Update", meetingAddresses: [] },
  { kind: "SetPaused", paused: true },
  { kind: "JoinRun", p2pIdentity: key(2) },
  { kind: "Tick" },
  { kind: "Witness", witness: witnessFor(256), paramsDigest: DIGEST },
  { kind: "WarmupWitness", witness: witnessFor(8), paramsDigest: DIGEST },
  {
    kind: "HealthCheck",
    checks: [
      { signer: key(3), proof: { committee: "Trainer", position: 4, index: 2 } },
      { signer: key(4), proof: { committee: "TieBreaker", position: 0, index: 7 } },
    ],
  },
  {
    kind: "Checkpoint",
    index: 5,
    repo: { kind: "Hub", repo: { repoId: "org/m", revision: "r1" } },
  },
  { kind: "Checkpoint", index: 0, repo: { kind: "Gcs", repo: { bucket: "b", prefix: null } } },
  { kind: "FreeCoordinator" },
  { kind: "GrantAuthorizer", authorizer: key(6) },
  { kind: "SetDelegates", clear: true, delegates: [key(7), key(8)] },
  {
    kind: "CooldownWitness",
    proof: { position: 2, index: 1, witness: true },
    paramsDigest: key(9),
  },
  {
    kind: "VerificationReport",
    report: {
      height: 0x01020304,
      trainer: 513,
      verdict: "Fail",
      evidence: "CopiedResult",
      detail: 812_000,
    },
  },
  { kind: "SetFutureEpochRates", earningRateTotalShared: 0xffff_ffff_ffff_ffffn },
  { kind: "SetFutureEpochRates", slashingRatePerClient: 3n },
  { kind: "SetFutureEpochRates", earningRateTotalShared: 1000n, slashingRatePerClient: 0n },
  { kind: "SetJoinDeposit", amount: 0n },
  { kind: "SetJoinDeposit", amount: 0xffff_ffff_ffff_ffffn },
  { kind: "WithdrawDeposit" },
  { kind: "WithdrawDeposit", registration: 0 },
  { kind: "WithdrawDeposit", registration: 0xffff },
  { kind: "SweepForfeited" },
];

Deno.test("instructions: every kind round-trips through its bytes", () => {
  assert.deepEqual(new Set(EXAMPLES.map((e) => e.kind)), new Set(INSTRUCTION_KINDS));
  for (const ix of EXAMPLES) {
    const bytes = encodeCoordinatorInstruction(ix);
    assert.equal(bytes[0], INSTRUCTION_KINDS.indexOf(ix.kind));
    assert.deepEqual(decodeCoordinatorInstruction(bytes), ix, ix.kind);
  }
});

Deno.test("instructions: witness data size matches witnessInstructionBytes", () => {
  for (const n of [1, 8, 64, 256]) {
    const bytes = encodeCoordinatorInstruction({
      kind: "Witness",
      witness: witnessFor(n),
      paramsDigest: DIGEST,
    });
    assert.equal(bytes.length, witnessInstructionBytes(n), `maxClients ${n}`);
  }
  assert.equal(witnessInstructionBytes(256), 1 + 9 + 2 * (5 + 56 + 312) + 32 + 32);
});

Deno.test("instructions: any model and config round-trip through Update", () => {
  // Version 1 shapes: the program's config is whole seconds.
  const states = arbCoordinatorState({ maxClients: 4, maxWitnesses: 0, version: 1 });
  fc.assert(
    fc.property(states, (state) => {
      const ix: CoordinatorInstruction = {
        kind: "Update",
        model: state.model,
        config: state.config,
      };
      assert.deepEqual(decodeCoordinatorInstruction(encodeCoordinatorInstruction(ix)), ix);
      assert.deepEqual(decodeModelBytes(encodeModelBytes(state.model)), state.model);
      assert.deepEqual(decodeConfigBytes(encodeConfigBytes(state.config)), state.config);
    }),
    { numRuns: 150 },
  );
});

function decodeFails(bytes: number[] | Uint8Array, field: RegExp): void {
  assert.throws(
    () => decodeCoordinatorInstruction(Uint8Array.from(bytes)),
    (e) => e instanceof InstructionDecodeError && field.test(e.field),
  );
}

Deno.test("instructions: decoding names the bad field", () => {
  decodeFails([], /^tag$/);
  decodeFails([18], /^tag$/);
  decodeFails([15, 1, 0, 0, 0, 0, 0, 0], /^amount$/);
  decodeFails([16, 0], /^registration$/);
  decodeFails([16, 0, 0, 0], /^end$/);
  decodeFails([17, 0], /^end$/);
  decodeFails([14], /^parts$/);
  decodeFails([14, 0], /^parts$/);
  decodeFails([14, 4, ...new Uint8Array(8)], /^parts$/);
  decodeFails([14, 3, ...new Uint8Array(8)], /^slashingRatePerClient$/);
  decodeFails([14, 1, ...new Uint8Array(8), 0], /^end$/);
  decodeFails([13, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0], /^report\.verdict$/);
  decodeFails([13, 0, 0, 0, 0, 0, 0, 1, 7, 0, 0, 0, 0], /^report\.evidence$/);
  decodeFails([13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], /^report\.detail$/);
  decodeFails([13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], /^end$/);
  decodeFails([12, ...new Uint8Array(8), 2], /^proof\.witness$/);
  decodeFails([12, ...new Uint8Array(8), 1, ...key(1).subarray(1)], /^paramsDigest$/);
  decodeFails([4, 0], /^end$/);
  decodeFails([2, 2], /^paused$/);
  decodeFails([3, 1, 2], /^p2pIdentity$/);
  decodeFails([0, 33, ...new Uint8Array(33)], /^runId$/);
  decodeFails([0, 2, 0xc3, 0x28, ...key(1), 0], /^runId$/);
  decodeFails([0, 1, 65, ...key(1), 2], /^flags$/);
  decodeFails([1, 0], /^parts$/);
  decodeFails([7, 1, ...key(1), 3, 0, 0, 0, 0, 0, 0, 0, 0], /committee/);
  decodeFails([11, 0, 2, ...key(1)], /delegates\[1\]/);
  const witness = encodeCoordinatorInstruction({
    kind: "Witness",
    witness: witnessFor(8),
    paramsDigest: DIGEST,
  });
  decodeFails(witness.subarray(0, witness.length - 1), /paramsDigest/);
  decodeFails(witness.subarray(0, witness.length - 33), /broadcastMerkle/);
  const badBloom = witness.slice();
  badBloom[10] = 40; // 40 keys (tag, position, index and flag take bytes 0..9)
  decodeFails(badBloom, /participantBloom/);
});

Deno.test("instructions: encoding refuses values the layout cannot carry", () => {
  assert.throws(
    () =>
      encodeCoordinatorInstruction({
        kind: "InitCoordinator",
        runId: "x".repeat(33),
        joinAuthority: key(1),
        permissionless: false,
      }),
    /runId/,
  );
  assert.throws(
    () => encodeCoordinatorInstruction({ kind: "JoinRun", p2pIdentity: new Uint8Array(31) }),
    /p2pIdentity/,
  );
  assert.throws(() => encodeCoordinatorInstruction({ kind: "Update" }), /at least one part/);
  assert.throws(
    () => encodeCoordinatorInstruction({ kind: "SetFutureEpochRates" }),
    /at least one rate/,
  );
  assert.throws(
    () =>
      encodeCoordinatorInstruction({ kind: "SetFutureEpochRates", earningRateTotalShared: -1n }),
    /earningRateTotalShared must be a u64/,
  );
  assert.throws(
    () =>
      encodeCoordinatorInstruction({
        kind: "SetFutureEpochRates",
        slashingRatePerClient: 1n << 64n,
      }),
    /slashingRatePerClient must be a u64/,
  );
  assert.deepEqual(
    [...encodeCoordinatorInstruction({ kind: "SetFutureEpochRates", slashingRatePerClient: 258n })],
    [14, 2, 2, 1, 0, 0, 0, 0, 0, 0],
  );
  // The registration hint is a u16 after the tag; without it the data is the tag alone.
  assert.deepEqual([...encodeCoordinatorInstruction({ kind: "WithdrawDeposit" })], [16]);
  assert.deepEqual(
    [...encodeCoordinatorInstruction({ kind: "WithdrawDeposit", registration: 258 })],
    [16, 2, 1],
  );
  for (const registration of [-1, 0x10000, 1.5]) {
    assert.throws(
      () => encodeCoordinatorInstruction({ kind: "WithdrawDeposit", registration }),
      /registration must be an integer/,
    );
  }
  const many = Array.from(
    { length: 256 },
    () => ({ signer: key(1), proof: { committee: "Trainer" as const, position: 0, index: 0 } }),
  );
  assert.throws(
    () => encodeCoordinatorInstruction({ kind: "HealthCheck", checks: many }),
    /checks\.length/,
  );
  assert.throws(() => decodeConfigBytes(new Uint8Array(65)), /68 bytes/);
  const report = {
    height: 1,
    trainer: 2,
    verdict: "Pass" as const,
    evidence: "None" as const,
    detail: 0,
  };
  assert.throws(
    () =>
      encodeCoordinatorInstruction({
        kind: "VerificationReport",
        report: { ...report, trainer: 0x10000 },
      }),
    /report\.trainer must be an integer in \[0, 65535\]/,
  );
  assert.throws(
    () =>
      encodeCoordinatorInstruction({
        kind: "VerificationReport",
        report: { ...report, evidence: "Hearsay" as never },
      }),
    /report\.evidence is unknown: Hearsay/,
  );
});

Deno.test("instructions: a verification report is the TCP request's 12 bytes after the tag", () => {
  const bytes = encodeCoordinatorInstruction({
    kind: "VerificationReport",
    report: { height: 7, trainer: 3, verdict: "Fail", evidence: "ChainBreak", detail: 0x0a0b0c0d },
  });
  assert.deepEqual([...bytes], [13, 7, 0, 0, 0, 3, 0, 1, 3, 0x0d, 0x0c, 0x0b, 0x0a]);
  assert.equal(bytes.length, 1 + VERIFICATION_REPORT_BYTES);
  // A pass with evidence decodes: refusing it is the machine's (InvalidVerification), not the
  // decoder's, so the program and the TCP server refuse it with the same code.
  const odd = decodeCoordinatorInstruction(Uint8Array.of(13, 7, 0, 0, 0, 3, 0, 0, 1, 0, 0, 0, 0));
  assert.deepEqual(odd, {
    kind: "VerificationReport",
    report: { height: 7, trainer: 3, verdict: "Pass", evidence: "ResultMismatch", detail: 0 },
  });
});

Deno.test("instructions: the update's meeting part is the last, with the wire's own limits", () => {
  const relay = "/ip4/1.2.3.4/tcp/1/p2p/Qm1";
  const bytes = encodeCoordinatorInstruction({
    kind: "Update",
    progress: { epoch: 1, step: 2, epochStartDataIndex: 3 },
    meetingAddresses: [{ kind: "Bootstrap", address: relay }],
  });
  // tag, parts (8 progress | 16 meeting), progress (14 bytes), count, kind, length, the address.
  assert.deepEqual([...bytes.subarray(0, 2)], [1, 24]);
  assert.deepEqual([...bytes.subarray(16, 19)], [1, 1, relay.length]);
  assert.equal(new TextDecoder().decode(bytes.subarray(19)), relay);
  // An empty list is a part too: it clears the run's addresses.
  assert.deepEqual([...encodeCoordinatorInstruction({ kind: "Update", meetingAddresses: [] })], [
    1,
    16,
    0,
  ]);
  // Five, or a 200-byte address, still decode: refusing them is the program's
  // (InvalidMeetingAddress), so the reference model sees what the program sees.
  const five = Array.from({ length: 5 }, () => ({ kind: "Relay" as const, address: relay }));
  const long = [{ kind: "Relay" as const, address: "/" + "a".repeat(199) }];
  for (const meetingAddresses of [five, long]) {
    const ix: CoordinatorInstruction = { kind: "Update", meetingAddresses };
    assert.deepEqual(decodeCoordinatorInstruction(encodeCoordinatorInstruction(ix)), ix);
  }
  decodeFails([1, 32], /^parts$/);
  decodeFails([1, 16, 1, 2, 1, 0x2f], /^meetingAddresses\[0\]\.kind$/);
  decodeFails([1, 16, 1, 0, 2, 0x2f], /^meetingAddresses\[0\]\.address$/);
  decodeFails([1, 16, 1, 0, 2, 0x2f, 0xff], /^meetingAddresses\[0\]\.address$/);
  decodeFails([1, 16, 2, 0, 1, 0x2f], /^meetingAddresses\[1\]\.kind$/);
  assert.throws(
    () =>
      encodeCoordinatorInstruction({
        kind: "Update",
        meetingAddresses: [{ kind: "Relay", address: "/" + "a".repeat(255) }],
      }),
    /meetingAddresses\[0\]\.address must be a string of at most 255 UTF-8 bytes/,
  );
  assert.throws(
    () =>
      encodeCoordinatorInstruction({
        kind: "Update",
        meetingAddresses: [{ kind: "Gateway" as never, address: relay }],
      }),
    /meetingAddresses\[0\]\.kind is unknown: Gateway/,
  );
});

Deno.test("instructions: a fractional duration is refused with its run-config key, not rounded", () => {
  const config = { ...zeroConfig(4), roundWitnessTime: 0.1 };
  assert.throws(
    () => encodeCoordinatorInstruction({ kind: "Update", config }),
    (e: unknown) =>
      e instanceof RangeError &&
      e.message === "config.round_witness_time = 0.1: the Solana program keeps durations in " +
          "whole seconds; use a whole number (fractional seconds need the TCP coordinator)",
  );
  assert.throws(
    () => encodeConfigBytes({ ...zeroConfig(4), waitingForMembersExtraTime: 1.5 }),
    /^RangeError: config\.waiting_for_members_extra_time = 1\.5: /,
  );
  const whole = { ...zeroConfig(4), roundWitnessTime: 2, warmupTime: 30 };
  assert.deepEqual(decodeConfigBytes(encodeConfigBytes(whole)), whole);
});

Deno.test("instructions: a witness's metadata tail round-trips; a bad or misplaced one does not decode", () => {
  const metadata = {
    step: 12,
    loss: 2.5,
    tokensPerSec: 800,
    bandwidthPerSec: 3e5,
    efficiency: 0.9,
  };
  const ix: CoordinatorInstruction = {
    kind: "Witness",
    witness: witnessFor(8),
    paramsDigest: DIGEST,
    metadata,
  };
  const bytes = encodeCoordinatorInstruction(ix);
  assert.equal(bytes.length, witnessInstructionBytes(8) + WITNESS_TAIL_BYTES);
  assert.deepEqual(decodeCoordinatorInstruction(bytes), ix);
  const loss = bytes.slice();
  new DataView(loss.buffer).setFloat64(bytes.length - 32, NaN, true);
  assert.throws(
    () => decodeCoordinatorInstruction(loss),
    (e) =>
      e instanceof InstructionDecodeError && /"metadata\.loss".*NaN is not finite/.test(e.message),
  );
  assert.throws(
    () => decodeCoordinatorInstruction(bytes.subarray(0, bytes.length - 1)),
    /truncated/,
  );
  const warmup = bytes.slice();
  warmup[0] = INSTRUCTION_KINDS.indexOf("WarmupWitness");
  assert.throws(() => decodeCoordinatorInstruction(warmup), /trailing bytes/);
  assert.throws(
    () => encodeCoordinatorInstruction({ ...ix, metadata: { ...metadata, efficiency: Infinity } }),
    /metadata\.efficiency must be finite/,
  );
});
