/**
 * Committee and witness selection for one round (Psyche's
 * shared/coordinator/src/committee_selection.rs).
 *
 * Every client of a round gets two positions in two independent swap-or-not
 * permutations of `[0, clientsLen)`:
 * - committee position (seed `sha256(sha256(u64le(randomSeed)) || "committee")`):
 *   `< tieBreakers` → TieBreaker, `< tieBreakers + verifiers` → Verifier, else Trainer;
 * - witness position (salt `"witness"`): a witness iff `position < witnessNodes`
 *   (or `< MAX_WITNESSES` when `witnessNodes` is 0).
 *
 * A proof is `(index, position, claim)`; anyone holding the round's seed and sizes can
 * recompute it. Each permutation is computed once for all clients, on first use (one
 * `shuffledPositions` call), so every lookup and verification afterwards is O(1), and a
 * caller that only checks witnesses never pays for the committee permutation.
 *
 * @module
 */

import { sha256, u64le } from "./hash.ts";
import { shuffledPositions } from "./swap_or_not.ts";
import {
  type Committee,
  type CommitteeProof,
  type CoordinatorState,
  MAX_WITNESSES,
  NUM_STORED_ROUNDS,
  type WitnessProof,
} from "./types.ts";

/** Salt of the committee permutation. */
export const COMMITTEE_SALT = "committee";
/** Salt of the witness permutation. */
export const WITNESS_SALT = "witness";

/** Options of {@linkcode CommitteeSelection.create}. */
export interface CommitteeSelectionOptions {
  /** Clients placed in the TieBreaker committee (positions `[0, tieBreakerNodes)`). */
  tieBreakerNodes: number;
  /** Percent (0..100) of the non-tie-breakers placed in the Verifier committee, rounded down. */
  verificationPercent: number;
  /** Witnesses per round; 0 means MAX_WITNESSES. */
  witnessNodes: number;
  /** Clients in the round (`round.clientsLen`). */
  totalNodes: number;
  /** The round's random seed (u64). */
  randomSeed: bigint;
}

const U64_LIMIT = 1n << 64n;
const encoder = new TextEncoder();

/**
 * The seed of one salted permutation of a round: `sha256(sha256(u64le(randomSeed)) || salt)`.
 * Committee, witness and checkpointer (checkpointer_selection.ts) positions each shuffle with
 * their own salt, so knowing one's seat in one says nothing of the others.
 *
 * @example
 * ```ts
 * import { saltedSeed, WITNESS_SALT } from "./committee_selection.ts";
 * if (saltedSeed(7n, WITNESS_SALT).length !== 32) throw new Error("a sha256 digest");
 * ```
 */
export function saltedSeed(randomSeed: bigint, salt: string): Uint8Array {
  return sha256(sha256(u64le(randomSeed)), encoder.encode(salt));
}

function checkCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative integer, found ${String(value)}`);
  }
}

/**
 * The committee and witness assignment of one round, with proof construction and
 * verification. Immutable once created.
 *
 * @example
 * ```ts
 * import { CommitteeSelection } from "./committee_selection.ts";
 * const cs = CommitteeSelection.create({
 *   tieBreakerNodes: 10, verificationPercent: 30, witnessNodes: 20, totalNodes: 100, randomSeed: 12345n,
 * });
 * if (cs.verifierNodes !== 27) throw new Error("(100 - 10) * 30% = 27");
 * if (!cs.verifyCommittee(cs.committeeProof(5))) throw new Error("own proofs verify");
 * ```
 */
export class CommitteeSelection {
  /** Size of the TieBreaker committee. */
  readonly tieBreakerNodes: number;
  /** Size of the Verifier committee: `floor((total - tieBreakers) * verificationPercent / 100)`. */
  readonly verifierNodes: number;
  /** Size of the Trainer committee: the rest. */
  readonly trainerNodes: number;
  /** Clients in the round. */
  readonly totalNodes: number;
  /** Configured witness count (0 = MAX_WITNESSES). */
  readonly witnessNodes: number;
  /** `sha256(u64le(randomSeed))`, the base of both salted permutation seeds. */
  readonly seed: Uint8Array;
  #committeePositionsCache: Uint32Array | undefined;
  #witnessPositionsCache: Uint32Array | undefined;

  private constructor(
    opts: CommitteeSelectionOptions,
    verifierNodes: number,
  ) {
    this.tieBreakerNodes = opts.tieBreakerNodes;
    this.verifierNodes = verifierNodes;
    this.trainerNodes = opts.totalNodes - opts.tieBreakerNodes - verifierNodes;
    this.totalNodes = opts.totalNodes;
    this.witnessNodes = opts.witnessNodes;
    this.seed = sha256(u64le(opts.randomSeed));
  }

  get #committeePositions(): Uint32Array {
    this.#committeePositionsCache ??= this.#positions(COMMITTEE_SALT);
    return this.#committeePositionsCache;
  }

  get #witnessPositions(): Uint32Array {
    this.#witnessPositionsCache ??= this.#positions(WITNESS_SALT);
    return this.#witnessPositionsCache;
  }

  #positions(salt: string): Uint32Array {
    return shuffledPositions(this.totalNodes, sha256(this.seed, encoder.encode(salt)));
  }

  /**
   * Builds the selection for a round. Throws RangeError (Psyche's
   * InvalidCommitteeSelection) when a count is negative or not an integer,
   * `verificationPercent > 100`, `totalNodes < tieBreakerNodes`,
   * `witnessNodes != 0 && totalNodes < witnessNodes`, the total exceeds 2^32 - 1, or the
   * seed is not a u64.
   */
  static create(opts: CommitteeSelectionOptions): CommitteeSelection {
    const { tieBreakerNodes, verificationPercent, witnessNodes, totalNodes, randomSeed } = opts;
    checkCount("tieBreakerNodes", tieBreakerNodes);
    checkCount("verificationPercent", verificationPercent);
    checkCount("witnessNodes", witnessNodes);
    checkCount("totalNodes", totalNodes);
    if (totalNodes > 0xffff_ffff) {
      throw new RangeError(`totalNodes must be at most ${0xffff_ffff}, found ${totalNodes}`);
    }
    if (typeof randomSeed !== "bigint" || randomSeed < 0n || randomSeed >= U64_LIMIT) {
      throw new RangeError(`randomSeed must be a u64, found ${String(randomSeed)}`);
    }
    if (verificationPercent > 100) {
      throw new RangeError(`verificationPercent must be at most 100, found ${verificationPercent}`);
    }
    if (totalNodes < tieBreakerNodes) {
      throw new RangeError(
        `totalNodes (${totalNodes}) must be at least tieBreakerNodes (${tieBreakerNodes})`,
      );
    }
    if (witnessNodes !== 0 && totalNodes < witnessNodes) {
      throw new RangeError(
        `totalNodes (${totalNodes}) must be at least witnessNodes (${witnessNodes})`,
      );
    }
    const verifierNodes = Math.floor((totalNodes - tieBreakerNodes) * verificationPercent / 100);
    return new CommitteeSelection(opts, verifierNodes);
  }

  /**
   * The selection of the current (`0`) or previous (`-1`) round of `state`'s ring buffer:
   * that round's `clientsLen`, `randomSeed` and `tieBreakerTasks`, and the config's
   * `witnessNodes`; no Verifier committee (the run's `verificationPercent` samples results
   * instead: verification.ts). Whether that round is live (e.g. there is no
   * previous round in an epoch's first round) is the caller's business. Throws RangeError
   * if `roundsHead` or the ring buffer is malformed, or the round's values are invalid.
   */
  static fromState(state: CoordinatorState, roundOffset: 0 | -1): CommitteeSelection {
    const { rounds, roundsHead } = state.epochState;
    if (!Number.isInteger(roundsHead) || roundsHead < 0 || roundsHead >= NUM_STORED_ROUNDS) {
      throw new RangeError(
        `epochState.roundsHead must be in [0, ${NUM_STORED_ROUNDS}), found ${roundsHead}`,
      );
    }
    const slot = (roundsHead + NUM_STORED_ROUNDS + roundOffset) % NUM_STORED_ROUNDS;
    const round = rounds[slot];
    if (round === undefined) {
      throw new RangeError(
        `epochState.rounds[${slot}] does not exist (rounds has ${rounds.length} entries)`,
      );
    }
    return CommitteeSelection.create({
      tieBreakerNodes: round.tieBreakerTasks,
      verificationPercent: 0,
      witnessNodes: state.config.witnessNodes,
      totalNodes: round.clientsLen,
      randomSeed: round.randomSeed,
    });
  }

  /** The committee a committee position belongs to. */
  committeeFromPosition(position: number): Committee {
    if (position < this.tieBreakerNodes) return "TieBreaker";
    if (position < this.tieBreakerNodes + this.verifierNodes) return "Verifier";
    return "Trainer";
  }

  /** Whether a witness position is a witness seat. */
  isWitnessPosition(position: number): boolean {
    return position < (this.witnessNodes === 0 ? MAX_WITNESSES : this.witnessNodes);
  }

  #checkIndex(index: number): void {
    if (!Number.isInteger(index) || index < 0 || index >= this.totalNodes) {
      throw new RangeError(
        `Client index must be an integer in [0, ${this.totalNodes}), found ${String(index)}`,
      );
    }
  }

  /** Committee position of client `index` (RangeError outside `[0, totalNodes)`). */
  committeePosition(index: number): number {
    this.#checkIndex(index);
    return this.#committeePositions[index];
  }

  /** Witness position of client `index` (RangeError outside `[0, totalNodes)`). */
  witnessPosition(index: number): number {
    this.#checkIndex(index);
    return this.#witnessPositions[index];
  }

  /** The committee of client `index`. */
  committee(index: number): Committee {
    return this.committeeFromPosition(this.committeePosition(index));
  }

  /** Whether client `index` is a witness this round. */
  isWitness(index: number): boolean {
    return this.isWitnessPosition(this.witnessPosition(index));
  }

  /** The committee proof of client `index`. */
  committeeProof(index: number): CommitteeProof {
    const position = this.committeePosition(index);
    return { committee: this.committeeFromPosition(position), position, index };
  }

  /** The witness proof of client `index` (with `witness` false for non-witnesses). */
  witnessProof(index: number): WitnessProof {
    const position = this.witnessPosition(index);
    return { position, index, witness: this.isWitnessPosition(position) };
  }

  /**
   * True iff `proof` is exactly what {@linkcode committeeProof} gives for `proof.index`.
   * Out-of-range or malformed indices are false, never an exception: proofs come from peers.
   */
  verifyCommittee(proof: CommitteeProof): boolean {
    if (!this.#validIndex(proof.index)) return false;
    const position = this.#committeePositions[proof.index];
    return proof.position === position && proof.committee === this.committeeFromPosition(position);
  }

  /** True iff `proof` is exactly what {@linkcode witnessProof} gives for `proof.index`. */
  verifyWitness(proof: WitnessProof): boolean {
    if (!this.#validIndex(proof.index)) return false;
    const position = this.#witnessPositions[proof.index];
    return proof.position === position && proof.witness === this.isWitnessPosition(position);
  }

  #validIndex(index: unknown): index is number {
    return typeof index === "number" && Number.isInteger(index) && index >= 0 &&
      index < this.totalNodes;
  }

  /** Client indices whose committee is Trainer, ascending. */
  trainerIndices(): number[] {
    const out: number[] = [];
    const firstTrainer = this.tieBreakerNodes + this.verifierNodes;
    const positions = this.#committeePositions;
    for (let i = 0; i < this.totalNodes; i++) {
      if (positions[i] >= firstTrainer) out.push(i);
    }
    return out;
  }

  /** Client indices that are witnesses this round, ascending. */
  witnessIndices(): number[] {
    const out: number[] = [];
    const positions = this.#witnessPositions;
    for (let i = 0; i < this.totalNodes; i++) {
      if (this.isWitnessPosition(positions[i])) out.push(i);
    }
    return out;
  }
}
