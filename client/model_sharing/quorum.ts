/**
 * Which model manifest a joiner trusts: the one a strict majority of the answering peers serve.
 *
 * Every honest client of an epoch holds bit-identical parameters after Cooldown (they apply
 * the same results to the same bits), and the manifest (per-tensor sha256s, in layout order)
 * is a deterministic function of them, so honest peers serve byte-identical manifests with the
 * same hash. A joiner asks every provider for its manifest and accepts a hash only when more
 * than half of those that answered report it, and at least `minSupporters` do. A lying peer
 * (or a minority of them) cannot get its manifest accepted: it would need more answers than the
 * honest peers, and each peer is one key of the coordinator's client list (no Sybils on a run
 * with an allowlist). Once the manifest is fixed, every tensor is fetched by the hash the
 * manifest lists and verified on arrival, so a liar can only slow the download, not corrupt it.
 *
 * Limits, stated: with a single answering peer its manifest is accepted (the same trust Psyche
 * gives any peer); with an even split (one honest, one liar) nothing is accepted and the joiner
 * fails loudly rather than guess. Peers that do not answer (joiners themselves, or down) do not
 * vote.
 *
 * Pure.
 *
 * @module
 */
import type { ContentHash } from "../../net/p2p/mod.ts";

/** One provider's answer: the hash of the manifest it serves. */
export interface ManifestReport {
  /** The provider (hex public key), for messages and for choosing tensor providers. */
  readonly peer: string;
  /** sha256 of the manifest bytes it served. */
  readonly hash: ContentHash;
}

/** The manifest everyone may trust, and who serves it. */
export interface AgreedManifest {
  readonly hash: ContentHash;
  /** Peers that reported `hash`, in report order. */
  readonly supporters: string[];
  /** Peers that reported another hash. */
  readonly dissenters: string[];
}

/** No manifest has the required support; the message lists the counts. */
export class ManifestDisagreementError extends Error {
  /** Votes per manifest hash. */
  readonly votes: ReadonlyMap<ContentHash, number>;
  /** Builds the error. */
  constructor(message: string, votes: ReadonlyMap<ContentHash, number>) {
    super(message);
    this.name = "ManifestDisagreementError";
    this.votes = votes;
  }
}

/**
 * The manifest hash reported by a strict majority of `reports` (one per peer; a repeated peer
 * counts once, its first report), backed by at least `minSupporters` peers (default 1).
 * Throws {@link ManifestDisagreementError} when there is none.
 *
 * @example
 * ```ts
 * import { agreeOnManifest } from "./quorum.ts";
 * const a = "a".repeat(64), b = "b".repeat(64);
 * const agreed = agreeOnManifest([
 *   { peer: "p1", hash: a }, { peer: "p2", hash: b }, { peer: "p3", hash: a },
 * ]);
 * if (agreed.hash !== a || agreed.supporters.join() !== "p1,p3") throw new Error("wrong");
 * ```
 */
export function agreeOnManifest(
  reports: readonly ManifestReport[],
  options: { minSupporters?: number } = {},
): AgreedManifest {
  const minSupporters = options.minSupporters ?? 1;
  if (!Number.isInteger(minSupporters) || minSupporters < 1) {
    throw new RangeError(`minSupporters must be a positive integer, found ${minSupporters}`);
  }
  const seen = new Set<string>();
  const unique = reports.filter((r) => !seen.has(r.peer) && seen.add(r.peer));
  const votes = new Map<ContentHash, number>();
  for (const r of unique) votes.set(r.hash, (votes.get(r.hash) ?? 0) + 1);
  const describe = () =>
    [...votes].map(([hash, n]) => `${hash.slice(0, 12)}…: ${n}`).join(", ") || "no answers";
  if (unique.length === 0) {
    throw new ManifestDisagreementError("no peer served a model manifest", votes);
  }
  let best: ContentHash = unique[0].hash;
  for (const [hash, n] of votes) if (n > (votes.get(best) ?? 0)) best = hash;
  const count = votes.get(best) ?? 0;
  if (2 * count <= unique.length) {
    throw new ManifestDisagreementError(
      `no model manifest is served by a majority of the ${unique.length} answering peers ` +
        `(${describe()})`,
      votes,
    );
  }
  if (count < minSupporters) {
    throw new ManifestDisagreementError(
      `model manifest ${best.slice(0, 12)}… is served by ${count} peers, ` +
        `at least ${minSupporters} required (${describe()})`,
      votes,
    );
  }
  return {
    hash: best,
    supporters: unique.filter((r) => r.hash === best).map((r) => r.peer),
    dissenters: unique.filter((r) => r.hash !== best).map((r) => r.peer),
  };
}
