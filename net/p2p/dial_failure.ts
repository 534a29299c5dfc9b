/**
 * What a failed libp2p dial means, in words a person behind a home router can act on. libp2p
 * reports a dial that got no answer as "The operation was aborted" and several failed addresses
 * as one "All multiaddr dials failed": neither names where it dialled nor why it failed
 * (issue 32 found clients behind NAT logging only that).
 *
 * Pure: the caller passes the addresses it knew and the error it caught.
 *
 * @module
 */

/** Why one dial attempt failed, as a short cause. */
function causeOf(error: unknown): string {
  const e = error as { name?: string; code?: string; message?: string } | null;
  const message = String(e?.message ?? error);
  const code = e?.code ?? /\b(E[A-Z]{3,})\b/.exec(message)?.[1];
  if (
    e?.name === "AbortError" || e?.name === "TimeoutError" || /operation was aborted/i.test(message)
  ) {
    return "no answer before the dial gave up (a peer behind NAT or a firewall looks like this)";
  }
  switch (code) {
    case "ECONNREFUSED":
      return "refused: nothing listens there";
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "no route to that address";
    case "ETIMEDOUT":
      return "no answer (a peer behind NAT or a firewall looks like this)";
  }
  if (/no valid addresses/i.test(message)) return "no address to dial";
  return message;
}

/**
 * One line for a failed dial of a peer known at `addresses`: where it dialled and each distinct
 * cause (an `AggregateError` holds one per address).
 *
 * @example
 * ```ts
 * import { describeDialFailure } from "./dial_failure.ts";
 * const line = describeDialFailure(["/ip4/10.78.0.2/tcp/4001"], new Error("The operation was aborted"));
 * if (!line.startsWith("dialled /ip4/10.78.0.2/tcp/4001: no answer")) throw new Error(line);
 * ```
 */
export function describeDialFailure(addresses: readonly string[], error: unknown): string {
  const inner = error instanceof AggregateError && error.errors.length > 0 ? error.errors : [error];
  const causes = [...new Set(inner.map(causeOf))];
  const where = addresses.length === 0 ? "no known address" : `dialled ${addresses.join(", ")}`;
  return `${where}: ${causes.join("; ")}`;
}
