/**
 * What this node has measured of each provider it downloaded from, and the order in which it
 * asks providers for content. Pure: the payload service reports what it saw (round trips,
 * transfers, failed attempts, whether the connection was relayed) and asks for a ranking.
 *
 * The ranking, most important first:
 *
 * 1. Providers whose last attempts failed (timed out, unreachable, broke the protocol) go after
 *    those that did not, fewest consecutive failures first. One success clears the count, and
 *    content-specific failures ("not found", over budget) are not held against a provider.
 * 2. Direct before relayed: a relayed connection crosses a third machine's uplink and its caps.
 * 3. The shortest expected transfer: round trip + bytes / measured throughput. A provider not
 *    measured yet is expected to be as good as the median of those that were, so one slow
 *    measurement does not send everyone to untried peers, nor keep them from being tried.
 *
 * Ties keep the caller's order, so a ranking with nothing measured is the caller's order.
 *
 * @module
 */

/** Transfers smaller than this say more about latency than throughput: not sampled. */
export const MIN_RATE_SAMPLE_BYTES = 32 * 1024;
/** Weight of the newest throughput sample in the moving average. */
const RATE_SMOOTHING = 0.3;

/** One provider's figures, as {@link ProviderScores.snapshot} reports them. */
export interface ProviderFigures {
  /** Shortest request-to-answer time seen, ms. */
  readonly roundTripMs?: number;
  /** Smoothed throughput of its transfers, bytes per ms (= kB/s). */
  readonly bytesPerMs?: number;
  /** Whether the last connection used to reach it was relayed. */
  readonly relayed?: boolean;
  /** Attempts that failed since its last success. */
  readonly failures: number;
}

interface Figures {
  roundTripMs?: number;
  bytesPerMs?: number;
  relayed?: boolean;
  failures: number;
}

/** Per-provider measurements and the ranking they give. Keys are peer ids (strings). */
export class ProviderScores {
  readonly #figures = new Map<string, Figures>();

  /** Keeps the shortest request-to-answer time seen from `peer`. */
  noteRoundTrip(peer: string, ms: number): void {
    if (!(ms >= 0)) return;
    const f = this.#of(peer);
    if (f.roundTripMs === undefined || ms < f.roundTripMs) f.roundTripMs = ms;
  }

  /**
   * A transfer of `bytes` from `peer` took `ms` from its first to its last byte: one
   * throughput sample (ignored when too small to measure), and a success.
   */
  noteTransfer(peer: string, bytes: number, ms: number): void {
    const f = this.#of(peer);
    f.failures = 0;
    if (bytes < MIN_RATE_SAMPLE_BYTES || !(ms > 0)) return;
    const rate = bytes / ms;
    f.bytesPerMs = f.bytesPerMs === undefined
      ? rate
      : RATE_SMOOTHING * rate + (1 - RATE_SMOOTHING) * f.bytesPerMs;
  }

  /** An attempt at `peer` failed for a reason that says something about the peer. */
  noteFailure(peer: string): void {
    this.#of(peer).failures++;
  }

  /** How `peer` was reached last: over a relay or directly. */
  noteRoute(peer: string, relayed: boolean): void {
    this.#of(peer).relayed = relayed;
  }

  /** The shortest round trip seen from `peer`, ms; undefined before its first answer. */
  roundTripMs(peer: string): number | undefined {
    return this.#figures.get(peer)?.roundTripMs;
  }

  /** What is known of `peer`. */
  figures(peer: string): ProviderFigures {
    return { ...(this.#figures.get(peer) ?? { failures: 0 }) };
  }

  /**
   * `peers` best first for fetching `bytes` (by the rules in the module's comment). Stable:
   * peers that compare equal keep their order.
   */
  rank(peers: readonly string[], bytes: number): string[] {
    const medianOf = (pick: (f: Figures) => number | undefined) =>
      median(peers.map((p) => this.#figures.get(p)).map((f) => f && pick(f)));
    const typicalRtt = medianOf((f) => f.roundTripMs) ?? 0;
    const typicalRate = medianOf((f) => f.bytesPerMs);
    const keyed = peers.map((peer, index) => {
      const f = this.#figures.get(peer);
      const rtt = f?.roundTripMs ?? typicalRtt;
      const rate = f?.bytesPerMs ?? typicalRate;
      return {
        peer,
        index,
        failures: f?.failures ?? 0,
        relayed: f?.relayed === true ? 1 : 0,
        expectedMs: rate === undefined ? rtt : rtt + bytes / rate,
      };
    });
    keyed.sort((a, b) =>
      a.failures - b.failures || a.relayed - b.relayed || a.expectedMs - b.expectedMs ||
      a.index - b.index
    );
    return keyed.map((k) => k.peer);
  }

  /**
   * Relative upload speeds of `peers` for sharing out a large download: each peer's measured
   * throughput, the median of the measured ones for the rest, 1 each when none is measured.
   */
  weights(peers: readonly string[]): number[] {
    const rates = peers.map((p) => this.#figures.get(p)?.bytesPerMs);
    const typical = median(rates) ?? 1;
    return rates.map((r) => r ?? typical);
  }

  /** Every provider's figures, by peer id. */
  snapshot(): Map<string, ProviderFigures> {
    return new Map([...this.#figures].map(([peer, f]) => [peer, { ...f }]));
  }

  #of(peer: string): Figures {
    let f = this.#figures.get(peer);
    if (f === undefined) {
      f = { failures: 0 };
      this.#figures.set(peer, f);
    }
    return f;
  }
}

/** The median of the defined values, or undefined when there are none. */
function median(values: readonly (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined).sort((a, b) => a - b);
  if (known.length === 0) return undefined;
  const mid = known.length >> 1;
  return known.length % 2 === 1 ? known[mid] : (known[mid - 1] + known[mid]) / 2;
}
