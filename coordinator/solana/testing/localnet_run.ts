/**
 * Test support: a localnet with one run opened by an operator wallet, configured and
 * resumed (WaitingForMembers), plus funded wallets for clients. Used by the Solana
 * backend's compliance tests and the end-to-end tests; everything goes through the RPC,
 * as a real deployment would.
 *
 * @module
 */

import type { Address } from "@solana/kit";
import type { CoordinatorConfig, LlmModel, NodeIdentity } from "../../core/mod.ts";
import { decodeCoordinatorAccount, pendingRegistrations } from "../abi/mod.ts";
import { SolanaRpcClient, TransactionSender, type Wallet, walletFromBytes } from "../rpc/mod.ts";
import { RunOperator } from "../cli/mod.ts";
import { loadProgramBytes, type LocalnetServer, startLocalnet } from "../localnet/mod.ts";
import { generateIdentity } from "../../../net/mod.ts";

/** A localnet run ready for clients. */
export interface TestRun extends AsyncDisposable {
  net: LocalnetServer;
  rpc: SolanaRpcClient;
  operator: RunOperator;
  /** The main authority (also the join authority). */
  authority: Wallet;
  coordinator: Address;
  runId: string;
  /** A new wallet with 10 SOL. */
  newWallet(): Promise<Wallet>;
  /** The registry's pending clients, read from the ledger. */
  pending(): NodeIdentity[];
  close(): Promise<void>;
}

/** Options of {@linkcode startTestRun}. */
export interface TestRunOptions {
  runId: string;
  config: CoordinatorConfig;
  model: LlmModel;
  permissionless?: boolean;
  /** Leave the run Uninitialized-then-configured but paused (default false: resumed). */
  paused?: boolean;
  /** Ports (default 0: free ones). */
  port?: number;
  wsPort?: number;
  /** The chain's wall time in ms (default Date.now): tests that control time pass theirs. */
  now?: () => number;
  /** The treasurer's bytes, to deploy it at the localnet's treasurer id (default: no treasurer). */
  treasurerProgramBytes?: Uint8Array;
}

/** Funds a fresh keypair on the ledger directly. */
async function fundedWallet(net: LocalnetServer): Promise<Wallet> {
  const id = generateIdentity();
  const wallet = await walletFromBytes(Uint8Array.from([...id.secretKey, ...id.publicKey]));
  net.ledger.airdrop(wallet.signer.address, 10_000_000_000n);
  return wallet;
}

/** Starts a localnet and opens, configures and (unless `paused`) resumes a run. */
export async function startTestRun(opts: TestRunOptions): Promise<TestRun> {
  const net = await startLocalnet({
    port: opts.port ?? 0,
    wsPort: opts.wsPort ?? 0,
    programBytes: await loadProgramBytes(),
    treasurerProgramBytes: opts.treasurerProgramBytes,
    now: opts.now,
  });
  try {
    const rpc = new SolanaRpcClient({ url: net.url, wsUrl: net.wsUrl });
    const authority = await fundedWallet(net);
    const operator = new RunOperator({
      rpc,
      programId: net.ledger.programId,
      sender: new TransactionSender({ rpcs: [rpc], payer: authority.signer }),
    });
    const coordinator = await operator.createRun({
      runId: opts.runId,
      joinAuthority: authority.signer.address,
      permissionless: opts.permissionless ?? true,
    });
    await operator.update(coordinator, { config: opts.config, model: opts.model });
    if (!opts.paused) await operator.setPaused(coordinator, false);
    const close = () => net.close();
    return {
      net,
      rpc,
      operator,
      authority,
      coordinator,
      runId: opts.runId,
      newWallet: () => fundedWallet(net),
      pending: () => {
        const data = net.ledger.account(coordinator)?.data;
        if (data === undefined) return [];
        return pendingRegistrations(decodeCoordinatorAccount(data)).map((r) => ({
          signer: r.signer,
          p2pIdentity: r.p2pIdentity,
        }));
      },
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (e) {
    await net.close();
    throw e;
  }
}
