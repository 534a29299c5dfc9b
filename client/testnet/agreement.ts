/**
 * Whether a run's clients held one model: every client's parameter digest at every labelled
 * step (`params_step` → `params_hash` of its `apply` and `model` events) compared with the
 * others' and with the coordinator's record of that step (`DigestRecorded`), and every client's
 * divergences: those it logged (`diverged`, then `resynced`) and those only the comparison shows.
 *
 * The run's digest at a step is the coordinator's record when it made one (a quorum of witnesses
 * agreed), else the digest most clients logged; when two digests tie and nothing was recorded,
 * the step has no run digest and every client there differs: a disagreement nobody can settle is
 * reported, never guessed.
 *
 * A client differs *silently* when a process of it logged a digest other than the run's and that
 * process never logged `diverged` while it held those parameters: it went on as if it held the
 * run's model. A divergence ends when the client holds the run's parameters again: a `resynced`
 * event, or a later digest equal to the run's (a restarted process that loaded the run's model
 * does not know an earlier one diverged, so it logs no `resynced`).
 *
 * Pure.
 *
 * @module
 */

/** What of one client's log matters here, in the order it was logged. */
export type AgreementEntry =
  /** The client's digest of the parameters of `step` (an `apply` or `model` event). */
  | { readonly kind: "digest"; readonly step: number; readonly hash: string }
  | { readonly kind: "diverged"; readonly step: number; readonly reason: string }
  | { readonly kind: "resynced"; readonly step: number }
  /** A new process of this client started (`start`): it knows nothing of the last one. */
  | { readonly kind: "start" };

/** A step at which the clients' digests were not all the run's. */
export interface StepDisagreement {
  readonly step: number;
  /** The run's digest there; null when no digest was recorded and none had a majority. */
  readonly run: string | null;
  /** Where the run's digest came from. */
  readonly runSource: "coordinator" | "majority" | null;
  /** Every client whose digest there was not the run's, with that digest. */
  readonly differing: readonly { readonly label: string; readonly hash: string }[];
}

/** A time a client did not hold the run's parameters. */
export interface Divergence {
  readonly label: string;
  /** Steps at which its digest was not the run's, ascending. */
  readonly steps: readonly number[];
  /** Of those, the steps no `diverged` event of the same process owned up to, ascending. */
  readonly silentSteps: readonly number[];
  /** The first `diverged` event of the divergence, when the client logged one. */
  readonly logged: { readonly step: number; readonly reason: string } | null;
  /**
   * The step from which it held the run's parameters again (its `resynced` event's, or that of
   * its first later digest equal to the run's); null when it never did.
   */
  readonly recoveredAt: number | null;
}

/** The comparison of every client's digests. */
export interface Agreement {
  /** Clients that logged at least one digest. */
  readonly clients: number;
  /** Digests logged, all clients together. */
  readonly digests: number;
  /**
   * Steps with at least two digests to compare (two clients, a client and a record, or two
   * processes of one client).
   */
  readonly stepsCompared: number;
  /** Of those, steps the coordinator recorded a digest for. */
  readonly stepsRecorded: number;
  /** Steps where some client's digest was not the run's, ascending. */
  readonly disagreements: readonly StepDisagreement[];
  /** Every divergence, by client label, then in the order they began. */
  readonly divergences: readonly Divergence[];
}

/**
 * Compares the digests in `logs` (each client's entries, by label, in logged order) with each
 * other and with the coordinator's `records` (digest by step, hex).
 *
 * @example
 * ```ts
 * import { compareDigests } from "./agreement.ts";
 * const digest = (step: number, hash: string) => ({ kind: "digest", step, hash }) as const;
 * const a = compareDigests(
 *   new Map([
 *     ["client-1", [digest(3, "aa"), digest(4, "bb")]],
 *     ["client-2", [digest(3, "aa"), digest(4, "cc")]],
 *   ]),
 *   new Map([[4, "bb"]]),
 * );
 * if (a.disagreements[0].step !== 4 || a.divergences[0].silentSteps[0] !== 4) throw new Error();
 * ```
 */
export function compareDigests(
  logs: ReadonlyMap<string, readonly AgreementEntry[]>,
  records: ReadonlyMap<number, string>,
): Agreement {
  // Step -> digest -> the clients that logged it.
  const votes = new Map<number, Map<string, Set<string>>>();
  let digests = 0;
  let clients = 0;
  for (const [label, entries] of logs) {
    let logged = false;
    for (const entry of entries) {
      if (entry.kind !== "digest") continue;
      logged = true;
      digests++;
      const byHash = votes.get(entry.step) ?? new Map<string, Set<string>>();
      votes.set(entry.step, byHash);
      const labels = byHash.get(entry.hash) ?? new Set<string>();
      byHash.set(entry.hash, labels);
      labels.add(label);
    }
    if (logged) clients++;
  }

  const runDigest = new Map<number, string | null>();
  const disagreements: StepDisagreement[] = [];
  let stepsCompared = 0;
  let stepsRecorded = 0;
  for (const step of [...votes.keys()].sort((a, b) => a - b)) {
    const byHash = votes.get(step)!;
    const record = records.get(step) ?? null;
    let logged = 0;
    for (const labels of byHash.values()) logged += labels.size;
    if (logged + (record === null ? 0 : 1) < 2) {
      runDigest.set(step, byHash.keys().next().value!);
      continue;
    }
    stepsCompared++;
    if (record !== null) stepsRecorded++;
    const run = record ?? majority(byHash);
    runDigest.set(step, run);
    const differing = [...byHash].filter(([hash]) => hash !== run)
      .flatMap(([hash, labels]) => [...labels].sort().map((label) => ({ label, hash })));
    if (differing.length > 0) {
      const runSource = record !== null ? "coordinator" : run === null ? null : "majority";
      disagreements.push({ step, run, runSource, differing });
    }
  }

  const divergences: Divergence[] = [];
  for (const label of [...logs.keys()].sort()) {
    divergences.push(...divergencesOf(label, logs.get(label)!, runDigest));
  }
  return { clients, digests, stepsCompared, stepsRecorded, disagreements, divergences };
}

/** The digest more clients logged than any other, or null on a tie. */
function majority(byHash: ReadonlyMap<string, ReadonlySet<string>>): string | null {
  let best: string | null = null;
  let bestCount = 0;
  let tie = false;
  for (const [hash, labels] of byHash) {
    if (labels.size > bestCount) {
      best = hash;
      bestCount = labels.size;
      tie = false;
    } else if (labels.size === bestCount) {
      tie = true;
    }
  }
  return tie ? null : best;
}

/** One client's divergences, walking its log in order. */
function divergencesOf(
  label: string,
  entries: readonly AgreementEntry[],
  runDigest: ReadonlyMap<number, string | null>,
): Divergence[] {
  const out: Divergence[] = [];
  let open: { steps: number[]; silent: number[]; logged: Divergence["logged"] } | null = null;
  // Differing steps of the current process not yet owned up to by a `diverged` event.
  let unowned: number[] = [];
  let ownedUp = false;
  const close = (recoveredAt: number | null) => {
    if (open === null) return;
    open.silent.push(...unowned);
    out.push({
      label,
      steps: sortedUnique(open.steps),
      silentSteps: sortedUnique(open.silent),
      logged: open.logged,
      recoveredAt,
    });
    open = null;
    unowned = [];
    ownedUp = false;
  };
  for (const entry of entries) {
    switch (entry.kind) {
      case "start":
        if (open !== null) open.silent.push(...unowned);
        unowned = [];
        ownedUp = false;
        break;
      case "diverged":
        open ??= { steps: [], silent: [], logged: null };
        open.logged ??= { step: entry.step, reason: entry.reason };
        unowned = [];
        ownedUp = true;
        break;
      case "resynced":
        close(entry.step);
        break;
      case "digest": {
        if (runDigest.get(entry.step) === entry.hash) {
          close(entry.step);
          break;
        }
        open ??= { steps: [], silent: [], logged: null };
        open.steps.push(entry.step);
        if (!ownedUp) unowned.push(entry.step);
        break;
      }
      default: {
        const never: never = entry;
        throw new TypeError(`Unknown agreement entry ${JSON.stringify(never)}`);
      }
    }
  }
  close(null);
  return out;
}

function sortedUnique(steps: readonly number[]): number[] {
  return [...new Set(steps)].sort((a, b) => a - b);
}

/**
 * Steps as compact ranges: `[1, 2, 3, 7, 9, 10]` → `"1-3, 7, 9-10"`.
 *
 * @example
 * ```ts
 * import { stepRanges } from "./agreement.ts";
 * if (stepRanges([3, 1, 2, 7]) !== "1-3, 7") throw new Error();
 * ```
 */
export function stepRanges(steps: readonly number[]): string {
  const sorted = sortedUnique(steps);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(", ");
}
