import assert from "node:assert/strict";
import { address, generateKeyPairSigner } from "@solana/kit";
import {
  decodeParticipantAccount,
  decodeTreasurerInstruction,
  decodeTreasuryAccount,
  encodeTreasurerInstruction,
  PARTICIPANT_BYTES,
  PARTICIPANT_OFFSETS,
  tokenTransferInstruction,
  TREASURER_INSTRUCTION_KINDS,
  TreasurerAccountDecodeError,
  type TreasurerInstruction,
  TreasurerInstructionDecodeError,
  TREASURY_BYTES,
  TREASURY_OFFSETS,
} from "./mod.ts";

const SAMPLES: TreasurerInstruction[] = [
  {
    kind: "TreasuryCreate",
    coordinatorProgram: address("PsyCoord11111111111111111111111111111111111"),
  },
  { kind: "ParticipantCreate" },
  { kind: "ParticipantClaim" },
];

Deno.test("treasurer instructions: every kind round-trips through its bytes", () => {
  for (const ix of SAMPLES) {
    const bytes = encodeTreasurerInstruction(ix);
    assert.equal(bytes[0], TREASURER_INSTRUCTION_KINDS.indexOf(ix.kind));
    assert.deepEqual(decodeTreasurerInstruction(bytes), ix);
  }
  assert.equal(new Set(SAMPLES.map((s) => s.kind)).size, TREASURER_INSTRUCTION_KINDS.length);
});

Deno.test("treasurer instructions: the decoder refuses wrong tags and lengths", () => {
  const bad = [
    new Uint8Array(0),
    Uint8Array.of(3),
    Uint8Array.of(255),
    Uint8Array.of(1, 0),
    Uint8Array.of(2, 0),
    new Uint8Array(32),
    new Uint8Array(34),
  ];
  for (const bytes of bad) {
    assert.throws(
      () => decodeTreasurerInstruction(bytes),
      TreasurerInstructionDecodeError,
      `${bytes}`,
    );
  }
});

Deno.test("treasurer: the top-up is SPL Token Transfer of a u64", async () => {
  const owner = await generateKeyPairSigner();
  const ix = tokenTransferInstruction({
    source: owner.address,
    destination: owner.address,
    owner,
    amount: 258n,
  });
  assert.deepEqual([...ix.data!], [3, 2, 1, 0, 0, 0, 0, 0, 0]);
  assert.throws(
    () =>
      tokenTransferInstruction({
        source: owner.address,
        destination: owner.address,
        owner,
        amount: -1n,
      }),
    RangeError,
  );
  assert.throws(
    () =>
      tokenTransferInstruction({
        source: owner.address,
        destination: owner.address,
        owner,
        amount: 1n << 64n,
      }),
    RangeError,
  );
});

Deno.test("treasurer accounts: decoders check size, magic and version", () => {
  assert.throws(
    () => decodeTreasuryAccount(new Uint8Array(TREASURY_BYTES)),
    TreasurerAccountDecodeError,
  );
  assert.throws(
    () => decodeParticipantAccount(new Uint8Array(PARTICIPANT_BYTES)),
    TreasurerAccountDecodeError,
  );
  assert.throws(() => decodeTreasuryAccount(new Uint8Array(10)), /192 bytes, found 10/);
  const p = new Uint8Array(PARTICIPANT_BYTES);
  p.set(new TextEncoder().encode("PSYPART1"));
  p[8] = 1;
  new DataView(p.buffer).setBigUint64(PARTICIPANT_OFFSETS.claimed, 42n, true);
  assert.equal(decodeParticipantAccount(p).claimed, 42n);
  const t = new Uint8Array(TREASURY_BYTES);
  t.set(new TextEncoder().encode("PSYTREA1"));
  t[8] = 1;
  new DataView(t.buffer).setBigUint64(TREASURY_OFFSETS.participants, 3n, true);
  assert.equal(decodeTreasuryAccount(t).participants, 3n);
  t[8] = 2;
  assert.throws(() => decodeTreasuryAccount(t), /version 1, found "PSYTREA1" v2/);
});
