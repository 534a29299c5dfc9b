/**
 * Where joiners get the model from, epoch by epoch (Psyche's `Checkpoint` in
 * shared/coordinator/src/model.rs).
 *
 * A run starts from a `Hub` (or `Gcs`) checkpoint. After every Cooldown the model lives
 * on the clients, so the checkpoint becomes `P2P` (`P2PGcs`), wrapping the stored repo as a
 * fallback. If a new epoch starts with none of the previous epoch's clients, nobody can
 * serve the model, so it falls back to `Hub` (`Gcs`). Checkpointers that upload the model
 * report the new repo, which replaces the wrapped one.
 *
 * These are pure functions on {@linkcode Checkpoint} values; the state machine applies them.
 *
 * @module
 */

import { CoordinatorError } from "./errors.ts";
import { type Checkpoint, MAX_STRING_BYTES } from "./types.ts";
import type { GcsRepo, HubRepo } from "../../common/mod.ts";

const encoder = new TextEncoder();

/** The checkpoint after a Cooldown: `Hub`/`Dummy` → `P2P`, `Gcs` → `P2PGcs`, others as is. */
export function checkpointAfterCooldown(checkpoint: Checkpoint): Checkpoint {
  switch (checkpoint.kind) {
    case "Hub":
    case "Dummy":
      return { kind: "P2P", repo: checkpoint.repo };
    case "Gcs":
      return { kind: "P2PGcs", repo: checkpoint.repo };
    case "Ephemeral":
    case "P2P":
    case "P2PGcs":
      return checkpoint;
  }
}

/**
 * The checkpoint of an epoch that starts with none of the previous epoch's clients:
 * `P2P` → `Hub`, `P2PGcs` → `Gcs`, others as is.
 */
export function checkpointWithoutReturningPeers(checkpoint: Checkpoint): Checkpoint {
  switch (checkpoint.kind) {
    case "P2P":
      return { kind: "Hub", repo: checkpoint.repo };
    case "P2PGcs":
      return { kind: "Gcs", repo: checkpoint.repo };
    case "Ephemeral":
    case "Dummy":
    case "Hub":
    case "Gcs":
      return checkpoint;
  }
}

function checkString(what: string, value: unknown, optional: boolean): void {
  if (optional && value === null) return;
  if (typeof value !== "string" || value.length === 0) {
    throw new CoordinatorError("InvalidCheckpoint", `${what} must be a non-empty string`);
  }
  const bytes = encoder.encode(value).length;
  if (bytes > MAX_STRING_BYTES) {
    throw new CoordinatorError(
      "InvalidCheckpoint",
      `${what} is ${bytes} bytes, more than the ${MAX_STRING_BYTES} allowed`,
    );
  }
}

function checkHubRepo(repo: HubRepo): void {
  checkString("repoId", repo?.repoId, false);
  checkString("revision", repo?.revision, true);
}

function checkGcsRepo(repo: GcsRepo): void {
  checkString("bucket", repo?.bucket, false);
  checkString("prefix", repo?.prefix, true);
}

/**
 * The checkpoint after a checkpointer reports an upload. `report` must be a `Hub` or
 * `Gcs` checkpoint with valid strings. Transitions (current + report → new):
 * `P2P + Hub(h) → P2P(h)`, `P2PGcs + Gcs(g) → P2PGcs(g)`, `Hub + Hub(h) → Hub(h)`,
 * `Gcs + Gcs(g) → Gcs(g)`, `P2PGcs + Hub(h) → P2P(h)`, `P2P + Gcs(g) → P2PGcs(g)`, and
 * `Dummy + Hub(h) → Hub(h)`: a run started from its seeded init (Dummy) holds a real model once
 * its first Cooldown's upload is in (Psyche ignores that report). Any other pair (an Ephemeral
 * run, a Hub run sent a Gcs repo, a Dummy run sent a Gcs repo) throws `InvalidCheckpoint`
 * instead of being ignored silently as in Psyche.
 */
export function checkpointAfterReport(current: Checkpoint, report: Checkpoint): Checkpoint {
  if (report?.kind === "Hub") {
    checkHubRepo(report.repo);
    const repo = { repoId: report.repo.repoId, revision: report.repo.revision };
    switch (current.kind) {
      case "P2P":
      case "P2PGcs":
        return { kind: "P2P", repo };
      case "Hub":
      case "Dummy":
        return { kind: "Hub", repo };
      default:
        break;
    }
  } else if (report?.kind === "Gcs") {
    checkGcsRepo(report.repo);
    const repo = { bucket: report.repo.bucket, prefix: report.repo.prefix };
    switch (current.kind) {
      case "P2P":
      case "P2PGcs":
        return { kind: "P2PGcs", repo };
      case "Gcs":
        return { kind: "Gcs", repo };
      default:
        break;
    }
  } else {
    throw new CoordinatorError(
      "InvalidCheckpoint",
      `a checkpoint report must be Hub or Gcs, found ${String(report?.kind)}`,
    );
  }
  throw new CoordinatorError(
    "InvalidCheckpoint",
    `a ${current.kind} run does not accept a ${report.kind} checkpoint report`,
  );
}
