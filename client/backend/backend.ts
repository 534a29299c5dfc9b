/**
 * What a training client needs from a coordinator, whoever runs it: the TCP server
 * (client/backend/tcp.ts), an in-process coordinator for tests (client/backend/memory.ts),
 * the Solana program later. Every implementation passes client/testing/backend_compliance.ts. The client follows the run by reading
 * {@linkcode CoordinatorBackend.states} and acts through the `send*` calls; it never sees
 * sockets, frames or transactions.
 *
 * Contract shared by every backend:
 * - A `send*` call resolves once the coordinator **accepted** it (the TCP server answered
 *   `Ack`, the transaction confirmed). It rejects with a `CoordinatorError` (from
 *   coordinator/core/errors.ts, same codes on every backend) when the coordinator refused it,
 *   with {@linkcode BackendError} when the backend could not get an answer, and with the
 *   signal's reason when aborted.
 * - `states()` yields the newest state the backend knows, then each newer one as it
 *   arrives. A slow consumer skips intermediate states (latest wins, like a watch
 *   channel): clients act on what the state says, never on counting transitions.
 * - Backends carry no training logic.
 *
 * @module
 */

import type {
  Checkpoint,
  CoordinatorState,
  HealthCheck,
  NodeIdentity,
  VerificationReport,
  Witness,
  WitnessMetadata,
  WitnessProof,
} from "../../coordinator/core/mod.ts";
import type { ClientTelemetry } from "../../coordinator/server/mod.ts";
export type { ClientTelemetry, StepPhase } from "../../coordinator/server/mod.ts";
export {
  type EvalResult,
  MAX_EVAL_NAME_BYTES,
  MAX_METADATA_EVALS,
  MAX_PROMPT_RESULTS,
  type WitnessMetadata,
} from "../../coordinator/core/mod.ts";

/** Why a backend failed to get an answer from the coordinator. */
export type BackendErrorKind =
  /** `close()` was called (or is in progress). */
  | "Closed"
  /** The connection dropped before the coordinator answered this call. */
  | "Disconnected"
  /** The coordinator refused this client outright (wrong run id, bad identity). */
  | "Refused"
  /** The coordinator sent something this backend cannot decode. */
  | "Protocol";

/**
 * The backend could not complete a call. Not a rejection by the coordinator's rules
 * (that is a `CoordinatorError`), but a transport-level failure the client may retry
 * (`Disconnected`) or must give up on (`Closed`, `Refused`, `Protocol`).
 */
export class BackendError extends Error {
  /** What went wrong; callers branch on it. */
  readonly kind: BackendErrorKind;

  constructor(kind: BackendErrorKind, message: string, options?: ErrorOptions) {
    super(`${kind}: ${message}`, options);
    this.name = "BackendError";
    this.kind = kind;
  }
}

/** Options every waiting call takes. */
export interface CallOptions {
  /** Abandons the wait (the message may still reach the coordinator). */
  signal?: AbortSignal;
}

/**
 * A client's view of one coordinator run. Implementations: `TcpBackend`
 * (client/backend/tcp.ts), `MemoryBackend` (client/backend/memory.ts). Dispose with `close()`.
 */
export interface CoordinatorBackend {
  /** Who this client is, as the coordinator sees it (its clients list uses this key). */
  readonly identity: NodeIdentity;

  /**
   * The run's state: the newest known one first (as soon as there is one), then every
   * newer state, latest-wins. Ends when the backend closes or `signal` aborts. Several
   * iterators may run at once; each sees every state that arrives while it waits.
   */
  states(options?: CallOptions): AsyncIterable<CoordinatorState>;

  /** The newest state received, or null before the first. */
  latest(): CoordinatorState | null;

  /**
   * Bytes read from the coordinator so far (frames and their headers), where the backend can
   * count them (`TcpBackend`); undefined elsewhere.
   */
  readonly receivedBytes?: number;

  /**
   * Whether a state ends on time by itself: the coordinator ends each state at its deadline and
   * pushes the change (`TcpBackend`), so a state read long past its end was read late. On Solana
   * a state lasts until some client's tick lands, so an old state may still be the newest.
   */
  readonly statesEndOnTime?: boolean;

  /**
   * Asks to join the run: the client waits in the coordinator's pending list (join order)
   * until the next epoch starts, and stays pending for later epochs. Resolves once
   * registered. A backend that reconnects re-joins by itself after a successful join.
   * When the state shows this client Dropped or Withdrawn, the coordinator has forgotten
   * the join: call `join()` again to take part in a later epoch.
   */
  join(options?: CallOptions): Promise<void>;

  /**
   * Reports a round as an elected witness (RoundTrain / RoundWitness), with the digest of the
   * parameters the round trains on (all zero when the client has none for this round).
   */
  sendWitness(
    witness: Witness,
    metadata: WitnessMetadata,
    paramsDigest: Uint8Array,
    options?: CallOptions,
  ): Promise<void>;

  /**
   * Reports the model is loaded (Warmup), with its digest; `witness.proof` is
   * `{position: index, index}`.
   */
  sendWarmupWitness(
    witness: Witness,
    paramsDigest: Uint8Array,
    options?: CallOptions,
  ): Promise<void>;

  /**
   * As a witness of the epoch's last round, reports (Cooldown) the digest of the parameters
   * after the epoch's last apply: what the next epoch starts from.
   */
  sendCooldownWitness(
    proof: WitnessProof,
    paramsDigest: Uint8Array,
    options?: CallOptions,
  ): Promise<void>;

  /** Reports clients the previous round's witnesses did not see (every one unhealthy). */
  sendHealthCheck(checks: readonly HealthCheck[], options?: CallOptions): Promise<void>;

  /**
   * A seated verifier's verdict on a sampled result (coordinator/core/verification.ts
   * `verificationReport`): resolves once the coordinator recorded it.
   */
  sendVerificationReport(report: VerificationReport, options?: CallOptions): Promise<void>;

  /**
   * Leaves the current epoch (the client must `join()` again for a later one): a client
   * whose parameters left the run's steps aside instead of holding rounds up. Backends with
   * no such request (Solana) resolve at once; the health checks remove the client there.
   */
  withdraw(options?: CallOptions): Promise<void>;

  /**
   * Tells the coordinator this client's telemetry after a step (traffic totals, tokens/s, the
   * step's time breakdown): informational, for its dashboard. Resolves once sent (the TCP
   * server never answers it; a backend with nowhere to send it, Solana, resolves at once);
   * rejects only as any call does when the backend cannot send.
   */
  sendTelemetry(telemetry: ClientTelemetry, options?: CallOptions): Promise<void>;

  /** Reports the model was uploaded to `repo` (a Hub or Gcs checkpoint). */
  sendCheckpoint(repo: Checkpoint, options?: CallOptions): Promise<void>;

  /**
   * Leaves: closes the connection (the coordinator may withdraw this client), ends every
   * `states()` iterator and rejects pending calls with BackendError("Closed"). Idempotent.
   */
  close(): Promise<void>;
}
