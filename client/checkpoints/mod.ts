/**
 * A client's checkpoints after they are written (docs/checkpoints.md, "Checkpoints to the Hub"):
 *
 * - `uploadCheckpoint(dir, { repoId, token, hubUrl })`: commit a checkpoint folder to a Hub
 *   model repo with `@huggingface/hub`; the commit's oid is the revision (hub_upload.ts);
 * - `CheckpointDuty`: as an elected checkpointer, upload each Cooldown's folder, report the
 *   revision to the coordinator once the Cooldown's digest vote is in, and delete folders beyond
 *   `--keep-steps` (duty.ts, retention.ts);
 * - `hubTarget(flags, env)`, `hubDownload(flags, env)`: `--hub-repo`, `--hub-url`, `HF_TOKEN`,
 *   `HF_ENDPOINT` and the cache folder, as the client reads them (hub_env.ts).
 *
 * @module
 */
export {
  checkpointFiles,
  HUB_URL,
  type HubTarget,
  type HubUpload,
  HubUploadError,
  type HubUploadPhase,
  uploadCheckpoint,
  type UploadCheckpointOptions,
} from "./hub_upload.ts";
export {
  CheckpointDuty,
  type CheckpointDutyOptions,
  type RetentionArgs,
  type WrittenCheckpoint,
} from "./duty.ts";
export { type Env, hubDownload, hubEndpoint, type HubFlags, hubTarget } from "./hub_env.ts";
export {
  deleteOldSteps,
  type RetentionRule,
  type StepFolder,
  stepFolderName,
  stepFolders,
  stepsToDelete,
} from "./retention.ts";
