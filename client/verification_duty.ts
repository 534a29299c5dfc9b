/**
 * A client's duties in a run that verifies results (docs/protocol.md, "Verification"), for the
 * driver (client.ts) to call at the right moments:
 * - as a trainer: serve the state chain its results name ({@link VerificationDuty.seal}, after each
 *   step: the state read back, served, and its digest with the previous one on the result);
 * - as a member: keep θ as each round trains on it ({@link VerificationDuty.keep});
 * - as a seated verifier: fetch, replay, judge and report ({@link VerificationDuty.verify});
 * - on every coordinator state: let go of kept θ and served states no task can ask for.
 *
 * It also commits the attacks a test ordered (client/attacks.ts) where they belong: a lie about
 * the published coefficients at `seal`, a lie in a report at `verify`.
 *
 * @module
 */
import { type Attack, randomSigns, republish } from "./attacks.ts";
import type { CoordinatorBackend } from "./backend/backend.ts";
import type { Exchange } from "./exchange.ts";
import type { ClientLogger } from "./log.ts";
import { ResultReplayer } from "./replayer.ts";
import { StateChain, verifyResult } from "./results/mod.ts";
import { currentHeight, memberIndexOf } from "./round_view.ts";
import { keptParamHeights } from "./state/verify.ts";
import type { NetworkTrainer } from "./trainer.ts";
import { hashFromBytes } from "../net/p2p/mod.ts";
import { toHex } from "../common/mod.ts";
import { abortableSleep } from "../net/mod.ts";
import { CoordinatorError, type CoordinatorState, roundClients } from "../coordinator/core/mod.ts";
import type { DataProvider } from "../data/mod.ts";
import {
  type DistroResult,
  encodeState,
  type SparseParam,
  type StateShape,
} from "../optimizer/mod.ts";

/** What a {@link VerificationDuty} works with. */
export interface VerificationDutyOptions {
  readonly trainer: NetworkTrainer;
  readonly exchange: Exchange;
  readonly backend: CoordinatorBackend;
  readonly logger: ClientLogger;
  readonly data: DataProvider;
  /** Runs GPU work on the client's serial GPU queue. */
  readonly onGpu: <T>(work: () => Promise<T>) => Promise<T>;
  /** This client's signer key (who it is in the coordinator's lists). */
  readonly signer: Uint8Array;
  /** The attack a test ordered, or null. */
  readonly attack: Attack | null;
  /** The newest coordinator state the client holds (a report refused as late is checked on it). */
  readonly latestState: () => CoordinatorState | null;
  readonly signal?: AbortSignal;
}

/** Rounds back a `replay-old` attacker takes the result it publishes again from (the last). */
const REPLAY_AGE = 1;
/** How long a `free-ride` attacker waits for a result of the round to copy, ms. */
const FREE_RIDE_WAIT_MS = 20_000;
/** Milliseconds between attempts at a verification that failed while its seat is still owed. */
const VERIFY_RETRY_MS = 1_000;

/** One client's verification duties; dispose it with the trainer it was made for. */
export class VerificationDuty implements Disposable {
  readonly #o: VerificationDutyOptions;
  readonly #shape: StateShape;
  readonly #replayer: ResultReplayer;
  readonly chain: StateChain;
  /** The coefficients this client published, by round height (for `replay-old`). */
  readonly #published = new Map<number, readonly SparseParam[]>();
  #bit = 0x9e3779b9;

  constructor(options: VerificationDutyOptions) {
    this.#o = options;
    const { trainer, exchange } = options;
    this.#shape = { size: trainer.layout.totalSize, layouts: trainer.distro.layouts };
    this.#replayer = new ResultReplayer(trainer);
    this.chain = new StateChain(this.#shape, {
      provide: (bytes) => exchange.payloads.provide(bytes),
      forget: (hashes) => exchange.payloads.forget(hashes),
    });
  }

  /** Keeps θ as round `height` trains on it (queue it on the GPU before the round's step). */
  keep(height: number): void {
    this.#replayer.keep(height);
  }

  /**
   * After this client trained round `height`: reads its state, serves it, and returns `result`
   * with the chain's digests (and with an ordered publishing attack committed).
   */
  async seal(result: DistroResult, height: number): Promise<DistroResult> {
    const state = await this.#o.trainer.distro.readState({ signal: this.#o.signal });
    const states = this.chain.advance(encodeState(state, this.#shape), height);
    let sealed: DistroResult = { ...result, states };
    switch (this.#o.attack) {
      case "random-signs":
        sealed = { ...sealed, params: randomSigns(sealed.params, () => this.#randomBit()) };
        break;
      case "replay-old": {
        const old = this.#published.get(height - REPLAY_AGE);
        if (old !== undefined) sealed = republish(sealed, old);
        break;
      }
      case "free-ride": {
        const copied = await this.#copyOfAnother(height);
        if (copied !== null) {
          sealed = republish({
            ...sealed,
            states: { input: this.chain.zero, output: this.chain.zero },
          }, copied);
        }
        break;
      }
    }
    this.#published.set(height, result.params);
    this.#published.delete(height - REPLAY_AGE - 1);
    return sealed;
  }

  /** Another member's published coefficients of round `height`, once one arrives (or null). */
  async #copyOfAnother(height: number): Promise<readonly SparseParam[] | null> {
    const deadline = performance.now() + FREE_RIDE_WAIT_MS;
    while (performance.now() < deadline && !this.#o.signal?.aborted) {
      const other = this.#o.exchange.results.resultsOf(height)[0];
      if (other !== undefined) return other.params;
      await new Promise((r) => setTimeout(r, 100));
    }
    return null;
  }

  #randomBit(): boolean {
    this.#bit = (Math.imul(this.#bit, 1103515245) + 12345) >>> 0;
    return (this.#bit & 0x10000) !== 0;
  }

  /**
   * Verifies the result the task names and reports the verdict to the coordinator, logging it.
   * An `idle-verifier` attacker does nothing; a `false-accuse` one reports a failure unchecked.
   */
  async verify(
    state: CoordinatorState,
    task: { height: number; trainer: number; stage: string },
  ): Promise<void> {
    const { backend, logger, exchange, attack, signal } = this.#o;
    if (attack === "idle-verifier") return;
    const trainerKey = roundClients(state, task.height).find((c) => c.epochIndex === task.trainer)
      ?.id.signer;
    const outcome = attack === "false-accuse"
      ? {
        verdict: "Fail" as const,
        evidence: "ResultMismatch" as const,
        detail: 1_000_000,
        trainer: trainerKey === undefined ? `#${task.trainer}` : toHex(trainerKey),
        step: state.epochState.startStep + task.height,
        fetchMs: 0,
        replayMs: 0,
        note: "false-accuse attack: not checked",
      }
      : await this.#withRetries(task, () =>
        verifyResult(
          {
            results: exchange.results,
            shape: this.#shape,
            fetchState: ({ digest, provider, expectedSize, signal }) =>
              exchange.payloads.fetch(hashFromBytes(digest), {
                providers: [provider],
                expectedSize,
                signal,
              }),
            replay: (args) =>
              this.#o.onGpu(() => this.#replayer.replay({ ...args, data: this.#o.data, signal })),
          },
          state,
          task,
          signal,
        ));
    let note = outcome.note;
    try {
      await backend.sendVerificationReport({
        height: task.height,
        trainer: task.trainer,
        verdict: outcome.verdict,
        evidence: outcome.evidence,
        detail: outcome.detail,
      }, { signal });
    } catch (e) {
      // A majority decided the task (or its stage closed) while this verifier was still at work:
      // its report is late, not wrong. Anything else is an error.
      if (!(e instanceof CoordinatorError && e.code === "InvalidVerification")) throw e;
      if (this.#stillOwed(task)) throw e;
      note = `the report came after the task was decided (${e.message})`;
    }
    logger.log("verification", {
      step: outcome.step,
      round: task.height,
      trainer: outcome.trainer,
      stage: task.stage,
      verdict: outcome.verdict,
      evidence: outcome.evidence,
      detail_ppm: outcome.detail,
      fetch_ms: outcome.fetchMs,
      replay_ms: outcome.replayMs,
      note,
    });
  }

  /**
   * Runs `verification` until it gives a verdict, again after a failure (a data server or a peer
   * that did not answer, a GPU error) while the seat still owes its report: silence is ejected as
   * idle, so a verifier gives up only when the task no longer needs it.
   */
  async #withRetries<T>(
    task: { height: number; trainer: number; stage: string },
    verification: () => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1;; attempt++) {
      try {
        return await verification();
      } catch (e) {
        if (this.#o.signal?.aborted || !this.#stillOwed(task)) throw e;
        this.#o.logger.log("verification_retry", {
          round: task.height,
          attempt,
          error: e instanceof Error ? e.message : String(e),
        });
        await abortableSleep(VERIFY_RETRY_MS, this.#o.signal);
      }
    }
  }

  /** Whether the newest state still has the task's stage open with this client's seat empty. */
  #stillOwed(task: { height: number; trainer: number; stage: string }): boolean {
    const state = this.#o.latestState();
    if (state === null) return false;
    const self = memberIndexOf(state, this.#o.signer);
    const open = state.epochState.verificationTasks.find((t) =>
      t.height === task.height && t.trainer === task.trainer && t.stage === task.stage
    );
    return open?.seats.some((s) =>
      s.stage === open.stage && s.verifier === self && s.verdict === null
    ) ?? false;
  }

  /**
   * Lets go of what no task can ask for any more: kept θ outside {@link keptParamHeights}, and
   * served states of own results older than two rounds that no open task names.
   */
  retain(state: CoordinatorState): void {
    const runState = state.runState;
    if (runState !== "RoundTrain" && runState !== "RoundWitness" && runState !== "Cooldown") {
      return;
    }
    const height = currentHeight(state);
    this.#replayer.retain(keptParamHeights(state, height));
    const self = memberIndexOf(state, this.#o.signer);
    const own = new Set([height, height - 1, height - 2]);
    for (const t of state.epochState.verificationTasks) if (t.trainer === self) own.add(t.height);
    this.chain.retain(own);
  }

  [Symbol.dispose](): void {
    this.#replayer[Symbol.dispose]();
    this.chain.retain([]);
  }
}
