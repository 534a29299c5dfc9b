/**
 * A trainer's chain of DisTrO states (docs/protocol.md, "Verification"): the digests its results
 * name as input and output, and the states it serves to verifiers, kept until no task can ask for
 * them. The chain starts at the zero state (a fresh optimizer, a cold start) and each trained
 * step moves it on; serving is the payload service's (content-addressed by the same sha256).
 *
 * No GPU and no sockets: the caller reads the state after each step and passes its bytes.
 *
 * @module
 */
import { toHex } from "../../common/mod.ts";
import { stateDigest, type StateShape, zeroStateDigest } from "../../optimizer/mod.ts";

/** Where served states go: the payload service's provide and forget, by content hash. */
export interface StateServing {
  provide(bytes: Uint8Array): string;
  forget(hashes: Iterable<string>): number;
}

/** One trainer's state chain and the states it serves. */
export class StateChain {
  readonly #serving: StateServing;
  readonly #zero: Uint8Array;
  #current: Uint8Array;
  /** Each own result's input and output digests (hex), by round height. */
  readonly #results = new Map<number, { input: string; output: string }>();
  /** Hex digests of the states served now. */
  readonly #served = new Set<string>();

  constructor(shape: StateShape, serving: StateServing) {
    this.#serving = serving;
    this.#zero = zeroStateDigest(shape);
    this.#current = this.#zero;
  }

  /** The digest of the state the next step starts from. */
  get current(): Uint8Array {
    return this.#current;
  }

  /** The digest of the zero state, where chains start. */
  get zero(): Uint8Array {
    return this.#zero;
  }

  /** The optimizer was zeroed (cold start, a new model): the chain starts again. */
  reset(): void {
    this.#current = this.#zero;
  }

  /**
   * The step of round `height` left the optimizer in the state `bytes` (optimizer/state_wire.ts):
   * serves it, moves the chain on, and returns the digests the round's result names.
   */
  advance(bytes: Uint8Array, height: number): { input: Uint8Array; output: Uint8Array } {
    const input = this.#current;
    const output = stateDigest(bytes);
    const hex = this.#serving.provide(bytes);
    if (hex !== toHex(output)) {
      throw new Error(`the payload service keyed state ${toHex(output)} as ${hex}`);
    }
    this.#served.add(hex);
    this.#results.set(height, { input: toHex(input), output: hex });
    this.#current = output;
    return { input, output };
  }

  /**
   * Stops serving every state no result of `heights` names (their inputs and outputs stay), except
   * the current one (the next result's input). Returns how many were dropped.
   */
  retain(heights: Iterable<number>): number {
    const wanted = new Set(heights);
    const keep = new Set([toHex(this.#current)]);
    for (const [h, r] of this.#results) {
      if (wanted.has(h)) {
        keep.add(r.input);
        keep.add(r.output);
      } else {
        this.#results.delete(h);
      }
    }
    const drop = [...this.#served].filter((hex) => !keep.has(hex));
    for (const hex of drop) this.#served.delete(hex);
    return drop.length === 0 ? 0 : this.#serving.forget(drop);
  }

  /** Hex digests of the states served now (tests, diagnostics). */
  get served(): string[] {
    return [...this.#served].sort();
  }
}
