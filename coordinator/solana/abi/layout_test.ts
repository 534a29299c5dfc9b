import assert from "node:assert/strict";
import { LAYOUT_STRUCTS, type LayoutStruct, structLayout } from "./layout.ts";

// Version 7's offsets and sizes, as deployed programs and stored accounts hold them. A change
// here is a new layout version, not an edit.
Deno.test("layout version 7: every header offset and structure size stays where it was", () => {
  assert.deepEqual(structLayout("account_t").offsets, {
    magic: 0,
    version: 8,
    flags: 12,
    nonce: 16,
    mainAuthority: 24,
    joinAuthority: 56,
    authorizer: 88,
    runId: 120,
    runIdLen: 152,
    runState: 153,
    pendingPause: 154,
    step: 156,
    epochStartDataIndex: 160,
    epoch: 168,
    registryLen: 170,
    delegatesLen: 172,
    runStateStartUnixTimestamp: 176,
    nextActive: 184,
    config: 192,
    model: 264,
    metadata: 816,
    epochState: 1184,
    registry: 191_416,
    delegates: 209_848,
    digestRecordsLen: 218_040,
    digestVotesLen: 218_041,
    ejectionsLen: 218_042,
    digestRecords: 218_044,
    digestVotes: 218_332,
    ejections: 219_420,
    // Version 4 appended these; every offset above is version 3's.
    meetingAddressesLen: 220_832,
    meetingAddresses: 220_840,
    // Version 5 appended these; every offset above is version 4's.
    currentEpochRates: 221_616,
    futureEpochRates: 221_632,
    earned: 221_648,
    // Version 6 appended these; every offset above is version 5's.
    joinDeposit: 223_696,
    deposits: 223_792,
    // Version 7 appended this; every offset above is version 6's.
    slashed: 225_840,
  });
  const sizes = Object.fromEntries(LAYOUT_STRUCTS.map((s) => [s.c, structLayout(s.c).size]));
  assert.deepEqual(sizes, {
    config_t: 72,
    checkpoint_t: 132,
    model_t: 552,
    metadata_t: 368,
    bloom_t: 568,
    witness_t: 1184,
    round_t: 37_952,
    client_t: 72,
    seat_t: 12,
    task_t: 96,
    ejection_t: 44,
    epoch_state_t: 190_232,
    registration_t: 72,
    digest_record_t: 36,
    digest_vote_t: 34,
    meeting_address_t: 194,
    epoch_rates_t: 16,
    join_deposit_t: 96,
    account_t: 227_888,
  });
  assert.equal(structLayout("model_t").offsets.dataLocation, 148);
  assert.equal(structLayout("config_t").offsets.maxClients, 64);
  assert.equal(structLayout("config_t").offsets.verificationBarEpochs, 66);
  assert.equal(structLayout("round_t").offsets.rejected, 32);
  assert.equal(structLayout("epoch_state_t").offsets.verificationTasksLen, 23);
  assert.equal(structLayout("epoch_state_t").offsets.clients, 151_832);
  assert.equal(structLayout("epoch_state_t").offsets.verificationTasks, 188_696);
});

Deno.test("a table that leaves the compiler room to pad is refused, naming the field", () => {
  const gap: LayoutStruct[] = [{
    c: "gap_t",
    title: "gap",
    fields: [{ c: "flag", type: "u8" }, { c: "count", type: "u32" }],
  }];
  assert.throws(() => structLayout("gap_t", gap), /gap_t\.count would sit at 1, off its 4-byte/);
  const tail: LayoutStruct[] = [{
    c: "tail_t",
    title: "tail",
    fields: [{ c: "count", type: "u64" }, { c: "flag", type: "u8" }],
  }];
  assert.throws(() => structLayout("tail_t", tail), /tail_t is 9 bytes, not a multiple of .* 8/);
  const padded: LayoutStruct[] = [{
    c: "ok_t",
    title: "ok",
    fields: [{ c: "flag", type: "u8" }, { c: "_pad", type: "u8", dims: [3] }, {
      c: "count",
      type: "u32",
    }],
  }];
  assert.deepEqual(structLayout("ok_t", padded).offsets, { flag: 0, count: 4 });
});
