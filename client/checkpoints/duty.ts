/**
 * What happens to a Cooldown checkpoint once it is written (docs/checkpoints.md, "Checkpoints to
 * the Hub"): an elected checkpointer of a client with `--hub-repo` uploads the folder
 * (hub_upload.ts), then reports the commit's oid to the coordinator as `Checkpoint::Hub` when
 * client/state/hub_report.ts says so; with `--delete-old-steps`, folders beyond `--keep-steps`
 * are deleted (retention.ts) once the new one is in place and uploaded.
 *
 * Nothing here ever stalls training: uploads run beside the GPU queue, every failure is logged
 * (`hub_upload_failed`, `hub_report_skipped`) and dropped, and the next Cooldown starts afresh.
 *
 * @module
 */
import type { ClientLogger } from "../log.ts";
import type { CoordinatorBackend } from "../backend/backend.ts";
import { hubReportDecision, type UploadedCheckpoint } from "../state/hub_report.ts";
import { HUB_URL, type HubTarget, uploadCheckpoint } from "./hub_upload.ts";
import { deleteOldSteps } from "./retention.ts";
import type { CoordinatorState } from "../../coordinator/core/mod.ts";

/** `--delete-old-steps` and `--keep-steps`. */
export interface RetentionArgs {
  readonly deleteOldSteps: boolean;
  readonly keepSteps: number;
}

/** What a {@link CheckpointDuty} is built from. */
export interface CheckpointDutyOptions {
  /** `--checkpoint-dir`: where the step folders are. */
  readonly checkpointDir: string;
  /** `--hub-repo` with its endpoint and token; null: no uploads. */
  readonly hub: HubTarget | null;
  readonly retention: RetentionArgs;
  readonly backend: Pick<CoordinatorBackend, "sendCheckpoint">;
  readonly logger: ClientLogger;
  /** Aborts uploads and reports (the client is leaving). */
  readonly signal?: AbortSignal;
  /** Milliseconds, monotonic (default `performance.now`). */
  readonly clock?: () => number;
  /** The upload (default {@link uploadCheckpoint}); tests may slow it down. */
  readonly upload?: typeof uploadCheckpoint;
  /** The wait before an upload's first retry (default: hub_upload.ts's); tests shorten it. */
  readonly firstRetryDelayMs?: number;
}

/** A checkpoint folder just written. */
export interface WrittenCheckpoint {
  readonly runId: string;
  readonly epoch: number;
  readonly step: number;
  readonly dir: string;
  /** The digest (hex) of the parameters written: what the report must match. */
  readonly digest: string;
  /** The Cooldown's elected checkpointers (empty: not known, no Hub upload). */
  readonly checkpointers: readonly number[];
  /** Whether this client is one of them. */
  readonly upload: boolean;
}

interface PendingReport extends UploadedCheckpoint {
  readonly repoId: string;
  readonly revision: string;
}

/** The checkpoints of one client, after they are written. */
export class CheckpointDuty {
  readonly #o: CheckpointDutyOptions;
  /** Steps whose folders are being uploaded: never deleted meanwhile. */
  readonly #uploading = new Set<number>();
  /** The newest step written: never deleted. */
  #newest: number | null = null;
  #pending: PendingReport[] = [];
  #latest: CoordinatorState | null = null;
  readonly #tasks = new Set<Promise<void>>();
  #pruning: Promise<void> = Promise.resolve();

  constructor(options: CheckpointDutyOptions) {
    this.#o = options;
  }

  /** Whether written checkpoints may be uploaded (a Hub target is set). */
  get uploads(): boolean {
    return this.#o.hub !== null;
  }

  /**
   * A checkpoint folder is in place: upload it when this client is an elected checkpointer, then
   * delete old ones. Returns at once; the work runs beside training ({@link settle} waits).
   */
  written(checkpoint: WrittenCheckpoint): void {
    const { logger } = this.#o;
    this.#newest = Math.max(this.#newest ?? checkpoint.step, checkpoint.step);
    // A checkpoint of a missed Cooldown has no election: nobody would take its report.
    if (this.#o.hub !== null && checkpoint.checkpointers.length > 0) {
      logger.log("checkpointer", {
        epoch: checkpoint.epoch,
        step: checkpoint.step,
        elected: checkpoint.upload,
        checkpointers: [...checkpoint.checkpointers],
      });
    }
    const hub = this.#o.hub;
    if (hub === null || !checkpoint.upload) {
      this.#track(this.#prune(checkpoint.runId));
      return;
    }
    this.#uploading.add(checkpoint.step);
    this.#track(
      this.#uploadThenReport(checkpoint, hub).finally(() => {
        this.#uploading.delete(checkpoint.step);
        return this.#prune(checkpoint.runId);
      }),
    );
  }

  /** A new coordinator state: sends, or gives up on, the reports waiting for one. */
  noteState(state: CoordinatorState): void {
    this.#latest = state;
    this.#decide();
  }

  /** Waits for every upload, report and deletion in flight. */
  async settle(): Promise<void> {
    while (this.#tasks.size > 0) await Promise.allSettled([...this.#tasks]);
  }

  #track(task: Promise<void>): void {
    this.#tasks.add(task);
    task.finally(() => this.#tasks.delete(task));
  }

  #now(): number {
    return (this.#o.clock ?? (() => performance.now()))();
  }

  async #uploadThenReport(checkpoint: WrittenCheckpoint, hub: HubTarget): Promise<void> {
    const { logger } = this.#o;
    const { step } = checkpoint;
    const hubUrl = hub.hubUrl ?? HUB_URL;
    const start = this.#now();
    const upload = this.#o.upload ?? uploadCheckpoint;
    try {
      const done = await upload(checkpoint.dir, hub, {
        title: `step ${step}`,
        description: `run ${checkpoint.runId}, epoch ${checkpoint.epoch}: the parameters of ` +
          `step ${step} (digest ${checkpoint.digest})`,
        signal: this.#o.signal,
        firstRetryDelayMs: this.#o.firstRetryDelayMs,
        onPhase: (phase) => logger.log("hub_upload_phase", { step, phase }),
        onRepoCreated: () =>
          logger.log("hub_repo_created", { step, repo: hub.repoId, visibility: "private" }),
        onRetry: ({ attempt, delayMs, error }) =>
          logger.log("hub_upload_retry", {
            step,
            repo: hub.repoId,
            attempt,
            delay_ms: delayMs,
            error: error.message,
          }),
        onStart: (files) =>
          logger.log("hub_upload", {
            step,
            repo: hub.repoId,
            hub_url: hubUrl,
            files: files.map((f) => f.path),
            bytes: files.reduce((n, f) => n + f.bytes, 0),
          }),
      });
      logger.log("hub_uploaded", {
        step,
        repo: hub.repoId,
        revision: done.revision,
        bytes: done.bytes,
        ms: this.#now() - start,
      });
      this.#pending.push({
        epoch: checkpoint.epoch,
        step,
        digest: checkpoint.digest,
        repoId: hub.repoId,
        revision: done.revision,
      });
      this.#decide();
    } catch (e) {
      if (this.#o.signal?.aborted) return;
      logger.log("hub_upload_failed", {
        step,
        repo: hub.repoId,
        error: (e as Error).message,
        ms: this.#now() - start,
      });
    }
  }

  /** Sends or drops each waiting report, as client/state/hub_report.ts decides. */
  #decide(): void {
    const state = this.#latest;
    if (state === null) return;
    const still: PendingReport[] = [];
    for (const report of this.#pending) {
      const decision = hubReportDecision(state, report);
      switch (decision.kind) {
        case "wait":
          still.push(report);
          break;
        case "skip":
          this.#o.logger.log("hub_report_skipped", {
            step: report.step,
            revision: report.revision,
            reason: decision.reason,
          });
          break;
        case "send":
          this.#track(this.#send(report));
          break;
        default: {
          const unreachable: never = decision;
          throw new Error(`unknown decision ${JSON.stringify(unreachable)}`);
        }
      }
    }
    this.#pending = still;
  }

  async #send(report: PendingReport): Promise<void> {
    const { logger } = this.#o;
    const repo = { repoId: report.repoId, revision: report.revision };
    try {
      await this.#o.backend.sendCheckpoint({ kind: "Hub", repo }, { signal: this.#o.signal });
      logger.log("hub_reported", { step: report.step, repo: repo.repoId, revision: repo.revision });
    } catch (e) {
      if (this.#o.signal?.aborted) return;
      logger.log("hub_report_skipped", {
        step: report.step,
        revision: report.revision,
        reason: `the coordinator refused it: ${(e as Error).message}`,
      });
    }
  }

  /** Deletes old step folders, one pass at a time (passes never race over a folder). */
  #prune(runId: string): Promise<void> {
    if (!this.#o.retention.deleteOldSteps) return Promise.resolve();
    this.#pruning = this.#pruning.then(() => this.#prunePass(runId));
    return this.#pruning;
  }

  async #prunePass(runId: string): Promise<void> {
    const { retention, logger } = this.#o;
    const protect = new Set(this.#uploading);
    if (this.#newest !== null) protect.add(this.#newest);
    const deleted = await deleteOldSteps(
      this.#o.checkpointDir,
      runId,
      { keep: retention.keepSteps, protect },
      (path, error) =>
        logger.log("error", { what: `delete old checkpoint ${path}`, error: error.message }),
    );
    for (const d of deleted) logger.log("checkpoint_deleted", { step: d.step, dir: d.path });
  }
}
