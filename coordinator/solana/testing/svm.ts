/**
 * The coordinator program in an in-process SVM (litesvm: Agave's loader, verifier,
 * interpreter and syscalls), for tests, benchmarks and local tooling. This is a test
 * harness around the real runtime, not a validator: production clients send the same
 * instructions to a real cluster.
 *
 * {@linkcode CoordinatorSvm} deploys the built program, creates runs (system
 * `createAccountWithSeed` + `init_coordinator` in one transaction), sends instructions
 * with their signers, sets the clock, and decodes the coordinator account.
 *
 * @module
 */

import {
  AccountRole,
  type Address,
  generateKeyPairSigner,
  getAddressDecoder,
  getAddressEncoder,
  type Instruction,
  type KeyPairSigner,
  lamports,
} from "@solana/kit";
import { Clock, LiteSVM } from "litesvm";
import {
  ACCOUNT_SIZE,
  type CoordinatorAccount,
  coordinatorAddress,
  type CoordinatorInstruction,
  coordinatorInstruction,
  createAccountWithSeedInstruction,
  createRunInstructions,
  decodeCoordinatorAccount,
  type ExtraAccount,
  programErrorName,
  setComputeUnitLimitInstruction,
} from "../abi/mod.ts";
import { buildProgramOnce } from "../toolchain/mod.ts";
import {
  accountBytes,
  sendInstructions,
  type SendResult,
  tokenBalance,
  writeMint,
  writeTokenAccount,
} from "./litesvm_accounts.ts";

/** The largest compute budget a transaction may request. */
export const MAX_COMPUTE_UNITS = 1_400_000;
/** The most bytes a serialized transaction may have. */
export const MAX_TRANSACTION_BYTES = 1232;

export type { SendResult };

/** Options of {@linkcode CoordinatorSvm.send}. */
export interface SendOptions {
  /** Account 1, signing: an authority or a client wallet; absent or null for tick. */
  signer?: KeyPairSigner | null;
  /** Request this compute-unit limit (a ComputeBudget instruction is prepended). */
  computeUnitLimit?: number;
  /** Accounts after the coordinator and the signer (free_coordinator's spill account). */
  extraAccounts?: { address: Address; role: AccountRole }[];
}

/** A LiteSVM with the coordinator program deployed and a funded fee payer. */
export class CoordinatorSvm {
  readonly svm: LiteSVM;
  readonly programId: Address;
  readonly payer: KeyPairSigner;
  #slot = 1n;

  private constructor(svm: LiteSVM, programId: Address, payer: KeyPairSigner) {
    this.svm = svm;
    this.programId = programId;
    this.payer = payer;
  }

  /**
   * Builds (once per process) and deploys the program at a fresh address. litesvm comes with
   * the SPL Token and Associated Token Account programs (the join deposit's tests use them).
   */
  static async create(): Promise<CoordinatorSvm> {
    const program = await buildProgramOnce();
    const svm = new LiteSVM();
    const programId = (await generateKeyPairSigner()).address;
    svm.addProgram(programId, program.bytes);
    const payer = await generateKeyPairSigner();
    svm.airdrop(payer.address, lamports(1_000_000_000_000n));
    return new CoordinatorSvm(svm, programId, payer);
  }

  /** A new funded keypair. */
  async newSigner(): Promise<KeyPairSigner> {
    const s = await generateKeyPairSigner();
    this.svm.airdrop(s.address, lamports(10_000_000_000n));
    return s;
  }

  /** Sets the Clock sysvar (unix time in seconds, slot). */
  setClock(unixTimestamp: number, slot?: bigint): void {
    if (slot !== undefined) this.#slot = slot;
    this.svm.setClock(new Clock(this.#slot, 0n, 0n, 0n, BigInt(unixTimestamp)));
  }

  /** Sends `instructions` signed by the payer and `signers`; never throws on program errors. */
  sendRaw(
    instructions: Instruction[],
    opts: { computeUnitLimit?: number } = {},
  ): Promise<SendResult> {
    const all = opts.computeUnitLimit === undefined
      ? instructions
      : [setComputeUnitLimitInstruction(opts.computeUnitLimit), ...instructions];
    return sendInstructions(this.svm, this.payer, all, programErrorName);
  }

  /** The coordinator instruction `ix` on `coordinator` (signer and extra accounts from `opts`). */
  instruction(
    coordinator: Address,
    ix: CoordinatorInstruction,
    opts: { signer?: KeyPairSigner | null; extraAccounts?: ExtraAccount[] } = {},
  ): Instruction {
    return coordinatorInstruction({
      programId: this.programId,
      coordinator,
      ix,
      signer: opts.signer ?? null,
      extraAccounts: opts.extraAccounts,
    });
  }

  /** Sends one coordinator instruction; never throws on program errors. */
  send(
    coordinator: Address,
    ix: CoordinatorInstruction,
    opts: SendOptions = {},
  ): Promise<SendResult> {
    return this.sendRaw([this.instruction(coordinator, ix, opts)], {
      computeUnitLimit: opts.computeUnitLimit,
    });
  }

  /** Creates the run's account at its seed address and initializes it in one transaction. */
  async createRun(opts: {
    runId: string;
    mainAuthority: KeyPairSigner;
    joinAuthority: Address;
    permissionless: boolean;
  }): Promise<{ coordinator: Address; result: SendResult }> {
    const { coordinator, instructions } = await createRunInstructions({
      programId: this.programId,
      payer: this.payer,
      mainAuthority: opts.mainAuthority,
      joinAuthority: opts.joinAuthority,
      runId: opts.runId,
      permissionless: opts.permissionless,
      rentLamports: this.svm.minimumBalanceForRentExemption(BigInt(ACCOUNT_SIZE)),
    });
    const result = await this.sendRaw(instructions);
    return { coordinator, result };
  }

  /**
   * Creates a program-owned account of the coordinator's size at
   * createWithSeed(mainAuthority, seed, program) without initializing it (tests of init).
   */
  async createRunUninitialized(
    opts: { seed: string; mainAuthority: KeyPairSigner },
  ): Promise<Address> {
    const at = await coordinatorAddress({
      mainAuthority: opts.mainAuthority.address,
      runId: opts.seed,
      programId: this.programId,
    });
    const rent = this.svm.minimumBalanceForRentExemption(BigInt(ACCOUNT_SIZE));
    const result = await this.sendRaw([
      createAccountWithSeedInstruction({
        payer: this.payer,
        base: opts.mainAuthority,
        target: at,
        seed: opts.seed,
        lamports: rent,
        owner: this.programId,
      }),
    ]);
    if (!result.ok) throw new Error(`createAccountWithSeed failed: ${result.error}`);
    return at;
  }

  /** The raw bytes of an account (null when it does not exist). */
  accountBytes(at: Address): Uint8Array | null {
    return accountBytes(this.svm, at);
  }

  /** Lamports of an account (0 when it does not exist). */
  balance(at: Address): bigint {
    const acc = this.svm.getAccount(at);
    return acc.exists ? acc.lamports : 0n;
  }

  /** Writes an initialized SPL Token mint at a fresh address (the payer its mint authority). */
  createMint(decimals = 6): Promise<Address> {
    return writeMint(this.svm, this.payer.address, { decimals });
  }

  /** Writes an initialized token account of `mint` owned by `owner` holding `amount`. */
  createTokenAccount(mint: Address, owner: Address, amount: bigint): Promise<Address> {
    return writeTokenAccount(this.svm, mint, owner, amount);
  }

  /** The amount a token account holds. */
  tokenBalance(at: Address): bigint {
    return tokenBalance(this.svm, at);
  }

  /** Decodes the coordinator account at `at` (throws when absent or malformed). */
  coordinatorAccount(at: Address): CoordinatorAccount {
    const bytes = this.accountBytes(at);
    if (bytes === null) throw new Error(`No account at ${at}`);
    return decodeCoordinatorAccount(bytes);
  }
}

/** The 32 bytes of an address. */
export function addressBytes(a: Address): Uint8Array {
  return getAddressEncoder().encode(a) as Uint8Array;
}

/** The address of 32 bytes. */
export function bytesAddress(b: Uint8Array): Address {
  return getAddressDecoder().decode(b);
}
