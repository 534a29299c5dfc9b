/**
 * What the dashboard reads of the coordinator's state at a moment: the run's state, progress,
 * the epoch's clients with their health, the pending keys and the run's configuration. Events
 * say what happened; the snapshot says where the run stands, so a dashboard opened mid-run (or
 * an event the reducer does not model) still shows the truth.
 *
 * Pure.
 *
 * @module
 */
import {
  type ClientState,
  type CoordinatorState,
  currentRound,
  type RunState,
} from "../core/mod.ts";
import { toHex } from "../../common/mod.ts";

/** The run's configuration as the dashboard shows it (seconds for times). */
export interface ConfigView {
  readonly warmupTime: number;
  readonly cooldownTime: number;
  readonly maxRoundTrainTime: number;
  readonly roundWitnessTime: number;
  readonly epochTime: number;
  readonly totalSteps: number;
  readonly initMinClients: number;
  readonly minClients: number;
  readonly maxClients: number;
  readonly witnessNodes: number;
  readonly globalBatchSizeStart: number;
  readonly globalBatchSizeEnd: number;
  readonly verificationPercent: number;
  readonly architecture: string;
  readonly maxSeqLen: number;
}

/**
 * Token balances around a run (Solana: its treasury and the mining pools the dashboard was
 * asked to show), in token base units as decimal u64 strings.
 */
export interface FundsView {
  /** The run's treasury (docs/solana-treasurer.md), or null when it has none. */
  readonly treasury: {
    readonly address: string;
    readonly mint: string;
    /** What the treasury's vault holds: what claims can still be paid from. */
    readonly vaultAmount: string;
    /** Paid to participants, in all. */
    readonly totalClaimed: string;
  } | null;
  /** Mining pools (docs/solana-pool.md), in the order they were named. */
  readonly pools: readonly {
    readonly address: string;
    readonly collateralMint: string;
    readonly rewardsMint: string;
    /** Collateral the lenders deposited. */
    readonly totalDeposited: string;
    /** Rewards the lenders may claim in all (only grows). */
    readonly totalClaimable: string;
    /** Rewards the lenders claimed. */
    readonly totalClaimed: string;
  }[];
}

/** Where the run stands. */
export interface RunSnapshot {
  readonly runId: string;
  readonly runState: RunState;
  readonly epoch: number;
  readonly step: number;
  /** The current round's height; null outside an epoch's rounds. */
  readonly roundHeight: number | null;
  /** The epoch's clients (hex keys) and their health, in the epoch's order. */
  readonly clients: readonly { readonly key: string; readonly state: ClientState }[];
  /** Keys waiting to join, in join order (hex). */
  readonly pending: readonly string[];
  /**
   * Points each wallet earned in the run (hex key → decimal u64), where the backend keeps them
   * (the Solana program: docs/solana-program.md, "Earned points"); absent on the TCP server.
   */
  readonly earned?: Readonly<Record<string, string>>;
  /** Points each wallet was slashed in the run (hex key → decimal u64), beside `earned`. */
  readonly slashed?: Readonly<Record<string, string>>;
  /** The treasury's and pools' balances, where the backend has them (Solana); absent on TCP. */
  readonly funds?: FundsView;
  readonly config: ConfigView;
}

/** States in which the run has a current round. */
const IN_ROUNDS: ReadonlySet<RunState> = new Set(["RoundTrain", "RoundWitness", "Cooldown"]);

/**
 * The snapshot of `state`, with the host's `pending` keys (raw 32-byte keys).
 */
export function snapshotOf(
  state: CoordinatorState,
  pending: readonly Uint8Array[] = [],
): RunSnapshot {
  const { config, model, progress, epochState } = state;
  return {
    runId: state.runId,
    runState: state.runState,
    epoch: progress.epoch,
    step: progress.step,
    roundHeight: IN_ROUNDS.has(state.runState) ? currentRound(state).height : null,
    clients: epochState.clients.map((c) => ({ key: toHex(c.id.signer), state: c.state })),
    pending: pending.map(toHex),
    config: {
      warmupTime: config.warmupTime,
      cooldownTime: config.cooldownTime,
      maxRoundTrainTime: config.maxRoundTrainTime,
      roundWitnessTime: config.roundWitnessTime,
      epochTime: config.epochTime,
      totalSteps: config.totalSteps,
      initMinClients: config.initMinClients,
      minClients: config.minClients,
      maxClients: config.maxClients,
      witnessNodes: config.witnessNodes,
      globalBatchSizeStart: config.globalBatchSizeStart,
      globalBatchSizeEnd: config.globalBatchSizeEnd,
      verificationPercent: config.verificationPercent,
      architecture: model.architecture,
      maxSeqLen: model.maxSeqLen,
    },
  };
}
