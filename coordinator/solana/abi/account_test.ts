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
  assert.equal(a.version, 2);
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
