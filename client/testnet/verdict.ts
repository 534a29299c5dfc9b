/**
 * Whether a testnet run went as it should, from how it stopped and its summary: the exit status
 * of `deno task testnet` and `deno task demo`, with a line per problem saying why. A run fails
 * when the coordinator exited by itself, every client exited by itself, no client applied a
 * step, a client's parameters left the run's without it saying so (a silent divergence, however
 * it ended), or a client diverged and did not hold the run's parameters again by the end.
 *
 * Pure.
 *
 * @module
 */
import type { RunSummary } from "./summary.ts";
import { stepRanges } from "./agreement.ts";

/** Why a testnet stopped. */
export type StopReason = "signal" | "epochs" | "time" | "coordinator-exited" | "clients-exited";

/**
 * What went wrong in a run that stopped for `reason` with `summary`, one sentence each; empty
 * when nothing did (exit status 0).
 *
 * @example
 * ```ts
 * import { runProblems } from "./verdict.ts";
 * import { SummaryCollector } from "./summary.ts";
 * const problems = runProblems("time", new SummaryCollector().summary());
 * if (problems[0] !== "no client applied a step") throw new Error(problems.join("\n"));
 * ```
 */
export function runProblems(reason: StopReason, summary: RunSummary): string[] {
  const problems: string[] = [];
  if (reason === "coordinator-exited") problems.push("the coordinator exited by itself");
  if (reason === "clients-exited") problems.push("every client exited by itself");
  if (summary.appliedSteps === 0) problems.push("no client applied a step");
  for (const d of summary.agreement.divergences) {
    if (d.silentSteps.length > 0) {
      problems.push(
        `${d.label}'s parameters were not the run's at ${
          d.silentSteps.length === 1 ? "step" : "steps"
        } ${stepRanges(d.silentSteps)} ` +
          `and it never logged diverged (silent divergence)`,
      );
    }
    if (d.recoveredAt === null) {
      const at = d.logged?.step ?? d.steps[0];
      problems.push(`${d.label} diverged at step ${at} and did not resync`);
    }
  }
  return problems;
}
