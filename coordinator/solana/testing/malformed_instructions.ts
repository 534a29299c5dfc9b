/**
 * The malformed-instruction fuzz the pool and treasurer fuzz tests share: valid instructions of
 * every kind with their data mutated (only bytes the program's TypeScript decoder rejects), or
 * their account lists cut short, reordered, given a wrong account, or stripped of a signature or
 * a write permission. Each must be refused with one of the program's named errors and leave
 * every account byte-identical.
 *
 * @module
 */
import assert from "node:assert/strict";
import { AccountRole, type Address, type Instruction } from "@solana/kit";
import { Prng } from "../../../tests/support/coordinator_sim.ts";
import type { SendResult } from "./litesvm_accounts.ts";

type Meta = NonNullable<Instruction["accounts"]>[number];

/** How an instruction's data may be broken. */
export type DataMutation = "flip" | "retag" | "truncate" | "extend";

/** What {@linkcode fuzzMalformedInstructions} sends, to whom, and how it names refusals. */
export interface MalformedFuzz {
  /** The program's harness: sends one transaction, snapshots account bytes. */
  svm: {
    send(instructions: Instruction[]): Promise<SendResult>;
    snapshot(at: readonly Address[]): string[];
  };
  /** The program, as the failure messages name it ("pool", "treasurer"). */
  program: string;
  /** Valid instructions, one of which each round breaks. */
  valid: readonly Instruction[];
  /** Accounts a wrong account is drawn from; the snapshot covers them all. */
  wrong: readonly Address[];
  rounds: number;
  seed: number;
  /** The data mutations drawn from, in this order. */
  dataMutations: readonly DataMutation[];
  /** The program's instruction decoder: throws on bytes the program must refuse. */
  decode: (data: Uint8Array) => unknown;
  /** The program's error name of a custom code, undefined when it has none. */
  errorName: (code: number) => string | undefined;
}

/**
 * Sends `rounds` malformed copies of the valid instructions and checks each is refused by a
 * named error with every account unchanged, and that the decoder, the account checks and the
 * signature checks were each reached. Returns how often each error was seen.
 */
export async function fuzzMalformedInstructions(f: MalformedFuzz): Promise<Map<string, number>> {
  const rng = new Prng(f.seed);
  const seen = new Map<string, number>();
  for (let round = 0; round < f.rounds; round++) {
    const base = f.valid[rng.int(0, f.valid.length - 1)];
    const ix = mutate(rng, base, f);
    if (ix === null) continue;
    const before = f.svm.snapshot(f.wrong);
    const r = await f.svm.send([ix]);
    assert.ok(!r.ok, `round ${round}: a malformed instruction succeeded\n${r.logs.join("\n")}`);
    const name = r.code === null ? undefined : f.errorName(r.code);
    assert.ok(
      name !== undefined,
      `round ${round}: not a named ${f.program} error: ${r.error}\n${r.logs.join("\n")}`,
    );
    seen.set(name, (seen.get(name) ?? 0) + 1);
    assert.deepEqual(f.svm.snapshot(f.wrong), before, `round ${round}: ${name} changed an account`);
  }
  // The fuzz reached the decoder, the account checks and the signature checks.
  for (const name of ["InvalidInstruction", "NotEnoughAccounts", "MissingSignature"]) {
    assert.ok(seen.has(name), `${name} never seen: ${JSON.stringify([...seen])}`);
  }
  return seen;
}

/** A malformed copy of `ix`, or null when the mutation happened to leave it well-formed. */
function mutate(rng: Prng, ix: Instruction, f: MalformedFuzz): Instruction | null {
  // The program itself may be named read-only only (a transaction cannot write an invoked one).
  const invoked = ix.programAddress;
  const data = Uint8Array.from(ix.data!);
  const metas = [...ix.accounts!];
  const writes = (m: Meta) =>
    m.role === AccountRole.WRITABLE || m.role === AccountRole.WRITABLE_SIGNER;
  switch (rng.int(0, 5)) {
    case 0: { // data: one of `dataMutations`, kept only when the decoder refuses
      let out = data.slice();
      const how = f.dataMutations[rng.int(0, f.dataMutations.length - 1)];
      if (how === "flip") out[rng.int(0, out.length - 1)] ^= 1 << rng.int(0, 7);
      else if (how === "retag") out[0] = rng.int(0, 255);
      else if (how === "truncate") out = out.subarray(0, rng.int(0, out.length - 1));
      else {
        out = Uint8Array.from([
          ...out,
          ...Array.from({ length: rng.int(1, 4) }, () => rng.int(0, 255)),
        ]);
      }
      try {
        f.decode(out);
        return null;
      } catch {
        return { ...ix, data: out };
      }
    }
    case 1: // accounts cut short
      return { ...ix, accounts: metas.slice(0, rng.int(0, metas.length - 1)) };
    case 2: { // two accounts swapped
      const i = rng.int(0, metas.length - 1);
      const j = rng.int(0, metas.length - 1);
      if (metas[i].address === metas[j].address) return null;
      if (
        (writes(metas[i]) || writes(metas[j])) &&
        [metas[i].address, metas[j].address].includes(invoked)
      ) {
        return null;
      }
      [metas[i], metas[j]] = [metas[j], metas[i]];
      return { ...ix, accounts: metas };
    }
    case 3: { // one account replaced by another (not a signer: we hold no other keys to sign)
      const i = rng.int(0, metas.length - 1);
      const to = f.wrong[rng.int(0, f.wrong.length - 1)];
      const writable = writes(metas[i]);
      if (to === metas[i].address || (writable && to === invoked)) return null;
      metas[i] = { address: to, role: writable ? AccountRole.WRITABLE : AccountRole.READONLY };
      return { ...ix, accounts: metas };
    }
    case 4: { // a signature taken away
      const i = metas.findIndex((m) => m.role === AccountRole.READONLY_SIGNER);
      if (i < 0) return null;
      metas[i] = { address: metas[i].address, role: AccountRole.READONLY } as Meta;
      return { ...ix, accounts: metas };
    }
    default: { // a write permission taken away
      const writable = metas.flatMap((m, i) => (m.role === AccountRole.WRITABLE ? [i] : []));
      if (writable.length === 0) return null;
      const i = writable[rng.int(0, writable.length - 1)];
      metas[i] = { ...metas[i], role: AccountRole.READONLY };
      return { ...ix, accounts: metas };
    }
  }
}
