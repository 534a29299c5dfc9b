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
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressEncoder,
  type Instruction,
  type KeyPairSigner,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import { FailedTransactionMetadata, LiteSVM } from "litesvm";
import { poolErrorName, TOKEN_PROGRAM_ADDRESS } from "../pool/mod.ts";
import { buildPoolOnce } from "../toolchain/mod.ts";

/** What happened to one transaction. */
export interface PoolSendResult {
  ok: boolean;
  /** The custom error code, when the transaction failed with one. */
  code: number | null;
  /** The pool error's name, `Custom(n)` for another program's, or the runtime's words. */
  error: string | null;
  computeUnits: number;
  logs: string[];
}

const MINT_BYTES = 82;
const TOKEN_ACCOUNT_BYTES = 165;

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

  /** Sends `instructions`, paid by the payer; never throws on a refused transaction. */
  async send(instructions: Instruction[]): Promise<PoolSendResult> {
    const message = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(this.payer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: this.svm.latestBlockhash(), lastValidBlockHeight: 1_000_000n },
          m,
        ),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const tx = await signTransactionMessageWithSigners(message);
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
        error: code !== null ? (poolErrorName(code) ?? `Custom(${code})`) : result.toString(),
        computeUnits: Number(meta.computeUnitsConsumed()),
        logs: meta.logs(),
      };
    }
    return {
      ok: true,
      code: null,
      error: null,
      computeUnits: Number(result.computeUnitsConsumed()),
      logs: result.logs(),
    };
  }

  /** Writes an initialized SPL Token mint (supply as given) at a fresh address. */
  async createMint(opts: { decimals?: number; supply?: bigint } = {}): Promise<Address> {
    const at = (await generateKeyPairSigner()).address;
    const data = new Uint8Array(MINT_BYTES);
    const v = new DataView(data.buffer);
    v.setUint32(0, 1, true);
    data.set(getAddressEncoder().encode(this.payer.address), 4);
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
  patch(at: Address, edit: (data: Uint8Array) => void): void {
    const acc = this.svm.getAccount(at);
    if (!acc.exists) throw new Error(`No account at ${at}`);
    const data = Uint8Array.from(acc.data);
    edit(data);
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
    const acc = this.svm.getAccount(at);
    return acc.exists ? acc.data : null;
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
