/**
 * Who uploads the model at the end of an epoch: the Cooldown's elected checkpointers (Psyche's
 * `CheckpointerSelection`, which upstream elects at Cooldown from the round seed and a third of
 * the clients, at most 16).
 *
 * At Cooldown the clients still listed (`epochState.clients`, which only changes when Cooldown
 * ends) are shuffled with the same swap-or-not permutation that seats witnesses and committees
 * (committee_selection.ts), seeded by the epoch's last round's `randomSeed` under the salt
 * `"checkpointer"`. Client `index` is a checkpointer iff its position is below
 * {@linkcode checkpointerCount}: `max(1, min(floor(clients / 3), MAX_CHECKPOINTERS))`. Anyone
 * holding the state recomputes it; nothing is stored.
 *
 * Pure.
 *
 * @module
 */

import { saltedSeed } from "./committee_selection.ts";
import { computeShuffledIndex, shuffledPositions } from "./swap_or_not.ts";
import { currentRound } from "./machine_queries.ts";
import { type CoordinatorState, MAX_CHECKPOINTERS } from "./types.ts";

/** Salt of the checkpointer permutation. */
export const CHECKPOINTER_SALT = "checkpointer";

/**
 * How many of `clients` clients a Cooldown elects: a third, at least one, at most
 * MAX_CHECKPOINTERS (0 when there are no clients).
 *
 * @example
 * ```ts
 * import { checkpointerCount } from "./checkpointer_selection.ts";
 * if (checkpointerCount(2) !== 1 || checkpointerCount(9) !== 3 || checkpointerCount(100) !== 16) {
 *   throw new Error("max(1, min(floor(n / 3), 16))");
 * }
 * ```
 */
export function checkpointerCount(clients: number): number {
  if (!Number.isSafeInteger(clients) || clients < 0) {
    throw new RangeError(`clients must be a non-negative integer, found ${String(clients)}`);
  }
  if (clients === 0) return 0;
  return Math.max(1, Math.min(Math.floor(clients / 3), MAX_CHECKPOINTERS));
}

/**
 * The checkpointers of one Cooldown: `clients` clients shuffled by `randomSeed`.
 *
 * @example
 * ```ts
 * import { CheckpointerSelection } from "./checkpointer_selection.ts";
 * const sel = CheckpointerSelection.create({ clients: 9, randomSeed: 42n });
 * if (sel.indices().length !== 3) throw new Error("a third of 9");
 * if (!sel.isCheckpointer(sel.indices()[0])) throw new Error("its own indices are elected");
 * ```
 */
export class CheckpointerSelection {
  /** Clients the Cooldown lists. */
  readonly clients: number;
  /** How many of them are checkpointers. */
  readonly count: number;
  readonly #seed: Uint8Array;
  #indices: number[] | null = null;

  private constructor(clients: number, randomSeed: bigint) {
    this.clients = clients;
    this.count = checkpointerCount(clients);
    this.#seed = saltedSeed(randomSeed, CHECKPOINTER_SALT);
  }

  /** Builds the selection (RangeError on a negative client count or a seed that is not a u64). */
  static create(opts: { clients: number; randomSeed: bigint }): CheckpointerSelection {
    const { clients, randomSeed } = opts;
    if (!Number.isSafeInteger(clients) || clients < 0 || clients > 0xffff_ffff) {
      throw new RangeError(`clients must be an integer in [0, 2^32), found ${String(clients)}`);
    }
    if (typeof randomSeed !== "bigint" || randomSeed < 0n || randomSeed >= 1n << 64n) {
      throw new RangeError(`randomSeed must be a u64, found ${String(randomSeed)}`);
    }
    return new CheckpointerSelection(clients, randomSeed);
  }

  /**
   * The selection of `state`'s Cooldown (or any state: its current client list and round), the
   * one the coordinator checks reports against.
   */
  static fromState(state: CoordinatorState): CheckpointerSelection {
    const clients = state.epochState.clients.length;
    const randomSeed = currentRound(state).randomSeed;
    // One Cooldown asks many times (every report, every client's plan): keep the last one.
    const last = lastSelection;
    if (last !== null && last.clients === clients && last.randomSeed === randomSeed) {
      return last.selection;
    }
    const selection = CheckpointerSelection.create({ clients, randomSeed });
    lastSelection = { clients, randomSeed, selection };
    return selection;
  }

  /** Position of client `index` in the permutation (RangeError outside `[0, clients)`). */
  position(index: number): number {
    return computeShuffledIndex(index, this.clients, this.#seed);
  }

  /** Whether client `index` is a checkpointer; false for any index that is not a client. */
  isCheckpointer(index: number): boolean {
    if (!Number.isSafeInteger(index) || index < 0 || index >= this.clients) return false;
    return this.position(index) < this.count;
  }

  /** The checkpointers' client indices, ascending (a fresh array; computed once). */
  indices(): number[] {
    if (this.#indices === null) {
      const positions = shuffledPositions(this.clients, this.#seed);
      const out: number[] = [];
      for (let i = 0; i < this.clients; i++) if (positions[i] < this.count) out.push(i);
      this.#indices = out;
    }
    return [...this.#indices];
  }
}

/** The selection {@linkcode CheckpointerSelection.fromState} made last (selections never change). */
let lastSelection: {
  clients: number;
  randomSeed: bigint;
  selection: CheckpointerSelection;
} | null = null;
