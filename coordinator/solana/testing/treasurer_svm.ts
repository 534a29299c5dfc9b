/**
 * The treasurer program beside the coordinator program in one in-process SVM (litesvm, with its
 * default programs: the real SPL Token and system programs), for the treasurer's tests and its
 * compute-unit measurements. Runs are driven on the coordinator program (with
 * {@linkcode DualRun} over {@linkcode TreasurerSvm.coordinator}, so the reference model checks
 * every coordinator instruction); claims read the points those runs paid.
 *
 * Mints and users' token accounts are written directly (`setAccount`, the byte layouts SPL Token
 * itself writes), so a test needs no mint authority's transactions; everything the treasurer does
 * to tokens goes through the real SPL Token program by CPI.
 *
 * @module
 */
import {
  type Address,
  generateKeyPairSigner,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import type { LiteSVM } from "litesvm";
import { treasurerErrorName } from "../treasurer/mod.ts";
import { buildTreasurerOnce } from "../toolchain/mod.ts";
import { CoordinatorSvm } from "./svm.ts";
import {
  accountBytes,
  patchAccount,
  type SendResult,
  snapshotAccounts,
  tokenBalance,
  writeMint,
  writeTokenAccount,
} from "./litesvm_accounts.ts";

/** A LiteSVM with the coordinator and the treasurer deployed and a funded fee payer. */
export class TreasurerSvm {
  /** The coordinator program's harness (its svm is this one's). */
  readonly coordinator: CoordinatorSvm;
  readonly programId: Address;

  private constructor(coordinator: CoordinatorSvm, programId: Address) {
    this.coordinator = coordinator;
    this.programId = programId;
  }

  /** Builds both programs (once per process) and deploys them at fresh addresses. */
  static async create(): Promise<TreasurerSvm> {
    const coordinator = await CoordinatorSvm.create();
    coordinator.svm.withDefaultPrograms();
    const programId = (await generateKeyPairSigner()).address;
    coordinator.svm.addProgram(programId, (await buildTreasurerOnce()).bytes);
    return new TreasurerSvm(coordinator, programId);
  }

  /** The LiteSVM both programs live in. */
  get svm(): LiteSVM {
    return this.coordinator.svm;
  }

  /** The coordinator program's id. */
  get coordinatorProgramId(): Address {
    return this.coordinator.programId;
  }

  /** A new keypair with 10 SOL. */
  newSigner(): Promise<KeyPairSigner> {
    return this.coordinator.newSigner();
  }

  /**
   * Sends `instructions` paid by the payer; never throws on a refused transaction. A treasurer
   * error comes back by its name, another program's as the coordinator harness names it.
   */
  async send(instructions: Instruction[]): Promise<SendResult> {
    const result = await this.coordinator.sendRaw(instructions);
    const name = result.code === null ? undefined : treasurerErrorName(result.code);
    return name === undefined ? result : { ...result, error: name };
  }

  /** Writes an initialized SPL Token mint (supply as given) at a fresh address. */
  createMint(opts: { decimals?: number; supply?: bigint } = {}): Promise<Address> {
    return writeMint(this.svm, this.coordinator.payer.address, opts);
  }

  /** Writes an initialized token account of `mint` owned by `owner` holding `amount`. */
  createTokenAccount(mint: Address, owner: Address, amount: bigint): Promise<Address> {
    return writeTokenAccount(this.svm, mint, owner, amount);
  }

  /** Overwrites an existing account's data (crafting states transactions cannot reach). */
  patch(at: Address, edit: (data: Uint8Array, view: DataView) => void): void {
    patchAccount(this.svm, at, edit);
  }

  /** The amount a token account holds. */
  tokenBalance(at: Address): bigint {
    return tokenBalance(this.svm, at);
  }

  /** The raw bytes of an account (null when it does not exist). */
  accountBytes(at: Address): Uint8Array | null {
    return accountBytes(this.svm, at);
  }

  /** Lamports, owner and data of every account in `at`, for byte-identity checks. */
  snapshot(at: readonly Address[]): string[] {
    return snapshotAccounts(this.svm, at);
  }
}
