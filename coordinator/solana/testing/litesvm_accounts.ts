/**
 * What the program harnesses (svm.ts, pool_svm.ts, treasurer_svm.ts) share over one LiteSVM:
 * sending a transaction and reporting it without throwing, SPL Token mints and token accounts
 * written straight into the bank (the bytes SPL Token itself writes, so a test needs no mint
 * authority's transactions), token balances, account patches and byte snapshots.
 *
 * @module
 */
import {
  type Address,
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
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
import { FailedTransactionMetadata, type LiteSVM } from "litesvm";

/** The SPL Token program, owner of the mints and token accounts written here. */
const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA" as Address;

/** Bytes of an SPL Token mint and of a token account. */
export const MINT_BYTES = 82;
export const TOKEN_ACCOUNT_BYTES = 165;

/** What happened to one transaction. */
export interface SendResult {
  ok: boolean;
  /** The program's custom error code, when it failed with one. */
  code: number | null;
  /** The error's name (`errorName`'s, `Custom(n)` when it has none, or the runtime's words). */
  error: string | null;
  /** Compute units the transaction consumed. */
  computeUnits: number;
  /** Serialized transaction size in bytes. */
  transactionBytes: number;
  logs: string[];
}

/**
 * Sends `instructions` in one transaction paid by `payer` (and signed by every signer their
 * accounts carry), then expires the blockhash so the same transaction can be sent again. Never
 * throws on a refused transaction: the result says why, naming a custom error by `errorName`.
 */
export async function sendInstructions(
  svm: LiteSVM,
  payer: KeyPairSigner,
  instructions: Instruction[],
  errorName: (code: number) => string | undefined,
): Promise<SendResult> {
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: svm.latestBlockhash(), lastValidBlockHeight: 1_000_000n },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const tx = await signTransactionMessageWithSigners(message);
  const transactionBytes = getTransactionEncoder().encode(tx).length;
  const result = svm.sendTransaction(tx);
  svm.expireBlockhash();
  if (result instanceof FailedTransactionMetadata) {
    const meta = result.meta();
    const code = customCode(result.err());
    return {
      ok: false,
      code,
      error: code !== null ? (errorName(code) ?? `Custom(${code})`) : result.toString(),
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

/** The custom error code inside a failed transaction's error, if it has one. */
function customCode(err: unknown): number | null {
  if (typeof err !== "object" || err === null || !("err" in err)) return null;
  const inner = (err as { err(): unknown }).err();
  return typeof inner === "object" && inner !== null && "code" in inner
    ? (inner as { code: number }).code
    : null;
}

/** Writes a rent-exempt account owned by `owner` holding `data`. */
export function putAccount(svm: LiteSVM, at: Address, owner: Address, data: Uint8Array): void {
  svm.setAccount({
    address: at,
    data,
    executable: false,
    lamports: lamports(svm.minimumBalanceForRentExemption(BigInt(data.length))),
    programAddress: owner,
    space: BigInt(data.length),
  });
}

/** What a token account holds: tokens of `mint` owned by `owner`. */
export interface TokenHolding {
  readonly mint: Address;
  readonly owner: Address;
  readonly amount: bigint;
}

/**
 * Writes at `at` an initialized token account holding `token`, or, for null, an initialized
 * mint without a mint authority (nobody can mint more).
 */
export function writeTokenAt(svm: LiteSVM, at: Address, token: TokenHolding | null): void {
  if (token === null) {
    putAccount(svm, at, TOKEN_PROGRAM, mintBytes(null, {}));
    return;
  }
  const data = new Uint8Array(TOKEN_ACCOUNT_BYTES);
  data.set(getAddressEncoder().encode(token.mint), 0);
  data.set(getAddressEncoder().encode(token.owner), 32);
  new DataView(data.buffer).setBigUint64(64, token.amount, true);
  data[108] = 1; // initialized
  putAccount(svm, at, TOKEN_PROGRAM, data);
}

/** {@linkcode writeTokenAt} at a fresh address, which it returns. */
export async function newTokenAccount(svm: LiteSVM, token: TokenHolding | null): Promise<Address> {
  const at = (await generateKeyPairSigner()).address;
  writeTokenAt(svm, at, token);
  return at;
}

/** An initialized mint's bytes: `authority` may mint (none when null). */
function mintBytes(
  authority: Address | null,
  opts: { decimals?: number; supply?: bigint },
): Uint8Array {
  const data = new Uint8Array(MINT_BYTES);
  const view = new DataView(data.buffer);
  if (authority !== null) {
    view.setUint32(0, 1, true);
    data.set(getAddressEncoder().encode(authority), 4);
  }
  view.setBigUint64(36, opts.supply ?? 0n, true);
  data[44] = opts.decimals ?? 6;
  data[45] = 1; // initialized
  return data;
}

/** Writes an initialized SPL Token mint of `authority` at a fresh address. */
export async function writeMint(
  svm: LiteSVM,
  authority: Address,
  opts: { decimals?: number; supply?: bigint } = {},
): Promise<Address> {
  const at = (await generateKeyPairSigner()).address;
  putAccount(svm, at, TOKEN_PROGRAM, mintBytes(authority, opts));
  return at;
}

/** Writes an initialized token account of `mint` owned by `owner` holding `amount`. */
export function writeTokenAccount(
  svm: LiteSVM,
  mint: Address,
  owner: Address,
  amount: bigint,
): Promise<Address> {
  return newTokenAccount(svm, { mint, owner, amount });
}

/** The raw bytes of an account (null when it does not exist). */
export function accountBytes(svm: LiteSVM, at: Address): Uint8Array | null {
  const acc = svm.getAccount(at);
  return acc.exists ? acc.data : null;
}

/** The amount a token account holds. */
export function tokenBalance(svm: LiteSVM, at: Address): bigint {
  const bytes = accountBytes(svm, at);
  if (bytes === null) throw new Error(`No token account at ${at}`);
  return new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(64, true);
}

/** Overwrites an existing account's data (crafting states transactions cannot reach). */
export function patchAccount(
  svm: LiteSVM,
  at: Address,
  edit: (data: Uint8Array, view: DataView) => void,
): void {
  const acc = svm.getAccount(at);
  if (!acc.exists) throw new Error(`No account at ${at}`);
  const data = Uint8Array.from(acc.data);
  edit(data, new DataView(data.buffer));
  svm.setAccount({ ...acc, data });
}

/** Lamports, owner and data of every account in `at`, for byte-identity checks. */
export function snapshotAccounts(svm: LiteSVM, at: readonly Address[]): string[] {
  return at.map((a) => {
    const acc = svm.getAccount(a);
    if (!acc.exists) return `${a}: none`;
    return `${a}: ${acc.lamports} ${acc.programAddress} ${Array.from(acc.data).join(",")}`;
  });
}
