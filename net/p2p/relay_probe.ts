/**
 * Whether a relay we hang on is still there.
 *
 * A relay whose machine or link dies sends no reset: our connection to it stays open, with every
 * relayed connection inside it, until libp2p's connection monitor gives up on a ping (30 s apart,
 * and a 30-90 s wait for the answer, so that busy peers are not cut off: node.ts). In the NAT lab
 * that was a minute in which the clients behind NAT reached nobody, and health checks dropped
 * two of them. So the node probes its relays' connections alone, often: a stream is opened every
 * {@link RELAY_PROBE_INTERVAL_MS}, and a connection that does not answer in time is aborted.
 * libp2p then drops the reservation there and the relayed connections through it, and reserves
 * on another relay (a public client's).
 *
 * "In time" is learnt from the relay's own answers, as TCP sets its retransmission timeout (RFC
 * 6298): the smoothed answer time plus four times its mean deviation, kept between
 * {@link RELAY_PROBE_MIN_TIMEOUT_MS} and {@link RELAY_PROBE_MAX_TIMEOUT_MS}. A relay answering in
 * milliseconds is given up after 3 s of silence; one on a busy machine, whose answers wander,
 * gets up to 10 s. Pure but for {@link probeConnection}.
 *
 * @module
 */
import type { Connection } from "@libp2p/interface";

/** How often each relay connection is probed. */
export const RELAY_PROBE_INTERVAL_MS = 2_000;
/** The shortest wait for a probe's answer: far above any round trip a relay's machine gives. */
export const RELAY_PROBE_MIN_TIMEOUT_MS = 3_000;
/** The longest wait, and the wait before a relay's first answer is known. */
export const RELAY_PROBE_MAX_TIMEOUT_MS = 10_000;

/** The protocol a probe asks for: libp2p's ping, which the connection monitor uses too. */
const PROBE_PROTOCOL = "/ipfs/ping/1.0.0";

/** How often to probe and the bounds of the wait for an answer (tests shorten them). */
export interface RelayProbeTimes {
  readonly intervalMs: number;
  readonly minTimeoutMs: number;
  readonly maxTimeoutMs: number;
}

/** The defaults above. */
export const RELAY_PROBE_TIMES: RelayProbeTimes = {
  intervalMs: RELAY_PROBE_INTERVAL_MS,
  minTimeoutMs: RELAY_PROBE_MIN_TIMEOUT_MS,
  maxTimeoutMs: RELAY_PROBE_MAX_TIMEOUT_MS,
};

/**
 * The wait for one relay's next answer, from the answer times seen so far (RFC 6298, section 2:
 * gains 1/8 and 1/4, K = 4), clamped to `[minMs, maxMs]`; `maxMs` until the first answer.
 *
 * @example
 * ```ts
 * import { AnswerTimeout } from "./relay_probe.ts";
 * const wait = new AnswerTimeout(3_000, 10_000);
 * console.assert(wait.ms() === 10_000);
 * for (let i = 0; i < 20; i++) wait.observe(5);
 * console.assert(wait.ms() === 3_000);
 * ```
 */
export class AnswerTimeout {
  #smoothed: number | undefined;
  #deviation = 0;

  constructor(readonly minMs: number, readonly maxMs: number) {
    if (!(minMs > 0) || !(maxMs >= minMs)) {
      throw new RangeError(`need 0 < minMs <= maxMs, found ${minMs} and ${maxMs}`);
    }
  }

  /** Takes in one answer's time, in ms. */
  observe(ms: number): void {
    if (this.#smoothed === undefined) {
      this.#smoothed = ms;
      this.#deviation = ms / 2;
      return;
    }
    this.#deviation = 0.75 * this.#deviation + 0.25 * Math.abs(this.#smoothed - ms);
    this.#smoothed = 0.875 * this.#smoothed + 0.125 * ms;
  }

  /** How long the next answer may take before the relay counts as gone. */
  ms(): number {
    if (this.#smoothed === undefined) return this.maxMs;
    const wait = this.#smoothed + 4 * this.#deviation;
    return Math.round(Math.min(this.maxMs, Math.max(this.minMs, wait)));
  }
}

/**
 * Asks `connection`'s peer for a stream and resolves how long it took to answer, in ms, or
 * undefined when it did not within `timeoutMs`. Opening one is a full multistream-select
 * exchange, so either answer proves the peer alive: the stream (closed again at once) or
 * "protocol not supported". Only silence, or a connection already failing, is undefined.
 */
export async function probeConnection(
  connection: Connection,
  timeoutMs: number,
): Promise<number | undefined> {
  const started = performance.now();
  try {
    const stream = await connection.newStream(PROBE_PROTOCOL, {
      signal: AbortSignal.timeout(timeoutMs),
      runOnLimitedConnection: true,
    });
    stream.abort(new Error("probe answered"));
  } catch (e) {
    if ((e as Error).name !== "UnsupportedProtocolError") return undefined;
  }
  return performance.now() - started;
}
