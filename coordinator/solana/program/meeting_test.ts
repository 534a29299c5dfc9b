/**
 * The update instruction's meeting part in litesvm: the main authority sets, replaces and clears
 * a run's meeting addresses in any run state; anyone else, too many, too long or malformed
 * addresses (non-ASCII and invalid UTF-8 bytes included) are refused with their code and leave
 * the account byte for byte as it was. Sent through DualRun where the instruction decodes, so the
 * reference model agrees on every one.
 */

import assert from "node:assert/strict";
import { AccountRole, type KeyPairSigner } from "@solana/kit";
import { testConfig, testModel } from "../../../tests/support/coordinator_fixtures.ts";
import { CoordinatorSvm, type SendResult } from "../testing/svm.ts";
import { DualRun } from "../testing/dual_run.ts";
import {
  encodeCoordinatorInstruction,
  MAX_MEETING_ADDRESS_BYTES,
  type MeetingAddress,
  OFFSETS,
  programErrorNumber,
} from "../abi/mod.ts";

const svm = await CoordinatorSvm.create();
const PEER = "12D3KooWHFrmLWTTDD4NodngtRMEVYgxrsDMp4F9iSwYntZ9WjHa";
const RELAY: MeetingAddress = { kind: "Relay", address: `/ip4/203.0.113.7/tcp/4001/p2p/${PEER}` };
const PEER_ADDRESS: MeetingAddress = {
  kind: "Bootstrap",
  address: `/dns4/peer.example.org/tcp/4001/p2p/${PEER}`,
};

/** Sends raw update data signed by `signer`; the account must come back byte-identical. */
async function refusedRaw(run: DualRun, data: Uint8Array, signer: KeyPairSigner) {
  const before = svm.accountBytes(run.coordinator)!;
  const result: SendResult = await svm.sendRaw([{
    programAddress: svm.programId,
    accounts: [
      { address: run.coordinator, role: AccountRole.WRITABLE },
      { address: signer.address, role: AccountRole.READONLY_SIGNER, signer } as never,
    ],
    data,
  }]);
  assert.equal(result.ok, false, `accepted ${[...data]}`);
  assert.deepEqual(svm.accountBytes(run.coordinator), before);
  run.check();
  return result;
}

/** Sends `list` through DualRun expecting InvalidMeetingAddress, and no byte changed. */
async function refused(run: DualRun, meetingAddresses: MeetingAddress[]) {
  const before = svm.accountBytes(run.coordinator)!;
  await run.expectError(
    { kind: "Update", meetingAddresses },
    run.mainAuthority,
    "InvalidMeetingAddress",
  );
  assert.deepEqual(svm.accountBytes(run.coordinator), before);
}

Deno.test("meeting addresses: the main authority sets, replaces and clears them in any state", async () => {
  const run = await DualRun.create({ svm, runId: "meet-set" });
  await run.expectOk({ kind: "Update", meetingAddresses: [RELAY] }, run.mainAuthority);
  assert.deepEqual(svm.coordinatorAccount(run.coordinator).meetingAddresses, [RELAY]);
  // With the config and model, as an operator creating a run sends them.
  await run.expectOk({
    kind: "Update",
    config: testConfig(),
    model: testModel(),
    meetingAddresses: [PEER_ADDRESS, RELAY],
  }, run.mainAuthority);
  // Running: config is refused (NotHalted) but meeting addresses change, as metadata does.
  run.setTime(5);
  await run.expectOk({ kind: "SetPaused", paused: false }, run.mainAuthority);
  const longest: MeetingAddress = {
    kind: "Relay",
    address: `/dns4/${"r".repeat(MAX_MEETING_ADDRESS_BYTES - 6 - 13 - PEER.length)}/tcp/443/p2p/` +
      PEER,
  };
  assert.equal(longest.address.length, MAX_MEETING_ADDRESS_BYTES);
  const four = [longest, RELAY, PEER_ADDRESS, longest];
  await run.expectOk({ kind: "Update", meetingAddresses: four }, run.mainAuthority);
  assert.deepEqual(svm.coordinatorAccount(run.coordinator).meetingAddresses, four);
  await run.expectError(
    { kind: "Update", config: testConfig(), meetingAddresses: [RELAY] },
    run.mainAuthority,
    "NotHalted",
  );
  // Fewer entries leave no trace of the longer ones they replace.
  await run.expectOk({ kind: "Update", meetingAddresses: [RELAY] }, run.mainAuthority);
  const bytes = svm.accountBytes(run.coordinator)!;
  const entries = bytes.subarray(OFFSETS.meetingAddresses);
  assert.equal(bytes[OFFSETS.meetingAddressesLen], 1);
  assert.ok(entries.subarray(2 + RELAY.address.length).every((b) => b === 0));
  await run.expectOk({ kind: "Update", meetingAddresses: [] }, run.mainAuthority);
  const cleared = svm.accountBytes(run.coordinator)!.subarray(OFFSETS.meetingAddressesLen);
  assert.ok(cleared.every((b) => b === 0), "an empty list zeroes every entry");
  // Paused too.
  await run.expectOk({ kind: "SetPaused", paused: true }, run.mainAuthority);
  await run.expectOk({ kind: "Update", meetingAddresses: [PEER_ADDRESS] }, run.mainAuthority);
  assert.deepEqual(svm.coordinatorAccount(run.coordinator).meetingAddresses, [PEER_ADDRESS]);
});

Deno.test("meeting addresses: only the main authority; too many, too long or malformed are refused", async () => {
  const run = await DualRun.create({ svm, runId: "meet-refuse" });
  await run.expectOk({ kind: "Update", meetingAddresses: [RELAY] }, run.mainAuthority);
  const before = svm.accountBytes(run.coordinator)!;
  await run.expectError(
    { kind: "Update", meetingAddresses: [] },
    run.joinAuthority,
    "NotMainAuthority",
  );
  const stranger = await svm.newSigner();
  await run.expectError(
    { kind: "Update", meetingAddresses: [PEER_ADDRESS] },
    stranger,
    "NotMainAuthority",
  );
  assert.deepEqual(svm.accountBytes(run.coordinator), before);

  await refused(run, [RELAY, RELAY, RELAY, RELAY, PEER_ADDRESS]);
  await refused(run, [{ kind: "Relay", address: `/dns4/${"r".repeat(140)}/tcp/443/p2p/${PEER}` }]);
  for (
    const address of [
      "",
      "/ip4/203.0.113.7/tcp/4001",
      `ip4/203.0.113.7/tcp/4001/p2p/${PEER}`,
      `/ip4//tcp/4001/p2p/${PEER}`,
      `/ip4/203.0.113.7/tcp/4001/p2p/${PEER}/`,
      `/ip4/203.0.113.7/tcp/4001/p2p/${PEER}/p2p-circuit`,
      `/ip4/203.0.113.7/tcp/4001/p2p/12D3-KooW`,
      `/ip4/203.0.113.7/tcp/4001/xp2p/${PEER}`,
      `/ip4/203.0.113.7/tcp/4001 /p2p/${PEER}`,
      `/dns4/réseau.example/tcp/4001/p2p/${PEER}`,
      `/ip4/203.0.113.7/tcp/4001/p2p/${PEER}\u0000`,
    ]
  ) {
    await refused(run, [RELAY, { kind: "Bootstrap", address }]);
  }
  // A bad meeting part takes the rest of the update down with it.
  await refused(run, [{ kind: "Relay", address: "/ip4/1.2.3.4" }]);
  const withConfig = {
    kind: "Update" as const,
    config: testConfig(),
    meetingAddresses: [{ kind: "Relay" as const, address: "/ip4/1.2.3.4" }],
  };
  await run.expectError(withConfig, run.mainAuthority, "InvalidMeetingAddress");
  assert.deepEqual(svm.accountBytes(run.coordinator), before);

  // Bytes the TypeScript decoder refuses: invalid UTF-8 is InvalidMeetingAddress (not ASCII),
  // an unknown kind or a cut entry InvalidInstruction.
  const data = encodeCoordinatorInstruction({ kind: "Update", meetingAddresses: [RELAY] });
  const notUtf8 = data.slice();
  notUtf8[10] = 0xff;
  const code = (r: SendResult) => r.code;
  assert.equal(
    code(await refusedRaw(run, notUtf8, run.mainAuthority)),
    programErrorNumber("InvalidMeetingAddress"),
  );
  const kind = data.slice();
  kind[3] = 2;
  assert.equal(
    code(await refusedRaw(run, kind, run.mainAuthority)),
    programErrorNumber("InvalidInstruction"),
  );
  assert.equal(
    code(await refusedRaw(run, data.subarray(0, data.length - 1), run.mainAuthority)),
    programErrorNumber("InvalidInstruction"),
  );
  const parts = data.slice();
  parts[1] = 32;
  assert.equal(
    code(await refusedRaw(run, parts, run.mainAuthority)),
    programErrorNumber("InvalidInstruction"),
  );
  assert.deepEqual(svm.accountBytes(run.coordinator), before);
  assert.deepEqual(svm.coordinatorAccount(run.coordinator).meetingAddresses, [RELAY]);
});
