/**
 * Checks for end-to-end runs that every client holds the run's parameters: the digest each
 * client logged for each step (`apply` and `model` events: `params_step` → `params_hash`),
 * compared across clients, with the stretches a client knew it had left the run (`diverged`
 * until `resynced`) set apart.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { SeenEvent } from "../../client/testing/testnet.ts";

/** One client's digests by step, and the steps it spent diverged. */
export interface ClientDigests {
  readonly byStep: Map<number, string>;
  /** `[from, to)` stretches between a `diverged` and the `resynced` that followed (to = ∞). */
  readonly diverged: [number, number][];
}

/** The digests of every client (by label) in `events`, in arrival order. */
export function clientDigests(events: readonly SeenEvent[]): Map<string, ClientDigests> {
  const out = new Map<string, ClientDigests>();
  const of = (label: string) => {
    let d = out.get(label);
    if (d === undefined) out.set(label, d = { byStep: new Map(), diverged: [] });
    return d;
  };
  for (const { label, kind, event } of events) {
    if (kind !== "client") continue;
    const name = event.event;
    if ((name === "apply" || name === "model") && typeof event.params_hash === "string") {
      const step = Number(event.params_step);
      const { byStep } = of(label);
      // A load rewinds the client to `step`: what it held past it belongs to a lost attempt
      // (a coordinator that restarted from a saved epoch trains those steps again).
      if (name === "model") { for (const s of byStep.keys()) if (s > step) byStep.delete(s); }
      byStep.set(step, event.params_hash);
    } else if (name === "diverged") {
      of(label).diverged.push([Number(event.step), Infinity]);
    } else if (name === "resynced") {
      const open = of(label).diverged.at(-1);
      if (open !== undefined && open[1] === Infinity) open[1] = Number(event.step);
    }
  }
  return out;
}

/** A step at which clients that did not know they had diverged hold different parameters. */
export interface Disagreement {
  readonly step: number;
  /** Digest → labels holding it. */
  readonly digests: Map<string, string[]>;
}

/**
 * Every step at which two clients that had not logged a divergence covering it logged
 * different digests; and how many (step, client) digests were compared.
 */
export function disagreements(
  digests: Map<string, ClientDigests>,
): { disagreements: Disagreement[]; compared: number; steps: number } {
  const byStep = new Map<number, Map<string, string[]>>();
  let compared = 0;
  for (const [label, d] of digests) {
    for (const [step, hash] of d.byStep) {
      if (d.diverged.some(([from, to]) => step >= from && step < to)) continue;
      let holders = byStep.get(step);
      if (holders === undefined) byStep.set(step, holders = new Map());
      holders.set(hash, [...(holders.get(hash) ?? []), label]);
      compared++;
    }
  }
  const out: Disagreement[] = [];
  for (const [step, holders] of [...byStep].sort(([a], [b]) => a - b)) {
    if (holders.size > 1) out.push({ step, digests: holders });
  }
  return { disagreements: out, compared, steps: byStep.size };
}

/** `disagreements` as readable lines, for an assertion message. */
export function describeDisagreements(found: readonly Disagreement[]): string {
  return found.map((d) =>
    `step ${d.step}: ` +
    [...d.digests].map(([h, labels]) => `${h.slice(0, 12)} (${labels.join(", ")})`).join(" vs ")
  ).join("\n");
}

/**
 * Asserts that clients which had not logged a divergence hold the same parameters at every step,
 * over at least `atLeastSteps` steps.
 */
export function assertOneModel(events: readonly SeenEvent[], atLeastSteps = 1): void {
  const found = disagreements(clientDigests(events));
  assert.deepEqual(
    found.disagreements,
    [],
    `clients hold different parameters:\n${describeDisagreements(found.disagreements)}`,
  );
  assert.ok(found.steps >= atLeastSteps, `only ${found.steps} steps compared`);
}

/** Every `error` the clients logged, as `label what: error` lines. */
export function clientErrors(events: readonly SeenEvent[]): string[] {
  return events.filter((e) => e.kind === "client" && e.event.event === "error")
    .map((e) => `${e.label} ${e.event.what}: ${e.event.error}`);
}
