import assert from "node:assert/strict";
import {
  ACCOUNT_SIZE,
  AccountDecodeError,
  decodeCoordinatorAccount,
  isCoordinatorAccount,
  OFFSETS,
  pendingRegistrations,
} from "./account.ts";
import { coordinatorAccountFilters } from "./addresses.ts";
import { structLayout } from "./layout.ts";
import { measureComputeUnits } from "../testing/compute_units.ts";
import { getBase58Encoder } from "@solana/kit";
import { CoordinatorSvm } from "../testing/svm.ts";

const svm = await CoordinatorSvm.create();
const { coordinator } = await measureComputeUnits(16, svm);
const BYTES = svm.accountBytes(coordinator)!;

function fails(
  mutate: (b: Uint8Array, v: DataView) => Uint8Array | void,
  field: RegExp,
  offset?: number,
): void {
  const b = BYTES.slice();
  const out = mutate(b, new DataView(b.buffer)) ?? b;
  assert.throws(
    () => decodeCoordinatorAccount(out),
    (e) =>
      e instanceof AccountDecodeError && field.test(e.field) &&
      (offset === undefined || e.offset === offset),
  );
}

Deno.test("account: a live 16-client run decodes", () => {
  assert.ok(isCoordinatorAccount(BYTES));
  const a = decodeCoordinatorAccount(BYTES);
  assert.equal(a.state.runState, "RoundTrain");
  assert.equal(a.state.epochState.clients.length, 16);
  assert.equal(a.state.epochState.rounds.reduce((n, r) => n + r.witnesses.length, 0) > 0, true);
  assert.equal(a.version, 7);
  // The measured run names the most meeting addresses, each of the longest length.
  assert.deepEqual(a.meetingAddresses.map((m) => [m.kind, m.address.length]), [
    ["Relay", 192],
    ["Bootstrap", 192],
    ["Bootstrap", 192],
    ["Bootstrap", 192],
  ]);
  assert.equal(a.state.config.verificationBarEpochs, 4);
  assert.deepEqual(a.state.epochState.verificationTasks, []);
  assert.deepEqual(a.state.ejections, []);
  assert.ok(a.state.epochState.rounds.every((r) => r.rejected.length === 0));
  // Warmup recorded the digest every client reported for the model it loaded, and each
  // finished round the digest its witnesses reported.
  assert.ok(a.state.paramsDigests.length >= 2);
  assert.equal(a.state.paramsDigests[0].step, a.state.epochState.startStep);
  assert.ok(a.state.paramsDigests.every((r) => r.digest.every((b) => b === 0xd1)));
  assert.ok(a.nonce > 16n);
  assert.equal(
    pendingRegistrations(a).length,
    0,
    "everyone must join again after the epoch started",
  );
  assert.equal(a.registry.length, 16);
  assert.equal(a.nextActive, 2n);
});

Deno.test("account: decoding names what is wrong", () => {
  fails(() => BYTES.subarray(0, ACCOUNT_SIZE - 1), /^size$/, 0);
  fails(
    (b) => {
      b[0] = 0;
    },
    /^magic$/,
    0,
  );
  fails((_, v) => v.setUint32(OFFSETS.version, 1, true), /^version$/, OFFSETS.version);
  fails((b) => {
    b[OFFSETS.digestRecordsLen] = 9;
  }, /^paramsDigests\.length$/);
  fails(
    (b) => b.fill(0, OFFSETS.digestRecords + 4, OFFSETS.digestRecords + 36),
    /^paramsDigests\[0\]\.digest$/,
  );
  fails((b) => {
    b[OFFSETS.digestVotesLen] = 33;
  }, /^epochState\.digestVotes\.length$/);
  fails((_, v) => v.setUint32(OFFSETS.flags, 4, true), /^flags$/);
  fails((_, v) => v.setUint16(OFFSETS.config + 64, 0, true), /^config\.maxClients$/);
  fails((_, v) => v.setUint16(OFFSETS.epochState + 16, 300, true), /^epochState\.clients\.length$/);
  fails(
    (b) => {
      b[OFFSETS.runState] = 9;
    },
    /^runState$/,
    -1,
  );
  fails(
    (b) => {
      b[OFFSETS.runIdLen] = 33;
    },
    /^runId\.length$/,
    OFFSETS.runIdLen,
  );
  const snapshotDtype = OFFSETS.model + structLayout("model_t").offsets.snapshotDtype;
  fails(
    (b) => {
      b[snapshotDtype] = 2;
    },
    /^model\.snapshotDtype$/,
    snapshotDtype,
  );
  fails((_, v) => v.setUint16(OFFSETS.registryLen, 257, true), /^registry\.length$/);
  fails((b) => {
    b[OFFSETS.metadata + 18] = 1;
    b[OFFSETS.metadata + 24] = 0xff;
  }, /^metadata\.name$/);
  assert.equal(isCoordinatorAccount(new Uint8Array(ACCOUNT_SIZE)), false);
});

const ES = structLayout("epoch_state_t").offsets;
const TASK = structLayout("task_t");
const SEAT = structLayout("seat_t");
const EJECTION = structLayout("ejection_t");
const ROUND = structLayout("round_t");
/** Where task `i`'s field `field` sits. */
const taskAt = (i: number, field: string) =>
  OFFSETS.epochState + ES.verificationTasks + i * TASK.size + TASK.offsets[field];
/** Where seat `s` of task 0 has its field `field`. */
const seatAt = (s: number, field: string) =>
  taskAt(0, "seats") + s * SEAT.size + SEAT.offsets[field];
const rejectedAt = (slot: number) =>
  OFFSETS.epochState + ES.rounds + slot * ROUND.size + ROUND.offsets.rejected;

/** BYTES with one open task (two seats), a rejected trainer and one ejection record. */
function withVerification(): Uint8Array {
  const b = BYTES.slice();
  const v = new DataView(b.buffer);
  b[OFFSETS.epochState + ES.verificationTasksLen] = 1;
  v.setUint32(taskAt(0, "height"), 2, true);
  v.setUint32(taskAt(0, "deadline"), 4, true);
  v.setBigUint64(taskAt(0, "openedAt"), 1_700_000_123n, true);
  v.setUint16(taskAt(0, "trainer"), 5, true);
  b[taskAt(0, "stage")] = 1;
  b[taskAt(0, "seatsLen")] = 2;
  v.setUint16(seatAt(0, "verifier"), 1, true);
  b[seatAt(0, "verdict")] = 2;
  b[seatAt(0, "evidence")] = 3;
  v.setUint32(seatAt(0, "detail"), 9000, true);
  v.setUint16(seatAt(1, "verifier"), 15, true);
  b[seatAt(1, "stage")] = 1;
  b[rejectedAt(1)] = 0b1001;
  b[rejectedAt(1) + 1] = 0b1000_0000;
  b[OFFSETS.ejectionsLen] = 1;
  b.fill(0xab, OFFSETS.ejections, OFFSETS.ejections + 32);
  v.setUint32(OFFSETS.ejections + EJECTION.offsets.step, 77, true);
  v.setUint16(OFFSETS.ejections + EJECTION.offsets.epoch, 3, true);
  v.setUint16(OFFSETS.ejections + EJECTION.offsets.barredUntil, 8, true);
  b[OFFSETS.ejections + EJECTION.offsets.cause] = 3;
  v.setUint16(OFFSETS.config + structLayout("config_t").offsets.verificationBarEpochs, 9, true);
  return b;
}

Deno.test("account: version 3's verification decodes into the state's shapes", () => {
  const state = decodeCoordinatorAccount(withVerification()).state;
  assert.equal(state.config.verificationBarEpochs, 9);
  assert.deepEqual(state.epochState.verificationTasks, [{
    height: 2,
    trainer: 5,
    stage: "TieBreak",
    deadline: 4,
    openedAt: 1_700_000_123,
    decided: null,
    seats: [
      { verifier: 1, stage: "Verify", verdict: "Fail", evidence: "ChainBreak", detail: 9000 },
      { verifier: 15, stage: "TieBreak", verdict: null, evidence: "None", detail: 0 },
    ],
  }]);
  assert.deepEqual(state.epochState.rounds.map((r) => r.rejected), [[], [0, 3, 15], [], []]);
  assert.deepEqual(state.ejections, [{
    signer: new Uint8Array(32).fill(0xab),
    epoch: 3,
    step: 77,
    cause: "IdleVerifier",
    evidence: "None",
    barredUntil: 8,
  }]);
});

Deno.test("account: verification defects name their field", () => {
  const broken = (mutate: (b: Uint8Array, v: DataView) => void, field: RegExp, at?: number) =>
    fails(
      (b, v) => {
        b.set(withVerification());
        mutate(b, v);
      },
      field,
      at,
    );
  broken(
    (b) => b[OFFSETS.epochState + ES.verificationTasksLen] = 17,
    /^epochState\.verificationTasks\.length$/,
  );
  broken(
    (_, v) => v.setUint16(taskAt(0, "trainer"), 16, true),
    /^epochState\.verificationTasks\[0\]\.trainer$/,
    taskAt(0, "trainer"),
  );
  broken((b) => b[taskAt(0, "stage")] = 2, /^epochState\.verificationTasks\[0\]\.stage$/);
  broken(
    (b) => b[taskAt(0, "seatsLen")] = 7,
    /^epochState\.verificationTasks\[0\]\.seats\.length$/,
  );
  broken(
    (_, v) => v.setUint16(seatAt(1, "verifier"), 16, true),
    /^epochState\.verificationTasks\[0\]\.seats\[1\]\.verifier$/,
  );
  broken((b) => b[seatAt(0, "verdict")] = 3, /seats\[0\]\.verdict$/);
  broken((b) => b[seatAt(0, "evidence")] = 7, /seats\[0\]\.evidence$/);
  broken((b) => b[seatAt(0, "evidence")] = 0, /seats\[0\]\.evidence$/, seatAt(0, "evidence"));
  broken((b) => b[seatAt(1, "evidence")] = 1, /seats\[1\]\.evidence$/);
  broken((b) => b[rejectedAt(2) + 2] = 1, /^epochState\.rounds\[2\]\.rejected$/, rejectedAt(2) + 2);
  broken((b) => b[OFFSETS.ejectionsLen] = 33, /^ejections\.length$/);
  broken((b) => b[OFFSETS.ejections + EJECTION.offsets.cause] = 5, /^ejections\[0\]\.cause$/);
  broken((b) => b[OFFSETS.ejections + EJECTION.offsets.evidence] = 7, /^ejections\[0\]\.evidence$/);
});

const MEETING = structLayout("meeting_address_t");
/** Writes meeting address `i` of `b` (kind code, then the text's bytes) and the count `n`. */
function setMeeting(b: Uint8Array, i: number, kind: number, text: string, n = i + 1): void {
  const at = OFFSETS.meetingAddresses + i * MEETING.size;
  const bytes = new TextEncoder().encode(text);
  b[at + MEETING.offsets.kind] = kind;
  b[at + MEETING.offsets.len] = bytes.length;
  b.set(bytes, at + MEETING.offsets.address);
  b[OFFSETS.meetingAddressesLen] = n;
}

Deno.test("account: version 4's meeting addresses decode in order; defects name their field", () => {
  const relay = "/ip4/203.0.113.7/tcp/4001/p2p/12D3KooWabc";
  const peer = "/dns4/peer.example/tcp/4001/p2p/12D3KooWdef";
  const b = BYTES.slice();
  setMeeting(b, 0, 0, relay);
  setMeeting(b, 1, 1, peer);
  assert.deepEqual(decodeCoordinatorAccount(b).meetingAddresses, [
    { kind: "Relay", address: relay },
    { kind: "Bootstrap", address: peer },
  ]);
  const entry = (i: number, field: string) =>
    OFFSETS.meetingAddresses + i * MEETING.size + MEETING.offsets[field];
  fails(
    (b) => setMeeting(b, 0, 0, relay, 5),
    /^meetingAddresses\.length$/,
    OFFSETS.meetingAddressesLen,
  );
  fails((b) => setMeeting(b, 0, 2, relay), /^meetingAddresses\[0\]\.kind$/, entry(0, "kind"));
  fails(
    (b) => {
      setMeeting(b, 0, 0, relay);
      b[entry(0, "len")] = 193;
    },
    /^meetingAddresses\[0\]\.address\.length$/,
    entry(0, "len"),
  );
  fails(
    (b) => {
      setMeeting(b, 0, 0, relay);
      setMeeting(b, 1, 1, "/ip4/203.0.113.7/tcp/4001");
    },
    /^meetingAddresses\[1\]\.address$/,
    entry(1, "address"),
  );
  fails((b) => setMeeting(b, 0, 0, "/dns4/é/p2p/x"), /^meetingAddresses\[0\]\.address$/);
  fails((b) => setMeeting(b, 0, 0, ""), /^meetingAddresses\[0\]\.address$/);
  // A version 3 account (no meeting addresses, 784 bytes shorter) is refused, as version 2 was.
  fails((_, v) => v.setUint32(OFFSETS.version, 3, true), /^version$/, OFFSETS.version);
  fails(() => BYTES.subarray(0, OFFSETS.meetingAddressesLen), /^size$/, 0);
});

Deno.test("account: version 5's epoch rates and earned points decode; stray points are refused", () => {
  const b = BYTES.slice();
  const v = new DataView(b.buffer);
  const RATES = structLayout("epoch_rates_t").offsets;
  const setRates = (at: number, earning: bigint, slashing: bigint) => {
    v.setBigUint64(at + RATES.earningRateTotalShared, earning, true);
    v.setBigUint64(at + RATES.slashingRatePerClient, slashing, true);
  };
  setRates(OFFSETS.currentEpochRates, 1000n, 0n);
  setRates(OFFSETS.futureEpochRates, 0n, 7n);
  v.setBigUint64(OFFSETS.earned + 3 * 8, 0xffff_ffff_ffff_ffffn, true);
  v.setBigUint64(OFFSETS.earned + 15 * 8, 333n, true);
  const a = decodeCoordinatorAccount(b);
  assert.deepEqual(a.currentEpochRates, {
    earningRateTotalShared: 1000n,
    slashingRatePerClient: 0n,
  });
  assert.deepEqual(a.futureEpochRates, { earningRateTotalShared: 0n, slashingRatePerClient: 7n });
  assert.deepEqual(
    a.registry.map((r) => r.earned),
    Array.from(
      { length: 16 },
      (_, i) => [0n, 0n, 0n, 0xffff_ffff_ffff_ffffn][i] ?? (i === 15 ? 333n : 0n),
    ),
  );
  // Points past the registrations in use belong to nobody.
  fails(
    (_, v) => v.setBigUint64(OFFSETS.earned + 16 * 8, 1n, true),
    /^earned\[16\]$/,
    OFFSETS.earned + 128,
  );
  // A version 4 account (no rates or points, 2,080 bytes shorter) is refused.
  fails((_, v) => v.setUint32(OFFSETS.version, 4, true), /^version$/, OFFSETS.version);
  fails(() => BYTES.subarray(0, OFFSETS.currentEpochRates), /^size$/, 0);
});

Deno.test("account: the model's snapshot dtype is read from the byte after the optimizer", () => {
  const at = OFFSETS.model + structLayout("model_t").offsets.snapshotDtype;
  assert.equal(at, OFFSETS.model + 548);
  assert.equal(BYTES[at], 0);
  assert.equal(decodeCoordinatorAccount(BYTES).state.model.snapshotDtype, "f32");
  const bf16 = BYTES.slice();
  bf16[at] = 1;
  assert.equal(decodeCoordinatorAccount(bf16).state.model.snapshotDtype, "bf16");
});

Deno.test("account: docs/solana-program.md lists the decoder's header offsets", async () => {
  const doc = await Deno.readTextFile(new URL("../../../docs/solana-program.md", import.meta.url));
  const rows = new Map<string, number>();
  // The account's own table: from its heading to the next one (the repeated structures'
  // tables below it start at offset 0 and reuse names such as `step`).
  const section = doc.slice(doc.indexOf("### The account ("));
  for (const line of section.slice(0, section.indexOf("\n#", 1)).split("\n")) {
    const m = /^\|\s*(\d+)\s*\|\s*\d+\s*\|\s*([A-Za-z.]+)\s*\|/.exec(line);
    if (m) rows.set(m[2], Number(m[1]));
  }
  const names: Record<string, string> = {
    "progress.step": "step",
    "progress.epochStartDataIndex": "epochStartDataIndex",
    "progress.epoch": "epoch",
  };
  let checked = 0;
  for (const [docName, offset] of rows) {
    const key = (names[docName] ?? docName) as keyof typeof OFFSETS;
    if (!(key in OFFSETS)) continue;
    assert.equal(offset, OFFSETS[key], `${docName} is documented at ${offset}`);
    checked++;
  }
  assert.ok(checked >= 18, `only ${checked} header rows matched`);
});

Deno.test("account: getProgramAccounts filters select coordinator accounts", () => {
  const [size, magic] = coordinatorAccountFilters();
  assert.equal(size.dataSize, BigInt(BYTES.length));
  const bytes = getBase58Encoder().encode(magic.memcmp.bytes);
  assert.deepEqual([...bytes], [...BYTES.subarray(0, 8)]);
});
