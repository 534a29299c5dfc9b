import assert from "node:assert/strict";
import {
  decodeLenderAccount,
  decodePoolAccount,
  decodePoolInstruction,
  encodePoolInstruction,
  LENDER_BYTES,
  lenderOwed,
  POOL_BYTES,
  POOL_INSTRUCTION_KINDS,
  PoolAccountDecodeError,
  type PoolInstruction,
  PoolInstructionDecodeError,
} from "./mod.ts";

const U64_MAX = (1n << 64n) - 1n;

const SAMPLES: PoolInstruction[] = [
  { kind: "PoolCreate", index: 0n, maxDeposit: U64_MAX },
  { kind: "PoolCreate", index: U64_MAX, maxDeposit: 1n },
  { kind: "PoolUpdate" },
  { kind: "PoolUpdate", maxDeposit: 5n },
  { kind: "PoolUpdate", frozen: true },
  { kind: "PoolUpdate", maxDeposit: 0n, frozen: false },
  { kind: "PoolExtract", amount: 9n },
  { kind: "PoolClaimable", totalClaimable: U64_MAX },
  { kind: "LenderCreate" },
  { kind: "LenderDeposit", amount: 1n },
  { kind: "LenderClaim" },
];

Deno.test("pool instructions: every kind round-trips through its bytes", () => {
  const kinds = new Set<string>();
  for (const ix of SAMPLES) {
    const bytes = encodePoolInstruction(ix);
    assert.equal(bytes[0], POOL_INSTRUCTION_KINDS.indexOf(ix.kind));
    assert.deepEqual(decodePoolInstruction(bytes), ix);
    kinds.add(ix.kind);
  }
  assert.equal(kinds.size, POOL_INSTRUCTION_KINDS.length);
});

Deno.test("pool instructions: the decoder refuses wrong tags, lengths and flags", () => {
  const bad = [
    new Uint8Array(0),
    Uint8Array.of(7),
    Uint8Array.of(255),
    Uint8Array.of(4, 0),
    new Uint8Array(16),
    Uint8Array.of(1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    Uint8Array.of(1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2),
  ];
  for (const bytes of bad) {
    assert.throws(() => decodePoolInstruction(bytes), PoolInstructionDecodeError, `${bytes}`);
  }
});

Deno.test("pool instructions: amounts outside u64 are refused when encoding", () => {
  assert.throws(() => encodePoolInstruction({ kind: "LenderDeposit", amount: -1n }), RangeError);
  assert.throws(
    () => encodePoolInstruction({ kind: "PoolClaimable", totalClaimable: U64_MAX + 1n }),
    RangeError,
  );
});

Deno.test("pool accounts: decoders check size, magic and version", () => {
  assert.throws(() => decodePoolAccount(new Uint8Array(POOL_BYTES)), PoolAccountDecodeError);
  assert.throws(() => decodeLenderAccount(new Uint8Array(LENDER_BYTES)), PoolAccountDecodeError);
  assert.throws(() => decodePoolAccount(new Uint8Array(10)), /232 bytes, found 10/);
  const lender = new Uint8Array(LENDER_BYTES);
  lender.set(new TextEncoder().encode("PSYLEND1"));
  lender[8] = 1;
  new DataView(lender.buffer).setBigUint64(80, 42n, true);
  assert.equal(decodeLenderAccount(lender).deposited, 42n);
});

Deno.test("pool accounts: shares floor, and sum to at most the claimable total", () => {
  assert.equal(lenderOwed(1n, 100n, 3n), 33n);
  assert.equal(lenderOwed(U64_MAX, U64_MAX, U64_MAX), U64_MAX);
  const deposits = [3n, 7n, 11n, 13n];
  const total = deposits.reduce((a, b) => a + b, 0n);
  for (const claimable of [0n, 1n, 33n, 1_000_001n, U64_MAX]) {
    const paid = deposits.reduce((a, d) => a + lenderOwed(d, claimable, total), 0n);
    assert.ok(paid <= claimable && claimable - paid < BigInt(deposits.length));
  }
  assert.throws(() => lenderOwed(1n, 1n, 0n), RangeError);
});
