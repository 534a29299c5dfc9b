/**
 * Saying, once, that this client is too slow for the run. A result that reaches the witnesses
 * after the round closed is not applied: its batch is counted untrained, and the client trained
 * for nothing. One such round is bad luck; several in a row mean the client (its link, or its
 * GPU) cannot keep the run's pace, and the person running it should hear so in one line rather
 * than read it from the apply lines. The run itself never waits for it: the round closes on
 * time either way. Pure: no I/O.
 *
 * @module
 */

/** Consecutive missed rounds after which the client is told it is too slow. */
export const MISSED_ROUNDS_TO_WARN = 3;

/** Counts consecutive rounds whose result this client trained but the run did not apply. */
export class MissedRounds {
  #inARow = 0;
  #warned = false;

  /**
   * Notes one applied step that this client trained: `missed` when its own batch was among
   * the untrained ones. Returns the count to warn about when it just reached the threshold
   * (once per streak), else null. A round it made clears the streak.
   */
  note(missed: boolean): number | null {
    if (!missed) {
      this.#inARow = 0;
      this.#warned = false;
      return null;
    }
    this.#inARow++;
    if (this.#warned || this.#inARow < MISSED_ROUNDS_TO_WARN) return null;
    this.#warned = true;
    return this.#inARow;
  }
}
