/**
 * `deno task bench-verify-loss`: what one attacker in four clients does to the model, with and
 * without verification, and what verification costs a run (docs/benchmarks.md, "Verification").
 *
 * Each scenario is a real testnet of the demo's model and data (config/demo: the 1.9M-parameter
 * Llama over Brown bytes, a TCP data server) with 4 clients and a global batch of 8, run to
 * `--steps` steps; the held-out loss of the final checkpoint is measured on validation text no
 * client trained on, as the demo does. Scenarios:
 *
 * - `clean`: 4 honest clients, `verification_percent = 0`;
 * - `attacked`: 3 honest clients and one that folds its negated gradient (`negate`), no
 *   verification;
 * - `defended-KIND`: 3 honest clients and one attacker of each kind that trains or publishes
 *   (client/attacks.ts), `verification_percent = 10` (one of four results sampled a round);
 * - `attacked-2of4`, `defended-2of4`: two negating clients of four, without and with verification
 *   (10%): under 1-bit sign aggregation one attacker in four only shifts votes, two tie every vote
 *   they oppose;
 * - `verified-10`, `verified-25`: 4 honest clients at 10% and 25%, for verification's share of the
 *   round time against `clean`.
 *
 * When `clean` ran too, the bench exits 1 unless every defended run ejected its attackers and no
 * honest client, every run defended against one attacker ended within {@link LOSS_MARGIN} of the
 * clean run's held-out loss, and `defended-2of4` undid {@link COLLUSION_UNDONE} of the damage
 * `attacked-2of4` did (when both ran).
 *
 * @module
 */
import { parseOrExit } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";
import {
  describeEjections,
  type Outcome,
  runScenario,
  type Scenario,
} from "../../client/testnet/mod.ts";
import { RESULT_ATTACKS } from "../../client/mod.ts";

const SCENARIOS: readonly Scenario[] = [
  { name: "clean", percent: 0, attacks: [] },
  { name: "attacked", percent: 0, attacks: ["negate"] },
  ...RESULT_ATTACKS.map((attack) => ({
    name: `defended-${attack}`,
    percent: 10,
    attacks: [attack],
  })),
  // Two colluders in four tie every sign vote they oppose: what one attacker cannot do alone.
  { name: "attacked-2of4", percent: 0, attacks: ["negate", "negate"] },
  { name: "defended-2of4", percent: 10, attacks: ["negate", "negate"] },
  { name: "verified-10", percent: 10, attacks: [] },
  { name: "verified-25", percent: 25, attacks: [] },
];

/**
 * How far above the clean run's held-out loss a run defended against one attacker may end. Four
 * clean runs of 40 steps ended within 0.026 of each other (which results make each round's apply
 * varies with timing), and a defended run trains on with three members of four once the attacker
 * is gone, which costs some sign votes a step: 0.06 is a little over twice the clean runs' spread.
 */
const LOSS_MARGIN = 0.06;

/**
 * The share of the undefended damage a run defended against two colluders of four must undo.
 * Their results apply until each is sampled (about 4 rounds each at one sample a round), and two
 * of four tie every sign vote they oppose, so they do harm before they are caught: the margin
 * for one attacker does not hold, but most of the harm must be gone.
 */
const COLLUSION_UNDONE = 0.8;

/** The flags of `deno task bench-verify-loss`. */
const BENCH_VERIFY_LOSS_SPEC = {
  usage: "deno task bench-verify-loss [--steps N] [--only SCENARIO[,SCENARIO...]]",
  summary: "One attacker in four clients on the demo's model, with and without verification, " +
    "and verification's share of the round time; the held-out loss of each run's final " +
    `checkpoint. Scenarios: ${SCENARIOS.map((s) => s.name).join(", ")}.`,
  flags: {
    steps: { type: "string", value: "N", description: "steps each run trains", default: "40" },
    only: {
      type: "string",
      value: "SCENARIOS",
      description: "run only these scenarios (comma-separated)",
    },
  },
} as const;

async function main(): Promise<number> {
  const { steps, chosen } = parseOrExit(BENCH_VERIFY_LOSS_SPEC, ({ values }) => {
    const steps = Number(values.steps);
    if (!Number.isInteger(steps) || steps < 5) {
      throw new UsageError(`--steps must be an integer of at least 5, found "${values.steps}"`);
    }
    if (values.only === undefined) return { steps, chosen: SCENARIOS };
    const names = values.only.split(",");
    const unknown = names.filter((n) => !SCENARIOS.some((s) => s.name === n));
    if (unknown.length > 0 || names.length === 0) {
      throw new UsageError(
        `--only must name scenarios (${SCENARIOS.map((s) => s.name).join(", ")}), found ` +
          `"${unknown.join(",") || values.only}"`,
      );
    }
    return { steps, chosen: SCENARIOS.filter((s) => names.includes(s.name)) };
  });
  const loadBefore = Deno.loadavg();
  const outcomes: Outcome[] = [];
  for (const s of chosen) {
    const o = await runScenario(s, steps);
    outcomes.push(o);
    console.log(JSON.stringify(o));
    console.log(
      `${o.name.padEnd(12)} held-out loss ${o.heldOutLoss.toFixed(4)} after ${o.steps} steps; ` +
        `round ${o.roundSeconds.toFixed(2)} s; ${o.verifications} verifications (replay ` +
        `${o.replayMs.toFixed(0)} ms); attacker results applied ${o.attackerApplied}; ` +
        `ejections: ${describeEjections(o.ejections)} (${o.seconds.toFixed(0)} s)`,
    );
  }
  console.log(
    `load ${loadBefore[0].toFixed(2)} -> ${Deno.loadavg()[0].toFixed(2)}, ` +
      new Date().toISOString(),
  );
  const failures = judge(outcomes);
  for (const f of failures) console.log(`FAIL ${f}`);
  return failures.length === 0 ? 0 : 1;
}

/**
 * Against the clean run (when it ran): each defended run's loss margin and ejections, and
 * verification's share of the round time. Prints the comparisons; returns what failed.
 */
function judge(outcomes: readonly Outcome[]): string[] {
  const failures: string[] = [];
  for (const o of outcomes) {
    const honest = o.ejections.filter((e) => e.attack === null);
    if (honest.length > 0) {
      failures.push(`${o.name}: honest clients ejected (${describeEjections(honest)})`);
    }
  }
  const clean = outcomes.find((o) => o.name === "clean");
  if (clean === undefined) return failures;
  for (const o of outcomes) {
    const gap = o.heldOutLoss - clean.heldOutLoss;
    if (o.name.startsWith("verified-")) {
      const share = o.roundSeconds / clean.roundSeconds - 1;
      console.log(`${o.name}: round time ${(100 * share).toFixed(1)}% over clean`);
      continue;
    }
    if (o.name === "clean") continue;
    console.log(`${o.name}: held-out loss ${gap >= 0 ? "+" : ""}${gap.toFixed(4)} against clean`);
    if (!o.name.startsWith("defended-")) continue;
    const caught = o.ejections.filter((e) => e.attack !== null).length;
    if (caught < o.attackers) {
      failures.push(`${o.name}: ${o.attackers - caught} of ${o.attackers} attackers never ejected`);
    }
    if (o.attackers === 1 && gap > LOSS_MARGIN) {
      failures.push(
        `${o.name}: held-out loss ${gap.toFixed(4)} above clean (margin ${LOSS_MARGIN})`,
      );
    }
    const undefended = outcomes.find((u) => u.name === o.name.replace("defended-", "attacked-"));
    if (o.attackers > 1 && undefended !== undefined) {
      const undone = 1 - gap / (undefended.heldOutLoss - clean.heldOutLoss);
      console.log(`${o.name}: ${(100 * undone).toFixed(1)}% of the undefended damage undone`);
      if (!(undone >= COLLUSION_UNDONE)) {
        failures.push(
          `${o.name}: undid ${(100 * undone).toFixed(1)}% of ${undefended.name}'s damage ` +
            `(at least ${100 * COLLUSION_UNDONE}% required)`,
        );
      }
    }
  }
  return failures;
}

if (import.meta.main) Deno.exit(await main());
