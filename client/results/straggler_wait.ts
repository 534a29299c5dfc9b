/**
 * How long a witness waits for a round's last Finished announcements before it reports.
 *
 * Psyche's witness reports once every client of the round announced Finished, so one client on a
 * slow link held every round to `max_round_train_time` (measured in the NAT lab: 11.0 s rounds
 * against 1.2 s). Here a witness still reports at once when everyone finished; once a majority
 * has, it waits for the rest as long again as that majority took (counted from the moment this
 * client saw the round), and at least {@linkcode STRAGGLER_MIN_WAIT_MS}, then reports what it
 * has. A straggler whose result arrives in that time is still in the report: only the result
 * counts, not the Finished. One whose result misses it is, for the run, a trainer that did not
 * train that round (an untrained batch; the next round's witnesses find it unhealthy).
 *
 * With one or two clients the majority is everyone, so nobody is ever left out.
 *
 * Pure.
 *
 * @module
 */

/**
 * The least time a witness waits for stragglers once a majority finished. It covers an honest
 * client's jitter on a busy machine (a scheduling pause, a garbage collection, a gossip hop
 * through a relay), which costs the straggler its round when it runs out.
 */
export const STRAGGLER_MIN_WAIT_MS = 2000;

/**
 * The local time (ms) after which a witness stops waiting for the Finished announcements still
 * missing, or null while fewer than a majority of `peers` announced it. `seenAtMs` is when this
 * client saw the round begin; `finishedAtMs` the arrival times of the Finished announcements of
 * the round's counted peers (any order, at most one each).
 *
 * @example
 * ```ts
 * import { STRAGGLER_MIN_WAIT_MS, stragglerDeadline } from "./straggler_wait.ts";
 * // 3 peers; the second Finished (the majority) came 500 ms into the round.
 * const at = stragglerDeadline(1000, [1400, 1500], 3);
 * if (at !== 1500 + STRAGGLER_MIN_WAIT_MS) throw new Error(`${at}`);
 * if (stragglerDeadline(1000, [1400], 3) !== null) throw new Error("no majority yet");
 * ```
 */
export function stragglerDeadline(
  seenAtMs: number,
  finishedAtMs: readonly number[],
  peers: number,
): number | null {
  if (!Number.isSafeInteger(peers) || peers < 0) {
    throw new RangeError(`peers must be a non-negative integer, found ${peers}`);
  }
  if (finishedAtMs.length > peers) {
    throw new RangeError(`${finishedAtMs.length} Finished announcements from ${peers} peers`);
  }
  const majority = Math.floor(peers / 2) + 1;
  if (finishedAtMs.length < majority) return null;
  const majorityAt = [...finishedAtMs].sort((a, b) => a - b)[majority - 1];
  return majorityAt + Math.max(STRAGGLER_MIN_WAIT_MS, majorityAt - seenAtMs);
}
