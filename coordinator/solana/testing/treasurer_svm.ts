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
  getAddressEncoder,
  type Instruction,
  type KeyPairSigner,
  lamports,
} from "@solana/kit";
import type { LiteSVM } from "litesvm";
import { TOKEN_PROGRAM_ADDRESS, treasurerErrorName } from "../treasurer/mod.ts";
import { buildTreasurerOnce } from "../toolchain/mod.ts";
import { CoordinatorSvm, type SendResult } from "./svm.ts";

const MINT_BYTES = 82;
const TOKEN_ACCOUNT_BYTES = 165;

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
  async createMint(opts: { decimals?: number; supply?: bigint } = {}): Promise<Address> {
    const at = (await generateKeyPairSigner()).address;
    const data = new Uint8Array(MINT_BYTES);
    const v = new DataView(data.buffer);
    v.setUint32(0, 1, true);
    data.set(getAddressEncoder().encode(this.coordinator.payer.address), 4);
    v.setBigUint64(36, opts.supply ?? 0n, true);
    data[44] = opts.decimals ?? 6;
    data[45] = 1;
    this.#put(at, TOKEN_PROGRAM_ADDRESS, data);
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
    this.#put(at, TOKEN_PROGRAM_ADDRESS, data);
    return at;
  }

  /** Overwrites an existing account's data (crafting states transactions cannot reach). */
  patch(at: Address, edit: (data: Uint8Array, view: DataView) => void): void {
    const acc = this.svm.getAccount(at);
    if (!acc.exists) throw new Error(`No account at ${at}`);
    const data = Uint8Array.from(acc.data);
    edit(data, new DataView(data.buffer));
    this.svm.setAccount({ ...acc, data });
  }

  /** The amount a token account holds. */
  tokenBalance(at: Address): bigint {
    const bytes = this.accountBytes(at);
    if (bytes === null) throw new Error(`No token account at ${at}`);
    return new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(64, true);
  }

  /** The raw bytes of an account (null when it does not exist). */
  accountBytes(at: Address): Uint8Array | null {
    return this.coordinator.accountBytes(at);
  }

  /** Lamports, owner and data of every account in `at`, for byte-identity checks. */
  snapshot(at: readonly Address[]): string[] {
    return at.map((a) => {
      const acc = this.svm.getAccount(a);
      if (!acc.exists) return `${a}: none`;
      return `${a}: ${acc.lamports} ${acc.programAddress} ${Array.from(acc.data).join(",")}`;
    });
  }

  #put(at: Address, owner: Address, data: Uint8Array): void {
    this.svm.setAccount({
      address: at,
      data,
      executable: false,
      lamports: lamports(this.svm.minimumBalanceForRentExemption(BigInt(data.length))),
      programAddress: owner,
      space: BigInt(data.length),
    });
  }
}
