/**
 * The mining pool program in an in-process SVM (litesvm, with its default programs: the real
 * SPL Token and system programs), for the pool's tests and its compute-unit measurements.
 *
 * Mints and users' token accounts are written directly (`setAccount`, the byte layouts SPL
 * Token itself writes), so a test needs no mint authority's transactions; everything the pool
 * does to tokens goes through the real SPL Token program by CPI.
 *
 * @module
 */
import {
  type Address,
  generateKeyPairSigner,
  type Instruction,
  type KeyPairSigner,
  lamports,
} from "@solana/kit";
import { LiteSVM } from "litesvm";
import { poolErrorName } from "../pool/mod.ts";
import { buildPoolOnce } from "../toolchain/mod.ts";
import {
  accountBytes,
  patchAccount,
  sendInstructions,
  type SendResult,
  snapshotAccounts,
  tokenBalance,
  writeMint,
  writeTokenAccount,
} from "./litesvm_accounts.ts";

/** A LiteSVM with the mining pool deployed and a funded fee payer. */
export class PoolSvm {
  readonly svm: LiteSVM;
  readonly programId: Address;
  readonly payer: KeyPairSigner;

  private constructor(svm: LiteSVM, programId: Address, payer: KeyPairSigner) {
    this.svm = svm;
    this.programId = programId;
    this.payer = payer;
  }

  /** Builds the pool (once per process) and deploys it at a fresh address. */
  static async create(): Promise<PoolSvm> {
    const program = await buildPoolOnce();
    const svm = new LiteSVM().withDefaultPrograms();
    const programId = (await generateKeyPairSigner()).address;
    svm.addProgram(programId, program.bytes);
    const payer = await generateKeyPairSigner();
    svm.airdrop(payer.address, lamports(1_000_000_000_000n));
    return new PoolSvm(svm, programId, payer);
  }

  /** A new keypair with 10 SOL. */
  async newSigner(): Promise<KeyPairSigner> {
    const s = await generateKeyPairSigner();
    this.svm.airdrop(s.address, lamports(10_000_000_000n));
    return s;
  }

  /**
   * Sends `instructions`, paid by the payer; never throws on a refused transaction. A pool
   * error comes back by its name, another program's as `Custom(n)`.
   */
  send(instructions: Instruction[]): Promise<SendResult> {
    return sendInstructions(this.svm, this.payer, instructions, poolErrorName);
  }

  /** Writes an initialized SPL Token mint (supply as given) at a fresh address. */
  createMint(opts: { decimals?: number; supply?: bigint } = {}): Promise<Address> {
    return writeMint(this.svm, this.payer.address, opts);
  }

  /** Writes an initialized token account of `mint` owned by `owner` holding `amount`. */
  createTokenAccount(mint: Address, owner: Address, amount: bigint): Promise<Address> {
    return writeTokenAccount(this.svm, mint, owner, amount);
  }

  /** Overwrites an existing account's data (crafting states transactions cannot reach). */
  patch(at: Address, edit: (data: Uint8Array) => void): void {
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
