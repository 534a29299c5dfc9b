/**
 * One verification, as a seated verifier carries it out (docs/protocol.md, "Verification"): the
 * trainer's published result of the round, its chain, its states fetched from the trainer, the
 * replay of its step, and the verdict (verify_check.ts). The caller sends the verdict to the
 * coordinator; this module decides nothing of its own beyond what to fetch and in which order.
 *
 * The GPU replay is a callback ({@link VerifierParts.replay}) so the client runs it on its serial
 * GPU queue; the state fetch is one too, so tests can serve states from memory.
 *
 * @module
 */
import { judgeChain, type Judgement, judgeReplay, labelCopy } from "./verify_check.ts";
import type { RoundResults } from "./round_results.ts";
import { stepLearningRate, stepOfHeight } from "../round_view.ts";
import { equalBytes, type PublicKeyBytes, toHex } from "../../common/mod.ts";
import { abortableSleep } from "../../net/mod.ts";
import {
  assignedBatch,
  type CoordinatorState,
  roundByHeight,
  roundClients,
} from "../../coordinator/core/mod.ts";
import {
  decodeState,
  type DistroResult,
  type DistroState,
  type SparseParam,
  stateBytes,
  type StateShape,
  zeroStateDigest,
} from "../../optimizer/mod.ts";
import type { BatchId } from "../../common/mod.ts";

/** What a verification needs from the client. */
export interface VerifierParts {
  readonly results: Pick<RoundResults, "resultOf" | "resultsOf" | "recoverResultOf">;
  readonly shape: StateShape;
  /** Fetches the state with `digest` from `provider`, exactly `expectedSize` bytes. */
  fetchState(args: {
    digest: Uint8Array;
    provider: PublicKeyBytes;
    expectedSize: number;
    signal?: AbortSignal;
  }): Promise<Uint8Array>;
  /** Replays the trainer's step (client/replayer.ts `ResultReplayer.replay`, on the GPU queue). */
  replay(args: {
    height: number;
    state: DistroState;
    step: number;
    batch: BatchId;
    lr: number;
    prevLr: number;
  }): Promise<{ own: SparseParam[]; state: DistroState; gradientStep: number }>;
}

/** A verdict with what it took. */
export interface VerificationOutcome extends Judgement {
  /** The trainer's signer key (hex). */
  readonly trainer: string;
  readonly step: number;
  /** Fetching the two states, and replaying the step (0 when not reached). */
  readonly fetchMs: number;
  readonly replayMs: number;
  /** Why the verdict came without a replay, when it did. */
  readonly note: string | null;
}

/** Attempts at fetching a state before the trainer counts as not serving it. */
export const STATE_FETCH_ATTEMPTS = 3;
/** Milliseconds between those attempts. */
export const STATE_FETCH_SPACING_MS = 1000;

/**
 * Verifies trainer `trainer`'s (an epoch index) result of round `height` of `state`'s epoch.
 * Throws only when the task cannot be read from `state` (its round is gone from the ring
 * buffer) or `signal` aborts; every finding is a verdict.
 */
export async function verifyResult(
  parts: VerifierParts,
  state: CoordinatorState,
  task: { readonly height: number; readonly trainer: number },
  signal?: AbortSignal,
): Promise<VerificationOutcome> {
  const { height } = task;
  if (roundByHeight(state, height) === null) {
    throw new Error(`round ${height} is no longer in the coordinator's state`);
  }
  const trainer = roundClients(state, height).find((c) => c.epochIndex === task.trainer);
  const batch = assignedBatch(state, height, task.trainer);
  if (trainer === undefined || batch === null) {
    throw new Error(`client ${task.trainer} trained no batch in round ${height}`);
  }
  const step = stepOfHeight(state, height);
  const base = { trainer: toHex(trainer.id.signer), step, fetchMs: 0, replayMs: 0 };
  const done = (j: Judgement, note: string | null = null): VerificationOutcome => ({
    ...j,
    ...base,
    note,
  });
  const result = await parts.results.resultOf(height, trainer.id.signer) ??
    await parts.results.recoverResultOf(height, trainer.id.signer);
  if (result === undefined) {
    // Nothing of it reached this client, so nothing of it is applied here: nothing to fail.
    return done({ verdict: "Pass", evidence: "None", detail: 0 }, "no result of it was received");
  }
  const others = parts.results.resultsOf(height).filter((r) => r !== result);
  const layouts = parts.shape.layouts;
  const previous = await parts.results.resultOf(height - 1, trainer.id.signer);
  const zero = zeroStateDigest(parts.shape);
  const chain = judgeChain(result, previous?.states?.output ?? null, zero);
  if (chain !== null) return done(labelCopy(chain, result, others, layouts), "chain");
  const states = result.states!;
  const t0 = performance.now();
  const served = await fetchStates(parts, states, trainer.id.p2pIdentity, zero, signal);
  const fetchMs = performance.now() - t0;
  if (typeof served === "string") {
    return {
      ...done(labelCopy(failure(served), result, others, layouts), "states"),
      fetchMs,
    };
  }
  const t1 = performance.now();
  const replayed = await parts.replay({
    height,
    state: served.input,
    step,
    batch,
    lr: stepLearningRate(state, step),
    prevLr: stepLearningRate(state, Math.max(0, step - 1)),
  });
  const judgement = judgeReplay({
    result,
    servedOutput: served.output,
    replayed,
    others,
    layouts,
  });
  return { ...judgement, ...base, fetchMs, replayMs: performance.now() - t1, note: null };
}

function failure(evidence: "StateUnavailable" | "StateInconsistent"): Judgement {
  return { verdict: "Fail", evidence, detail: 0 };
}

/**
 * The input and output states of `states`, from the trainer (the zero state is made here). A
 * state it does not serve after STATE_FETCH_ATTEMPTS attempts is `StateUnavailable`; an input
 * that does not decode `StateInconsistent` (an output that does not decode is judged as such).
 */
async function fetchStates(
  parts: VerifierParts,
  states: NonNullable<DistroResult["states"]>,
  provider: PublicKeyBytes,
  zero: Uint8Array,
  signal?: AbortSignal,
): Promise<
  { input: DistroState; output: DistroState | null } | "StateUnavailable" | "StateInconsistent"
> {
  const expectedSize = stateBytes(parts.shape).withOwn;
  const get = async (digest: Uint8Array): Promise<Uint8Array | null> => {
    for (let attempt = 1; attempt <= STATE_FETCH_ATTEMPTS; attempt++) {
      try {
        return await parts.fetchState({ digest, provider, expectedSize, signal });
      } catch (e) {
        if (signal?.aborted) throw e;
        if (attempt < STATE_FETCH_ATTEMPTS) await abortableSleep(STATE_FETCH_SPACING_MS, signal);
      }
    }
    return null;
  };
  const zeroState = (): DistroState => ({
    kind: "distro",
    delta: new Float32Array(parts.shape.size),
    own: null,
  });
  const decode = (bytes: Uint8Array): DistroState | null => {
    try {
      return decodeState(bytes, parts.shape);
    } catch {
      return null;
    }
  };
  let input: DistroState | null = zeroState();
  if (!equalBytes(states.input, zero)) {
    const bytes = await get(states.input);
    if (bytes === null) return "StateUnavailable";
    input = decode(bytes);
    if (input === null) return "StateInconsistent";
  }
  let output: DistroState | null = zeroState();
  if (!equalBytes(states.output, zero)) {
    const bytes = await get(states.output);
    if (bytes === null) return "StateUnavailable";
    output = decode(bytes);
  }
  return { input, output };
}
