/**
 * What a run's operator does on chain, as plain async calls (the `deno task solana`
 * commands are thin wrappers around these): create a run, update its config and model,
 * pause and resume it, set the rates its next epochs pay, set its join deposit, withdraw a
 * deposit, sweep forfeited deposits, grant join authorization and delegates, tick it, and dump
 * it as JSON. Each call builds the program's instruction (coordinator/solana/abi/kit.ts) and sends
 * it with {@linkcode TransactionSender} (retries, RPC fallback, typed program errors).
 *
 * @module
 */

import {
  AccountRole,
  type Address,
  getAddressDecoder,
  getAddressEncoder,
  type KeyPairSigner,
} from "@solana/kit";
import type { CoordinatorConfig, CoordinatorProgress, LlmModel } from "../../core/mod.ts";
import {
  ACCOUNT_SIZE,
  type CoordinatorAccount,
  coordinatorAddress,
  type CoordinatorInstruction,
  coordinatorInstruction,
  createAssociatedTokenAccountInstruction,
  createRunInstructions,
  decodeCoordinatorAccount,
  depositPayoutAccounts,
  depositVaultAuthority,
  type EpochRates,
  type JoinDeposit,
  type MeetingAddress,
  type RunMetadata,
  TICK_COMPUTE_UNITS,
} from "../abi/mod.ts";
import type { SolanaRpcClient, TransactionSender } from "../rpc/mod.ts";
import { coordinatorStateToJson } from "../../encoding/mod.ts";
import { registrationSlot } from "./reads.ts";

/** The run does not exist or is not a coordinator account. */
export class RunNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RunNotFoundError";
  }
}

/** Options of {@linkcode RunOperator}. */
export interface RunOperatorOptions {
  rpc: SolanaRpcClient;
  /** Sends as the operator's wallet (the run's main authority, join authority or authorizer). */
  sender: TransactionSender;
  programId: Address;
}

/** A run's config/model/metadata/progress/meeting-address change (any subset, at least one). */
export interface RunUpdate {
  metadata?: RunMetadata;
  config?: CoordinatorConfig;
  model?: LlmModel;
  progress?: CoordinatorProgress;
  /** Where the run's clients meet: replaces the run's list (empty clears it). */
  meetingAddresses?: MeetingAddress[];
}

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

/** Operator actions on coordinator runs, signed by one wallet. */
export class RunOperator {
  readonly #o: RunOperatorOptions;

  constructor(opts: RunOperatorOptions) {
    this.#o = opts;
  }

  /** The wallet that signs. */
  get wallet(): KeyPairSigner {
    return this.#o.sender.payer;
  }

  /** The account address of `runId` created by `mainAuthority` (default: this wallet). */
  address(runId: string, mainAuthority: Address = this.wallet.address): Promise<Address> {
    return coordinatorAddress({ mainAuthority, runId, programId: this.#o.programId });
  }

  /**
   * Creates the run's account (rent paid by this wallet, which becomes the main authority)
   * and initializes it; returns its address.
   */
  async createRun(opts: {
    runId: string;
    joinAuthority: Address;
    permissionless: boolean;
  }): Promise<Address> {
    const { coordinator, instructions } = await createRunInstructions({
      programId: this.#o.programId,
      payer: this.wallet,
      mainAuthority: this.wallet,
      joinAuthority: opts.joinAuthority,
      runId: opts.runId,
      permissionless: opts.permissionless,
      rentLamports: await this.#o.rpc.rentExemption(ACCOUNT_SIZE),
    });
    await this.#o.sender.send(instructions);
    return coordinator;
  }

  async #send(coordinator: Address, ix: CoordinatorInstruction, signed = true): Promise<string> {
    return await this.#o.sender.send([
      coordinatorInstruction({
        programId: this.#o.programId,
        coordinator,
        signer: signed ? this.wallet : null,
        ix,
      }),
    ], { computeUnitLimit: ix.kind === "Tick" ? TICK_COMPUTE_UNITS : undefined });
  }

  /**
   * Updates metadata, config, model, progress and/or meeting addresses (config/model/progress
   * only while halted).
   */
  update(coordinator: Address, update: RunUpdate): Promise<string> {
    if (Object.values(update).every((v) => v === undefined)) {
      throw new TypeError(
        "update needs at least one of metadata, config, model, progress, meetingAddresses",
      );
    }
    return this.#send(coordinator, { kind: "Update", ...update });
  }

  /** Pauses (`true`) or resumes (`false`) the run. */
  setPaused(coordinator: Address, paused: boolean): Promise<string> {
    return this.#send(coordinator, { kind: "SetPaused", paused });
  }

  /**
   * Sets the rates the run's next epochs pay (each epoch takes them when it enters Warmup); a
   * rate left out keeps its value.
   */
  setFutureEpochRates(coordinator: Address, rates: Partial<EpochRates>): Promise<string> {
    if (rates.earningRateTotalShared === undefined && rates.slashingRatePerClient === undefined) {
      throw new TypeError("setFutureEpochRates needs at least one rate");
    }
    return this.#send(coordinator, { kind: "SetFutureEpochRates", ...rates });
  }

  /**
   * Sets the run's join deposit: `amount` tokens of `mint` (0 turns it off). The vault is the
   * vault authority's associated token account for the mint, created in the same transaction
   * when it does not exist. Returns the vault's address.
   */
  async setJoinDeposit(coordinator: Address, mint: Address, amount: bigint): Promise<Address> {
    const authority = await depositVaultAuthority(this.#o.programId, coordinator);
    const vault = await createAssociatedTokenAccountInstruction({
      payer: this.wallet,
      owner: authority.address,
      mint,
    });
    await this.#o.sender.send([
      vault.instruction,
      coordinatorInstruction({
        programId: this.#o.programId,
        coordinator,
        signer: this.wallet,
        ix: { kind: "SetJoinDeposit", amount },
        extraAccounts: [{ address: vault.account, role: AccountRole.READONLY }],
      }),
    ]);
    return vault.account;
  }

  /**
   * As a depositor: takes this wallet's deposit back from the run's vault into `tokenAccount`
   * (any token account of the deposit's mint). The instruction names the wallet's registry slot
   * as read, which spares the program its registry search; the program checks it (a slot
   * reused since the read only costs the search).
   */
  withdrawDeposit(coordinator: Address, tokenAccount: Address): Promise<string> {
    const me = getAddressEncoder().encode(this.wallet.address) as Uint8Array;
    return this.#payout(coordinator, (account) => {
      const slot = registrationSlot(account, me);
      return { kind: "WithdrawDeposit", registration: slot < 0 ? undefined : slot };
    }, tokenAccount);
  }

  /** As the main authority: moves every forfeited deposit into `tokenAccount`. */
  sweepForfeited(coordinator: Address, tokenAccount: Address): Promise<string> {
    return this.#payout(coordinator, () => ({ kind: "SweepForfeited" }), tokenAccount);
  }

  /** A payout from the vault: `instruction` built from the run's account as just read. */
  async #payout(
    coordinator: Address,
    instruction: (account: CoordinatorAccount) => CoordinatorInstruction,
    tokenAccount: Address,
  ): Promise<string> {
    const account = await this.read(coordinator);
    const d = account.joinDeposit;
    if (d.vault === null) throw new Error(`the run at ${coordinator} never had a join deposit`);
    const authority = await depositVaultAuthority(this.#o.programId, coordinator);
    return await this.#o.sender.send([
      coordinatorInstruction({
        programId: this.#o.programId,
        coordinator,
        signer: this.wallet,
        ix: instruction(account),
        extraAccounts: depositPayoutAccounts({
          tokenAccount,
          vault: getAddressDecoder().decode(d.vault),
          vaultAuthority: authority.address,
        }),
      }),
    ]);
  }

  /** As the join authority: grants `authorizer` (who may join and name delegates). */
  grantAuthorizer(coordinator: Address, authorizer: Address): Promise<string> {
    return this.#send(coordinator, {
      kind: "GrantAuthorizer",
      authorizer: getAddressEncoder().encode(authorizer) as Uint8Array,
    });
  }

  /** As the authorizer: adds delegates (after clearing the list when `clear`). */
  setDelegates(coordinator: Address, delegates: Address[], clear = false): Promise<string> {
    return this.#send(coordinator, {
      kind: "SetDelegates",
      clear,
      delegates: delegates.map((d) => getAddressEncoder().encode(d) as Uint8Array),
    });
  }

  /**
   * Closes a halted run: the account's rent goes to `spill` (default: this wallet) and the
   * account is deleted.
   */
  closeRun(coordinator: Address, spill: Address = this.wallet.address): Promise<string> {
    return this.#o.sender.send([
      coordinatorInstruction({
        programId: this.#o.programId,
        coordinator,
        signer: this.wallet,
        ix: { kind: "FreeCoordinator" },
        extraAccounts: [{ address: spill, role: AccountRole.WRITABLE }],
      }),
    ]);
  }

  /** Sends a tick (anyone may). */
  tick(coordinator: Address): Promise<string> {
    return this.#send(coordinator, { kind: "Tick" }, false);
  }

  /** Reads and decodes the run's account. */
  read(coordinator: Address): Promise<CoordinatorAccount> {
    return readRun(this.#o.rpc, coordinator);
  }
}

/** Reads and decodes a run's account (RunNotFoundError when absent or not a run). */
export async function readRun(
  rpc: SolanaRpcClient,
  coordinator: Address,
): Promise<CoordinatorAccount> {
  const data = await rpc.accountData(coordinator);
  if (data === null) throw new RunNotFoundError(`no account at ${coordinator}`);
  try {
    return decodeCoordinatorAccount(data);
  } catch (e) {
    throw new RunNotFoundError(
      `the account at ${coordinator} is not a coordinator run: ${(e as Error).message}`,
    );
  }
}

function depositJson(d: JoinDeposit): Record<string, string | null> {
  const key = (k: Uint8Array | null) => k === null ? null : getAddressDecoder().decode(k);
  return {
    amount: d.amount.toString(),
    held: d.held.toString(),
    forfeited: d.forfeited.toString(),
    mint: key(d.mint),
    vault: key(d.vault),
  };
}

function ratesJson(rates: EpochRates): Record<string, string> {
  return {
    earningRateTotalShared: rates.earningRateTotalShared.toString(),
    slashingRatePerClient: rates.slashingRatePerClient.toString(),
  };
}

/**
 * The run as JSON: the program's fields (authorities hex, nonce, registry with each wallet's
 * earned and slashed points and deposit, epoch rates, the join deposit; u64 values as decimal
 * strings) and the coordinator state in the same JSON the TCP server's tools print
 * (encoding/json.ts).
 */
export function runJson(account: CoordinatorAccount): Record<string, unknown> {
  return {
    version: account.version,
    nonce: account.nonce.toString(),
    permissionless: account.permissionless,
    mainAuthority: hex(account.mainAuthority),
    joinAuthority: hex(account.joinAuthority),
    authorizer: account.authorizer === null ? null : hex(account.authorizer),
    delegates: account.delegates.map(hex),
    metadata: account.metadata,
    meetingAddresses: account.meetingAddresses,
    nextActive: account.nextActive.toString(),
    currentEpochRates: ratesJson(account.currentEpochRates),
    futureEpochRates: ratesJson(account.futureEpochRates),
    joinDeposit: depositJson(account.joinDeposit),
    registry: account.registry.map((r) => ({
      signer: hex(r.signer),
      p2pIdentity: hex(r.p2pIdentity),
      active: r.active.toString(),
      pending: r.active === account.nextActive,
      earned: r.earned.toString(),
      slashed: r.slashed.toString(),
      deposit: r.deposit.toString(),
    })),
    state: coordinatorStateToJson(account.state),
  };
}
