/**
 * The Hub settings a client takes from its flags and environment, as Psyche and huggingface_hub
 * read them: the endpoint is `--hub-url`, else `HF_ENDPOINT`, else the public Hub; the token is
 * `HF_TOKEN`; downloads fill the Hugging Face cache (`HF_HUB_CACHE`, `HF_HOME/hub`,
 * `~/.cache/huggingface/hub`: model/hub.ts `defaultHfCache`).
 *
 * @module
 */
import { HUB_URL, type HubTarget } from "./hub_upload.ts";
import type { HubDownloadTarget } from "../model_sharing/mod.ts";
import { defaultHfCache } from "../../model/mod.ts";
import { UsageError } from "../../common/mod.ts";

/** An environment lookup (`Deno.env.get`, or a table in tests). */
export type Env = (name: string) => string | undefined;

/** The flags these settings come from. */
export interface HubFlags {
  /** `--hub-repo`; null: no uploads. */
  readonly hubRepo: string | null;
  /** `--hub-url`; null: from the environment. */
  readonly hubUrl: string | null;
  /** `--hub-upload-attempts` (default: hub_upload.ts's). */
  readonly hubUploadAttempts?: number;
}

/** The Hub endpoint: `--hub-url`, else `HF_ENDPOINT`, else {@link HUB_URL}. */
export function hubEndpoint(flags: Pick<HubFlags, "hubUrl">, env: Env): string {
  return flags.hubUrl ?? (env("HF_ENDPOINT") || HUB_URL);
}

/**
 * Where an elected checkpointer uploads (`--hub-repo`, with `HF_TOKEN`); null without
 * `--hub-repo`. Throws UsageError when the token is missing or is not a Hub token (`hf_…`).
 *
 * @example
 * ```ts
 * import { hubTarget } from "./hub_env.ts";
 * const env = { HF_TOKEN: "hf_abc", HF_ENDPOINT: "http://127.0.0.1:9" };
 * const target = hubTarget({ hubRepo: "me/tiny", hubUrl: null }, (k) => env[k as keyof typeof env]);
 * if (target?.hubUrl !== "http://127.0.0.1:9" || target.token !== "hf_abc") throw new Error();
 * ```
 */
export function hubTarget(flags: HubFlags, env: Env): HubTarget | null {
  if (flags.hubRepo === null) return null;
  const token = env("HF_TOKEN") ?? "";
  if (!token.startsWith("hf_")) {
    throw new UsageError(
      `--hub-repo needs HF_TOKEN, a Hugging Face write token (hf_…), ${
        token === "" ? "which is not set" : "and the one set does not start with hf_"
      }`,
    );
  }
  return {
    repoId: flags.hubRepo,
    hubUrl: hubEndpoint(flags, env),
    token,
    ...(flags.hubUploadAttempts === undefined ? {} : { attempts: flags.hubUploadAttempts }),
  };
}

/**
 * Where a Hub checkpoint that is not on disk is downloaded from and to, with `HF_TOKEN` when set;
 * null when no cache folder can be named (no `HF_HUB_CACHE`, `HF_HOME` or `HOME`).
 */
export function hubDownload(flags: Pick<HubFlags, "hubUrl">, env: Env): HubDownloadTarget | null {
  const cacheDir = defaultHfCache(env);
  if (cacheDir === null) return null;
  const token = env("HF_TOKEN");
  return {
    endpoint: hubEndpoint(flags, env),
    cacheDir,
    ...(token?.startsWith("hf_") ? { token } : {}),
  };
}
