/**
 * Test support: a run driven on the real program (litesvm) and on the TypeScript
 * reference model at once. Every instruction goes to both; the two must accept or reject
 * it alike (same error code) and the account must decode to exactly the model's state.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Address, KeyPairSigner } from "@solana/kit";
import { addressBytes, CoordinatorSvm, type SendOptions, type SendResult } from "./svm.ts";
import {
  type CoordinatorAccount,
  type CoordinatorInstruction,
  CoordinatorProgramError,
  programErrorNumber,
} from "../abi/mod.ts";
import {
  applyInstruction,
  type DepositAccounts,
  initialAccount,
  type ProgramClock,
} from "../reference/mod.ts";

/** Options of {@linkcode DualRun.send}: the program's, and what the model sees of them. */
export type DualSendOptions = Omit<SendOptions, "signer"> & {
  /** The deposit instructions' token accounts, as the model is told of them. */
  deposit?: DepositAccounts;
};

/** Options of {@linkcode DualRun.create}. */
export interface DualRunOptions {
  runId?: string;
  permissionless?: boolean;
  /** Reuse an SVM (and its deployed program) across runs. */
  svm?: CoordinatorSvm;
}

/** One run on the program and on the model, compared after every instruction. */
export class DualRun {
  readonly svm: CoordinatorSvm;
  readonly coordinator: Address;
  readonly mainAuthority: KeyPairSigner;
  readonly joinAuthority: KeyPairSigner;
  model: CoordinatorAccount | null;
  clock: ProgramClock = { unixTimestamp: 0, slot: 1n };

  private constructor(
    svm: CoordinatorSvm,
    coordinator: Address,
    main: KeyPairSigner,
    join: KeyPairSigner,
    model: CoordinatorAccount,
  ) {
    this.svm = svm;
    this.coordinator = coordinator;
    this.mainAuthority = main;
    this.joinAuthority = join;
    this.model = model;
  }

  /** Creates and initializes a run on a (new or given) SVM and the matching model. */
  static async create(opts: DualRunOptions = {}): Promise<DualRun> {
    const svm = opts.svm ?? await CoordinatorSvm.create();
    const main = await svm.newSigner();
    const join = await svm.newSigner();
    const runId = opts.runId ?? "test-run";
    const permissionless = opts.permissionless ?? true;
    const { coordinator, result } = await svm.createRun({
      runId,
      mainAuthority: main,
      joinAuthority: join.address,
      permissionless,
    });
    assert.ok(result.ok, `init failed: ${result.error}\n${result.logs.join("\n")}`);
    const model = initialAccount({
      runId,
      mainAuthority: addressBytes(main.address),
      joinAuthority: addressBytes(join.address),
      permissionless,
    });
    const run = new DualRun(svm, coordinator, main, join, model);
    run.setTime(0);
    run.check();
    return run;
  }

  /** Sets both clocks. */
  setTime(unixTimestamp: number, slot?: bigint): void {
    this.clock = { unixTimestamp, slot: slot ?? this.clock.slot + 1n };
    this.svm.setClock(unixTimestamp, this.clock.slot);
  }

  /** Asserts that the account decodes to the model (or is gone when the model is). */
  check(): void {
    const bytes = this.svm.accountBytes(this.coordinator);
    if (this.model === null) {
      assert.equal(bytes, null, "the account should be closed");
      return;
    }
    const actual = this.svm.coordinatorAccount(this.coordinator);
    assert.deepStrictEqual(actual, this.model);
  }

  /**
   * Sends `ix` to both; asserts they agree. Returns the program's result and the model's
   * error (null when it accepted).
   */
  async send(
    ix: CoordinatorInstruction,
    signer: KeyPairSigner | null,
    opts: DualSendOptions = {},
  ): Promise<SendResult> {
    const { deposit, ...sendOpts } = opts;
    const result = await this.svm.send(this.coordinator, ix, { ...sendOpts, signer });
    let expected: CoordinatorProgramError | null = null;
    if (this.model !== null) {
      try {
        this.model = applyInstruction(this.model, {
          ix,
          signer: signer === null ? null : addressBytes(signer.address),
          clock: this.clock,
          deposit,
        });
      } catch (err) {
        if (!(err instanceof CoordinatorProgramError)) throw err;
        expected = err;
      }
    }
    const context = `${ix.kind}: program ${result.ok ? "accepted" : result.error}, model ${
      expected === null ? "accepted" : expected.errorName
    }\n${result.logs.join("\n")}`;
    if (expected === null) assert.ok(result.ok, context);
    else assert.equal(result.code, expected.code, context);
    this.check();
    return result;
  }

  /** Sends `ix` and asserts both rejected it with `name`. */
  async expectError(
    ix: CoordinatorInstruction,
    signer: KeyPairSigner | null,
    name: Parameters<typeof programErrorNumber>[0],
    opts: DualSendOptions = {},
  ): Promise<SendResult> {
    const result = await this.send(ix, signer, opts);
    assert.equal(result.code, programErrorNumber(name), `${ix.kind} should fail with ${name}`);
    return result;
  }

  /** Sends `ix` and asserts both accepted it. */
  async expectOk(
    ix: CoordinatorInstruction,
    signer: KeyPairSigner | null,
    opts: DualSendOptions = {},
  ): Promise<SendResult> {
    const result = await this.send(ix, signer, opts);
    assert.ok(result.ok, `${ix.kind} should succeed`);
    return result;
  }
}

/** The 32-byte key of a signer. */
export function keyOf(s: KeyPairSigner): Uint8Array {
  return addressBytes(s.address);
}

/** Index of `s` in the model's current client list (-1 when absent). */
export function clientIndex(run: DualRun, s: KeyPairSigner): number {
  const key = keyOf(s);
  return run.model!.state.epochState.clients.findIndex((c) =>
    c.id.signer.every((b, i) => b === key[i])
  );
}
