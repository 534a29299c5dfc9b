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
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressDecoder,
  getAddressEncoder,
  getTransactionEncoder,
  type Instruction,
  type KeyPairSigner,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { Clock, FailedTransactionMetadata, LiteSVM } from "litesvm";
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
  SPL_TOKEN_PROGRAM_ADDRESS,
} from "../abi/mod.ts";
import { buildProgramOnce } from "../toolchain/mod.ts";

/** The largest compute budget a transaction may request. */
export const MAX_COMPUTE_UNITS = 1_400_000;
/** The most bytes a serialized transaction may have. */
export const MAX_TRANSACTION_BYTES = 1232;

const TOKEN_MINT_BYTES = 82;
const TOKEN_ACCOUNT_BYTES = 165;

/** What happened to one transaction. */
export interface SendResult {
  ok: boolean;
  /** The program's custom error code, when it failed with one. */
  code: number | null;
  /** The error's name (program error name, or the runtime's description). */
  error: string | null;
  /** Compute units the transaction consumed. */
  computeUnits: number;
  /** Serialized transaction size in bytes. */
  transactionBytes: number;
  logs: string[];
}

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
  async sendRaw(
    instructions: Instruction[],
    opts: { computeUnitLimit?: number } = {},
  ): Promise<SendResult> {
    const all = opts.computeUnitLimit === undefined
      ? instructions
      : [setComputeUnitLimitInstruction(opts.computeUnitLimit), ...instructions];
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(this.payer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: this.svm.latestBlockhash(), lastValidBlockHeight: 1_000_000n },
          m,
        ),
      (m) => appendTransactionMessageInstructions(all, m),
    );
    const tx = await signTransactionMessageWithSigners(message);
    const transactionBytes = getTransactionEncoder().encode(tx).length;
    const result = this.svm.sendTransaction(tx);
    this.svm.expireBlockhash();
    if (result instanceof FailedTransactionMetadata) {
      const meta = result.meta();
      const err = result.err();
      let code: number | null = null;
      if (typeof err === "object" && err !== null && "err" in err) {
        const inner = (err as { err(): unknown }).err();
        if (typeof inner === "object" && inner !== null && "code" in inner) {
          code = (inner as { code: number }).code;
        }
      }
      return {
        ok: false,
        code,
        error: code !== null ? (programErrorName(code) ?? `Custom(${code})`) : result.toString(),
        computeUnits: Number(meta.computeUnitsConsumed()),
        transactionBytes,
        logs: meta.logs(),
      };
    }
    return {
      ok: true,
      code: null,
      error: null,
      computeUnits: Number(result.computeUnitsConsumed()),
      transactionBytes,
      logs: result.logs(),
    };
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
    const acc = this.svm.getAccount(at);
    return acc.exists ? acc.data : null;
  }

  /** Lamports of an account (0 when it does not exist). */
  balance(at: Address): bigint {
    const acc = this.svm.getAccount(at);
    return acc.exists ? acc.lamports : 0n;
  }

  /**
   * Writes an initialized SPL Token mint at a fresh address (the bytes SPL Token writes; the
   * payer is its mint authority).
   */
  async createMint(decimals = 6): Promise<Address> {
    const at = (await generateKeyPairSigner()).address;
    const data = new Uint8Array(TOKEN_MINT_BYTES);
    new DataView(data.buffer).setUint32(0, 1, true);
    data.set(getAddressEncoder().encode(this.payer.address), 4);
    data[44] = decimals;
    data[45] = 1;
    this.#putToken(at, data);
    return at;
  }

  /** Writes an initialized token account of `mint` owned by `owner` holding `amount`. */
  async createTokenAccount(mint: Address, owner: Address, amount: bigint): Promise<Address> {
    const at = (await generateKeyPairSigner()).address;
    const data = new Uint8Array(TOKEN_ACCOUNT_BYTES);
    data.set(getAddressEncoder().encode(mint), 0);
    data.set(getAddressEncoder().encode(owner), 32);
    new DataView(data.buffer).setBigUint64(64, amount, true);
    data[108] = 1;
    this.#putToken(at, data);
    return at;
  }

  /** The amount a token account holds. */
  tokenBalance(at: Address): bigint {
    const bytes = this.accountBytes(at);
    if (bytes === null) throw new Error(`No token account at ${at}`);
    return new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(64, true);
  }

  #putToken(at: Address, data: Uint8Array): void {
    this.svm.setAccount({
      address: at,
      data,
      executable: false,
      lamports: lamports(this.svm.minimumBalanceForRentExemption(BigInt(data.length))),
      programAddress: SPL_TOKEN_PROGRAM_ADDRESS,
      space: BigInt(data.length),
    });
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
