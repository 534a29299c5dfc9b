/**
 * The two checks every program test makes of a transaction: it went through, or it was refused
 * with the expected error and left every watched account byte-identical.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Address, Instruction } from "@solana/kit";
import type { SendResult } from "./litesvm_accounts.ts";

/** What these checks need of a program harness (PoolSvm, TreasurerSvm). */
export interface SendingHarness {
  send(instructions: Instruction[]): Promise<SendResult>;
  snapshot(at: readonly Address[]): string[];
}

/** Sends `ix` alone and asserts it went through; a failure names `what`, the error and the logs. */
export async function sendOk(
  harness: SendingHarness,
  ix: Instruction | Promise<Instruction>,
  what: string,
): Promise<SendResult> {
  const r = await harness.send([await ix]);
  assert.ok(r.ok, `${what}: ${r.error}\n${r.logs.join("\n")}`);
  return r;
}

/**
 * Sends `ix` alone, asserts it was refused with `error`, and that no account in `watched` changed
 * a byte (leave the fee payer out: it pays the fee whatever happens).
 */
export async function sendRefused(
  harness: SendingHarness,
  ix: Instruction | Promise<Instruction>,
  error: string,
  watched: readonly Address[],
): Promise<void> {
  const before = harness.snapshot(watched);
  const r = await harness.send([await ix]);
  assert.equal(r.error, error, r.logs.join("\n"));
  assert.deepEqual(harness.snapshot(watched), before);
}
