/**
 * The model-content rules the coordinator program enforces on `update`
 * (program/model_rules.c), stated as coordinator/config/validate.ts's own rules: the program's
 * reference model asks {@linkcode validateRunConfigDraft} and maps each model issue to the
 * program error of its part, so every differential test also holds the C rules to the
 * TypeScript config checks.
 *
 * Two kinds of issue are left out, because the program checks them elsewhere or not at all:
 * - `max_seq_len`, `cold_start_warmup_steps`, an Ephemeral checkpoint and a Dummy optimizer
 *   (the program's older `InvalidModel` checks, run before these);
 * - the "http:// or https:// URL" rules, which use the WHATWG URL parser (`URL.canParse`);
 *   the program does not carry a URL parser (docs/solana-program.md).
 *
 * @module
 */

import type { ProgramErrorCode } from "../abi/mod.ts";
import { validateRunConfigDraft } from "../../config/mod.ts";
import type { CoordinatorConfig, LlmModel } from "../../core/mod.ts";
import type { ConfigIssue } from "../../../common/mod.ts";

/** A model-content rule the program rejects, with the error it returns. */
export interface ModelRuleViolation {
  /** The program error of the model part that breaks the rule. */
  name: ProgramErrorCode;
  /** coordinator/config/validate.ts's issue. */
  issue: ConfigIssue;
}

const PART_ERRORS: readonly [string, ProgramErrorCode][] = [
  ["model.LLM.data_location.", "InvalidDataLocation"],
  ["model.LLM.checkpoint.", "InvalidModelCheckpoint"],
  ["model.LLM.lr_schedule.", "InvalidLrSchedule"],
  ["model.LLM.optimizer.", "InvalidOptimizer"],
];

/** Whether the program mirrors `issue` (it does not parse URLs). */
function mirrored(issue: ConfigIssue): boolean {
  return !issue.message.startsWith("expected an http:// or https:// URL");
}

/**
 * The first model-content rule `model` breaks, in the program's order (data location,
 * checkpoint, LR schedule, optimizer), or undefined. With `config`, also the rule that
 * needs it (a Cosine schedule lasting `config.totalSteps`), which the program checks
 * after the others (on a paused update and when a run leaves Uninitialized or Paused).
 *
 * @example
 * ```ts
 * import { modelRuleViolation } from "./model_rules.ts";
 * import { testModel } from "../../../tests/support/coordinator_fixtures.ts";
 * const bad = testModel({ checkpoint: { kind: "Hub", repo: { repoId: " ", revision: null } } });
 * if (modelRuleViolation(bad)?.name !== "InvalidModelCheckpoint") throw new Error();
 * ```
 */
export function modelRuleViolation(
  model: LlmModel,
  config?: Pick<CoordinatorConfig, "totalSteps">,
): ModelRuleViolation | undefined {
  const issues = validateRunConfigDraft({ config: {}, model, progress: {} }).filter(mirrored);
  for (const [prefix, name] of PART_ERRORS) {
    const issue = issues.find((i) => i.path.startsWith(prefix));
    if (issue) return { name, issue };
  }
  if (config === undefined) return undefined;
  const crossIssue = validateRunConfigDraft({
    config: { totalSteps: config.totalSteps },
    model: { lrSchedule: model.lrSchedule },
    progress: {},
  }).find((i) => i.path.startsWith("model.LLM.lr_schedule."));
  return crossIssue ? { name: "InvalidLrSchedule", issue: crossIssue } : undefined;
}
