import assert from "node:assert/strict";
import fc from "fast-check";
import {
  decodeCoordinatorState,
  encodeCoordinatorState,
  STATE_ENCODING_VERSION,
  StateDecodeError,
} from "./mod.ts";
import { arbCoordinatorState } from "./testing/arbitraries.ts";
import { coordinatorStateFromJson, coordinatorStateToJson } from "./json.ts";
import {
  type Client,
  type CoordinatorState,
  createBloom,
  type Round,
  type Witness,
  witnessBloomParameters,
} from "../core/mod.ts";

const MAX_CLIENTS = 8;

function key(n: number): Uint8Array {
  return Uint8Array.from({ length: 32 }, (_, i) => (n * 31 + i) & 0xff);
}

function witness(index: number): Witness {
  const { numBits, numKeys } = witnessBloomParameters(MAX_CLIENTS);
  const keys = BigUint64Array.from({ length: numKeys }, (_, i) => BigInt(i + 1) << 40n);
  const participantBloom = createBloom(numBits, keys);
  participantBloom.bits[0] = 0b1010_0101;
  return {
    proof: { position: index + 1, index, witness: true },
    participantBloom,
    broadcastBloom: createBloom(numBits, keys),
    broadcastMerkle: key(100 + index),
  };
}

function round(height: number, witnesses: Witness[] = []): Round {
  return {
    witnesses,
    dataIndex: height * 16,
    randomSeed: 0xfedcba9876543210n + BigInt(height),
    height,
    clientsLen: 3,
    tieBreakerTasks: 0,
    rejected: [],
  };
}

function client(n: number, state: Client["state"] = "Healthy"): Client {
  return {
    id: { signer: key(n), p2pIdentity: key(n + 50) },
    state,
    exitedHeight: 0,
    epochIndex: n,
  };
}

/** A small but complete state: every section present, witnesses with blooms, UTF-8 strings. */
function sampleState(): CoordinatorState {
  return {
    runId: "tiny-ø",
    runState: "RoundTrain",
    model: {
      architecture: "HfLlama",
      dataType: "Pretraining",
      maxSeqLen: 256,
      coldStartWarmupSteps: 0,
      snapshotDtype: "f32",
      dataLocation: {
        kind: "Http",
        location: {
          kind: "NumberedFiles",
          urlTemplate: "https://x/{}.ds",
          startIndex: 0,
          nLeftPadZeros: 3,
          numFiles: 10,
        },
        tokenSizeInBytes: "TwoBytes",
        shuffle: { kind: "Seeded", seed: key(7) },
      },
      checkpoint: { kind: "Hub", repo: { repoId: "org/model", revision: null } },
      lrSchedule: {
        kind: "Cosine",
        baseLr: 4e-4,
        warmupSteps: 10,
        warmupInitLr: 0,
        totalSteps: 100,
        finalLr: 4e-5,
      },
      optimizer: {
        kind: "Distro",
        clipGradNorm: 1,
        weightDecay: null,
        compressionDecay: 0.999,
        compressionTopk: 8,
        compressionChunk: 64,
        quantize1bit: true,
      },
    },
    config: {
      warmupTime: 15,
      cooldownTime: 5,
      maxRoundTrainTime: 30,
      roundWitnessTime: 2,
      globalBatchSizeWarmupTokens: 0,
      epochTime: 120,
      totalSteps: 100,
      initMinClients: 1,
      minClients: 1,
      witnessNodes: 1,
      globalBatchSizeStart: 8,
      globalBatchSizeEnd: 8,
      verificationPercent: 0,
      waitingForMembersExtraTime: 3,
      maxClients: MAX_CLIENTS,
      verificationBarEpochs: 4,
    },
    progress: { epoch: 2, step: 17, epochStartDataIndex: 128 },
    epochState: {
      rounds: [round(4, [witness(0), witness(2)]), round(5, [witness(1)]), round(2), round(3)],
      clients: [client(0), client(1), client(2, "Dropped")],
      exitedClients: [{ ...client(3, "Withdrawn"), exitedHeight: 1 }],
      roundsHead: 1,
      startStep: 12,
      lastStep: 0,
      startTimestamp: 1_700_000_000,
      firstRound: false,
      coldStartEpoch: false,
      digestVotes: [{ index: 1, digest: new Uint8Array(32).fill(9) }],
      verificationTasks: [],
    },
    runStateStartUnixTimestamp: 1_700_000_100,
    pendingPause: false,
    paramsDigests: [
      { step: 15, digest: new Uint8Array(32).fill(3) },
      { step: 17, digest: new Uint8Array(32).fill(4) },
    ],
    ejections: [],
  };
}

/** Byte offset of the first byte that changes when `mutate` is applied to the sample. */
function offsetOf(mutate: (s: CoordinatorState) => void): number {
  const a = encodeCoordinatorState(sampleState());
  const s = sampleState();
  mutate(s);
  const b = encodeCoordinatorState(s);
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  throw new Error("mutation changed nothing");
}

function decodeError(bytes: Uint8Array): StateDecodeError {
  try {
    decodeCoordinatorState(bytes);
  } catch (e) {
    if (e instanceof StateDecodeError) return e;
    throw e;
  }
  throw new Error("expected a StateDecodeError");
}

Deno.test("sample state round trips", () => {
  const s = sampleState();
  assert.deepEqual(decodeCoordinatorState(encodeCoordinatorState(s)), s);
});

Deno.test("header and first fields sit where docs/state-encoding.md says", () => {
  const b = encodeCoordinatorState(sampleState());
  assert.deepEqual(Array.from(b.subarray(0, 4)), [0x50, 0x53, 0x59, 0x43]); // "PSYC"
  assert.deepEqual(Array.from(b.subarray(4, 8)), [STATE_ENCODING_VERSION, 0, 0, 0]);
  // runId "tiny-ø": 7 UTF-8 bytes (ø is c3 b8), then runState RoundTrain = code 3.
  assert.equal(b[8], 7);
  assert.deepEqual(Array.from(b.subarray(9, 16)), [0x74, 0x69, 0x6e, 0x79, 0x2d, 0xc3, 0xb8]);
  assert.equal(b[16], 3);
  // The version 5 tail: no verification tasks, no ejections (two counts). Before it the
  // version 3 tail: one digest vote (count, u16 index, 32 bytes), two records (count,
  // 2 x (u32 step, 32 bytes)). Before that pendingPause, and the 8 bytes before that
  // runStateStartUnixTimestamp in milliseconds, little-endian.
  assert.deepEqual(Array.from(b.subarray(b.length - 2)), [0, 0]);
  const tail = 1 + 34 + 1 + 2 * 36 + 2;
  const digests = b.subarray(b.length - tail);
  assert.deepEqual([digests[0], digests[1], digests[2], digests[3]], [1, 1, 0, 9]);
  assert.deepEqual([digests[35], digests[36], digests[40]], [2, 15, 3]);
  assert.equal(b[b.length - tail - 1], 0);
  const ts = new DataView(b.buffer, b.byteOffset + b.length - tail - 9, 8)
    .getBigUint64(0, true);
  assert.equal(ts, 1_700_000_100_000n);
});

Deno.test("the smallest state is 274 bytes, as summed in docs/state-encoding.md", () => {
  const s = sampleState();
  s.runId = "";
  s.model = {
    ...s.model,
    dataLocation: { kind: "Dummy" },
    checkpoint: { kind: "Ephemeral" },
    lrSchedule: { kind: "Constant", baseLr: 0, warmupSteps: 0, warmupInitLr: 0 },
    optimizer: { kind: "Dummy" },
  };
  s.epochState.rounds = s.epochState.rounds.map((r) => ({ ...r, witnesses: [] }));
  s.epochState.clients = [];
  s.epochState.exitedClients = [];
  s.epochState.digestVotes = [];
  s.paramsDigests = [];
  // header 8 + runId 1 + runState 1 + model (2 codes + 2 u32 + 1 + 1 + 21 + 1 + 1 = 35)
  // + config 71 + progress 14 + rounds 4 x (1 + 8 + 8 + 4 + 2 + 2 + 2) + list counts 4
  // + epoch tail 19 + timestamp 8 + pendingPause 1 + digest counts 2 + verification counts 2.
  // Version 4 has no bar epochs and no rejected lists (a 69-byte config, 25-byte rounds) and
  // no verification counts; version 3 no snapshot dtype either (a 34-byte model); version 2
  // no digest counts either; version 1 also has a 66-byte config.
  assert.equal(
    encodeCoordinatorState(s).length,
    8 + 2 + 35 + 71 + 14 + 108 + 4 + 19 + 9 + 2 + 2,
  );
  assert.equal(encodeCoordinatorState(s, { version: 4 }).length, 262);
  assert.equal(encodeCoordinatorState(s, { version: 3 }).length, 261);
  assert.equal(encodeCoordinatorState(s, { version: 2 }).length, 259);
  assert.equal(encodeCoordinatorState(s, { version: 1 }).length, 256);
});

Deno.test("a client takes 71 bytes: signer, p2p key, state, exited height, epoch index", () => {
  const a = sampleState();
  const b = sampleState();
  b.epochState.clients.push(client(4));
  assert.equal(
    encodeCoordinatorState(b).length - encodeCoordinatorState(a).length,
    32 + 32 + 1 + 4 + 2,
  );
});

Deno.test("a witness takes 9 bytes of proof, two sized blooms and a 32-byte root", () => {
  // maxClients 8: ceil(8 * 9.585) = 77 → 128 bits (16 bytes); round(128 / 8 * ln 2) = 11 keys.
  assert.deepEqual(witnessBloomParameters(MAX_CLIENTS), { numBits: 128, numKeys: 11 });
  const bloomBytes = 1 + 4 + 11 * 8 + 16;
  const a = sampleState();
  const b = sampleState();
  b.epochState.rounds[2].witnesses.push(witness(2));
  assert.equal(
    encodeCoordinatorState(b).length - encodeCoordinatorState(a).length,
    4 + 4 + 1 + 2 * bloomBytes + 32,
  );
});

Deno.test("property: every encodable state round trips (binary and JSON text)", () => {
  fc.assert(
    fc.property(arbCoordinatorState(), (s) => {
      const bytes = encodeCoordinatorState(s);
      assert.deepEqual(decodeCoordinatorState(bytes), s);
      const text = JSON.stringify(coordinatorStateToJson(s));
      assert.deepEqual(coordinatorStateFromJson(JSON.parse(text)), s);
    }),
    { numRuns: 120 },
  );
});

Deno.test("truncation at every byte offset is rejected", () => {
  const b = encodeCoordinatorState(sampleState());
  for (let n = 0; n < b.length; n++) {
    const e = decodeError(b.subarray(0, n));
    assert.match(e.message, /truncated/, `prefix of ${n} bytes: ${e.message}`);
  }
});

Deno.test("trailing bytes are rejected", () => {
  const b = encodeCoordinatorState(sampleState());
  const longer = new Uint8Array(b.length + 1);
  longer.set(b);
  const e = decodeError(longer);
  assert.equal(e.field, "end");
  assert.equal(e.offset, b.length);
});

Deno.test("property: random corruption never throws anything but StateDecodeError", () => {
  fc.assert(
    fc.property(
      arbCoordinatorState({ maxClients: 4, maxWitnesses: 1 }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 7 })), { minLength: 1, maxLength: 4 }),
      fc.nat(),
      (s, flips, cut) => {
        const b = encodeCoordinatorState(s);
        for (const [at, bit] of flips) b[at % b.length] ^= 1 << bit;
        for (const candidate of [b, b.subarray(0, cut % (b.length + 1))]) {
          try {
            decodeCoordinatorState(candidate);
          } catch (e) {
            assert.ok(e instanceof StateDecodeError, `unexpected ${e}`);
          }
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("every single-bit flip of the sample decodes or throws StateDecodeError", () => {
  const b = encodeCoordinatorState(sampleState());
  let rejected = 0;
  for (let i = 0; i < b.length * 8; i++) {
    const c = b.slice();
    c[i >> 3] ^= 1 << (i & 7);
    try {
      decodeCoordinatorState(c);
    } catch (e) {
      assert.ok(e instanceof StateDecodeError, `bit ${i}: unexpected ${e}`);
      rejected++;
    }
  }
  // Length, code and flag bytes make many flips fatal; payload bytes (keys, bits) do not.
  assert.ok(rejected > 0 && rejected < b.length * 8, `${rejected} rejected`);
});

Deno.test("non-byte input is a StateDecodeError too", () => {
  assert.throws(
    () => decodeCoordinatorState("PSYC" as unknown as Uint8Array),
    (e) => e instanceof StateDecodeError && e.field === "input",
  );
});

Deno.test("bad magic, version and reserved bytes", () => {
  const b = encodeCoordinatorState(sampleState());
  const bad = (at: number, v: number) => {
    const c = b.slice();
    c[at] = v;
    return decodeError(c);
  };
  assert.equal(bad(0, 0x51).field, "header.magic");
  const v = bad(4, 6);
  assert.equal(v.field, "header.version");
  assert.match(v.message, /unsupported version 6 \(this build reads 1, 2, 3, 4, 5\)/);
  assert.equal(bad(6, 1).field, "header.reserved");
});

Deno.test("each defect names its field and offset", () => {
  const cases: Array<{
    name: string;
    mutate: (s: CoordinatorState) => void;
    patch: (b: Uint8Array, at: number) => void;
    field: string;
    message: RegExp;
    /** Where the error points relative to the first changed byte (default: there). */
    offsetDelta?: number;
  }> = [
    {
      name: "unknown run state",
      mutate: (s) => (s.runState = "Cooldown"),
      patch: (b, at) => (b[at] = 8),
      field: "runState",
      message: /unknown code 8/,
    },
    {
      name: "unknown client state",
      mutate: (s) => (s.epochState.clients[1].state = "Ejected"),
      patch: (b, at) => (b[at] = 4),
      field: "epochState.clients[1].state",
      message: /unknown code 4/,
    },
    {
      name: "boolean other than 0/1",
      mutate: (s) => (s.epochState.coldStartEpoch = true),
      patch: (b, at) => (b[at] = 2),
      field: "epochState.coldStartEpoch",
      message: /expected a boolean/,
    },
    {
      name: "roundsHead >= 4",
      mutate: (s) => (s.epochState.roundsHead = 2),
      patch: (b, at) => (b[at] = 4),
      field: "epochState.roundsHead",
      message: /must be below 4/,
    },
    {
      name: "string over its cap",
      mutate: (s) => (s.runId = "x".repeat(8)),
      patch: (b, at) => (b[at] = 33),
      field: "runId",
      message: /exceeds the cap of 32/,
    },
    {
      name: "bad UTF-8",
      mutate: (s) => (s.runId = "tiny-ü"),
      patch: (b, at) => (b[at] = 0xff),
      field: "runId",
      message: /not valid UTF-8/,
      offsetDelta: -6, // the string's first byte; the bad byte is its 7th
    },
    {
      name: "witness list over its cap",
      mutate: (s) => s.epochState.rounds[3].witnesses.push(witness(0)),
      patch: (b, at) => (b[at] = 33),
      field: "epochState.rounds[3].witnesses.length",
      message: /exceeds the cap of 32/,
    },
    {
      name: "client list over config.maxClients",
      mutate: (s) => s.epochState.clients.push(client(5)),
      patch: (b, at) => (b[at] = MAX_CLIENTS + 1),
      field: "epochState.clients.length",
      message: /exceeds the cap of 8/,
    },
    {
      name: "bloom sized for another client cap",
      mutate: (s) => (s.epochState.rounds[0].witnesses[0].participantBloom.bits[0] = 0),
      patch: (b, at) => (b[at - 11 * 8 - 4 - 1] = 10), // bits[0] → back over keys, bits.length
      field: "epochState.rounds[0].witnesses[0].participantBloom.keys.length",
      message: /10 keys, but config.maxClients = 8 requires 11/,
      offsetDelta: -(11 * 8 + 4 + 1),
    },
    {
      name: "clientsLen over config.maxClients",
      mutate: (s) => (s.epochState.rounds[1].clientsLen = 2),
      patch: (b, at) => (b[at] = MAX_CLIENTS + 1),
      field: "epochState.rounds[1].clientsLen",
      message: /exceeds config.maxClients/,
    },
    {
      name: "integer beyond 2^53 - 1",
      mutate: (s) => (s.progress.epochStartDataIndex = 129),
      patch: (b, at) => (b[at + 7] = 0x01),
      field: "progress.epochStartDataIndex",
      message: /exceeds the largest safe integer/,
    },
    {
      name: "non-finite float",
      // Flip the lowest mantissa bit so the first changed byte is the field's first byte.
      mutate: (s) => {
        if (s.model.lrSchedule.kind === "Cosine") {
          const f = new Float64Array([s.model.lrSchedule.finalLr]);
          new Uint8Array(f.buffer)[0] ^= 1;
          s.model.lrSchedule.finalLr = f[0];
        }
      },
      patch: (b, at) => new DataView(b.buffer, b.byteOffset).setFloat64(at, Number.NaN, true),
      field: "model.lrSchedule.finalLr",
      message: /expected a finite number/,
    },
    {
      name: "unknown data location kind",
      mutate: (s) => (s.model.dataLocation = { kind: "Dummy" }),
      patch: (b, at) => (b[at] = 6),
      field: "model.dataLocation.kind",
      message: /unknown code 6/,
    },
  ];
  for (const c of cases) {
    const s = sampleState();
    c.mutate(s);
    const at = offsetOf(c.mutate);
    const b = encodeCoordinatorState(s);
    c.patch(b, at);
    let e: StateDecodeError;
    try {
      e = decodeError(b);
    } catch (err) {
      throw new Error(`${c.name}: ${err}`);
    }
    assert.equal(e.field, c.field, c.name);
    assert.match(e.message, c.message, c.name);
    assert.equal(e.offset, at + (c.offsetDelta ?? 0), c.name);
  }
});

Deno.test("the encoder refuses what the layout cannot carry, naming the path", () => {
  const cases: Array<[string, (s: CoordinatorState) => void, RegExp]> = [
    ["runId too long", (s) => (s.runId = "x".repeat(33)), /runId is 33 UTF-8 bytes/],
    ["lone surrogate", (s) => (s.runId = "\ud800"), /runId contains a lone UTF-16 surrogate/],
    ["three rounds", (s) => s.epochState.rounds.pop(), /rounds must hold exactly 4/],
    [
      "bloom of the wrong size",
      (s) => (s.epochState.rounds[0].witnesses[0].broadcastBloom.bits = new Uint8Array(8)),
      /rounds\[0\]\.witnesses\[0\]\.broadcastBloom has 11 keys and 64 bits/,
    ],
    ["u16 overflow", (s) => (s.progress.epoch = 70_000), /progress\.epoch must be an integer/],
    ["NaN", (s) => (s.model.optimizer = { kind: "Dummy" }, s.model.maxSeqLen = NaN), /maxSeqLen/],
    ["roundsHead 4", (s) => (s.epochState.roundsHead = 4), /roundsHead must be below 4/],
    ["unknown kind", (s) => ((s.runState as string) = "Running"), /runState must be one of/],
    [
      "epochIndex over the cap",
      (s) => (s.epochState.clients[0].epochIndex = MAX_CLIENTS),
      /clients\[0\]\.epochIndex/,
    ],
    [
      "key of 31 bytes",
      (s) => (s.epochState.clients[0].id.signer = new Uint8Array(31)),
      /signer must be 32 bytes/,
    ],
  ];
  for (const [name, mutate, message] of cases) {
    const s = sampleState();
    mutate(s);
    assert.throws(() => encodeCoordinatorState(s), message, name);
  }
});

Deno.test("JSON form: hex keys, decimal bigints, strict reading", () => {
  const s = sampleState();
  // deno-lint-ignore no-explicit-any
  const json = coordinatorStateToJson(s) as Record<string, any>;
  const c0 = json.epochState.clients[0];
  assert.equal(c0.id.signer, Array.from(key(0), (b) => b.toString(16).padStart(2, "0")).join(""));
  assert.equal(json.epochState.rounds[0].randomSeed, (0xfedcba9876543210n + 4n).toString());
  assert.equal(json.epochState.rounds[0].witnesses[0].participantBloom.keys[0], String(1n << 40n));
  assert.deepEqual(coordinatorStateFromJson(json), s);

  const extra = structuredClone(json);
  extra.epochState.surprise = 1;
  assert.throws(() => coordinatorStateFromJson(extra), /epochState\.surprise/);
  const badHex = structuredClone(json);
  badHex.epochState.clients[1].id.signer = "zz";
  assert.throws(() => coordinatorStateFromJson(badHex), /epochState\.clients\[1\]\.id\.signer/);
  const badSeed = structuredClone(json);
  badSeed.epochState.rounds[2].randomSeed = "-1";
  assert.throws(
    () => coordinatorStateFromJson(badSeed),
    /rounds\[2\]\.randomSeed must be a decimal u64/,
  );
  const missing = structuredClone(json);
  delete missing.progress.step;
  assert.throws(() => coordinatorStateFromJson(missing), /progress\.step/);
  assert.throws(() => coordinatorStateFromJson([]), /must be an object/);
});

Deno.test("versions 1 and 2 carry no digests: they decode with none and refuse to write any", () => {
  const s = sampleState();
  assert.throws(
    () => encodeCoordinatorState(s, { version: 2 }),
    /epochState.digestVotes cannot be written in state encoding version 2/,
  );
  s.epochState.digestVotes = [];
  assert.throws(
    () => encodeCoordinatorState(s, { version: 2 }),
    /paramsDigests cannot be written in state encoding version 2/,
  );
  s.paramsDigests = [];
  const decoded = decodeCoordinatorState(encodeCoordinatorState(s, { version: 2 }));
  assert.deepEqual(decoded.paramsDigests, []);
  assert.deepEqual(decoded.epochState.digestVotes, []);
});

Deno.test("digest defects name their field: zero digest, repeated voter, steps out of order", () => {
  const tailDefect = (mutate: (s: CoordinatorState) => void, patch: (b: Uint8Array) => void) => {
    const s = sampleState();
    mutate(s);
    const b = encodeCoordinatorState(s, { version: 4 });
    patch(b);
    return decodeError(b);
  };
  // In version 4 records are the last 1 + 2 x 36 bytes; the vote is the 35 bytes before them.
  const zero = tailDefect(() => {}, (b) => b.fill(0, b.length - 32));
  assert.equal(zero.field, "paramsDigests[1].digest");
  assert.match(zero.message, /all-zero digest/);
  const order = tailDefect(() => {}, (b) => (b[b.length - 36] = 15));
  assert.equal(order.field, "paramsDigests[1].step");
  assert.match(order.message, /must be above the previous record's step 15/);
  const repeated = tailDefect(
    (s) => s.epochState.digestVotes.push({ index: 2, digest: new Uint8Array(32).fill(1) }),
    (b) => (b[b.length - 73 - 34] = 1),
  );
  assert.equal(repeated.field, "epochState.digestVotes[1].index");
  assert.match(repeated.message, /repeats 1/);
  const outside = tailDefect(() => {}, (b) => (b[b.length - 73 - 34] = 0xff));
  assert.equal(outside.field, "epochState.digestVotes[0].index");
  assert.match(outside.message, /must be below config.maxClients/);
});
