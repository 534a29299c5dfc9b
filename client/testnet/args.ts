/**
 * `deno task testnet` arguments (Psyche's `local-testnet`), parsed into typed options with an
 * error naming the flag; never evaluated, unknown flags refused.
 *
 * @module
 */
import {
  type EnvLookup,
  explainEnv,
  type FlagValues,
  helpText,
  parseFlags,
} from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";

/** The flags of `deno task testnet`. */
export const TESTNET_SPEC = {
  usage: "deno task testnet --num-clients N --config-path DIR [options]",
  summary: "Starts a coordinator (deno task coordinator run) and N training clients on " +
    "127.0.0.1, each a child process with its own labelled, coloured output, until Ctrl-C (or " +
    "--stop-after-epochs), then prints a summary of the run.",
  flags: {
    "num-clients": {
      type: "string",
      value: "N",
      description: "clients to start (1..64)",
      required: true,
    },
    "config-path": {
      type: "string",
      value: "DIR",
      description: "folder with state.toml (and data.toml when the run's data comes from a TCP " +
        "data server: served by the coordinator)",
      required: true,
    },
    "random-kill-num": {
      type: "string",
      value: "K",
      description: "kill K clients at random, one every --random-kill-interval seconds; each is " +
        "restarted (same identity) 5 s later",
    },
    "random-kill-interval": {
      type: "string",
      value: "S",
      description: "seconds between random kills",
      defaultText: "120",
    },
    logs: {
      type: "string",
      value: "console|json",
      description:
        'human lines, or one JSON object per line: each child\'s events with a "process" ' +
        "field, and the testnet's own (docs/logs.md)",
      defaultText: "console",
    },
    "stop-after-epochs": {
      type: "string",
      value: "E",
      description: "stop cleanly after E epochs ended with training",
    },
    "stop-after-seconds": {
      type: "string",
      value: "S",
      description: "stop cleanly after S seconds",
    },
    "checkpoint-dir": {
      type: "string",
      value: "DIR",
      description: "clients write checkpoints under DIR/client-I",
      defaultText: "the testnet's temporary folder",
    },
    "keep-temp": {
      type: "boolean",
      description: "keep the temporary folder (identities, logs, checkpoints)",
    },
    "dashboard-port": {
      type: "string",
      value: "P",
      description: "the coordinator serves its live dashboard and /metrics on 127.0.0.1:P (0: a " +
        "free port); the URL is printed at start",
    },
    calibrate: {
      type: "boolean",
      description: "measure a training step of the run's model on this machine first, and raise " +
        "the run's round, Warmup and epoch times to what N clients sharing it need (a busy or " +
        "slow machine); each epoch then waits for all N clients",
    },
  },
  footer:
    "Children get every setting as a flag: PSYCHE_* variables are not passed on to them.\n\n" +
    "Exit status: 0 stopped as asked with every client on the run's parameters, 1 the run failed " +
    "(a --- FAILED line says why), 2 bad arguments.",
} as const;

/** Help text of `deno task testnet`. */
export const TESTNET_USAGE: string = helpText(TESTNET_SPEC);

/** Output formats of `--logs`. */
export const TESTNET_LOG_FORMATS = ["console", "json"] as const;
/** One of {@link TESTNET_LOG_FORMATS}. */
export type TestnetLogFormat = typeof TESTNET_LOG_FORMATS[number];

/** Parsed `deno task testnet` options. */
export interface TestnetArgs {
  readonly numClients: number;
  readonly configPath: string;
  readonly randomKillNum: number;
  readonly randomKillIntervalS: number;
  readonly logs: TestnetLogFormat;
  readonly stopAfterEpochs: number | null;
  readonly stopAfterSeconds: number | null;
  readonly checkpointDir: string | null;
  readonly keepTemp: boolean;
  readonly calibrate: boolean;
  /** The coordinator's dashboard port (0: a free one); null: no dashboard. */
  readonly dashboardPort: number | null;
}

function whole(name: string, text: string | undefined, min: number, max: number) {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max) {
    throw new UsageError(
      `--${name} must be a whole number in ${min}..${max}, found "${text}"`,
    );
  }
  return n;
}

/**
 * Parses the arguments; null when help was asked for. `env` fills flags not given
 * (`PSYCHE_*`). Throws {@link UsageError}.
 *
 * @example
 * ```ts
 * import { parseTestnetArgs } from "./args.ts";
 * const a = parseTestnetArgs(["--num-clients", "3", "--config-path", "config/llama-tiny"]);
 * if (a?.numClients !== 3 || a.logs !== "console") throw new Error("unexpected");
 * ```
 */
export function parseTestnetArgs(
  args: readonly string[],
  env: EnvLookup = {},
): TestnetArgs | null {
  const parsed = parseFlags(TESTNET_SPEC, args, { env });
  if (parsed.help) return null;
  return explainEnv(parsed, () => checkTestnetArgs(parsed.values));
}

function checkTestnetArgs(values: FlagValues<typeof TESTNET_SPEC>): TestnetArgs {
  const numClients = whole("num-clients", values["num-clients"], 1, 64);
  if (numClients === undefined) throw new UsageError("--num-clients N is required");
  const configPath = values["config-path"];
  if (configPath === undefined || configPath === "") {
    throw new UsageError("--config-path DIR is required");
  }
  const logs = values.logs ?? "console";
  if (!(TESTNET_LOG_FORMATS as readonly string[]).includes(logs)) {
    throw new UsageError(
      `--logs must be one of ${TESTNET_LOG_FORMATS.join(", ")}, found "${logs}"`,
    );
  }
  const randomKillNum = whole("random-kill-num", values["random-kill-num"], 0, 10_000) ?? 0;
  const interval = whole("random-kill-interval", values["random-kill-interval"], 1, 86_400);
  if (interval !== undefined && randomKillNum === 0) {
    throw new UsageError("--random-kill-interval needs --random-kill-num K");
  }
  return {
    numClients,
    configPath,
    randomKillNum,
    randomKillIntervalS: interval ?? 120,
    logs: logs as TestnetLogFormat,
    stopAfterEpochs: whole("stop-after-epochs", values["stop-after-epochs"], 1, 1_000_000) ?? null,
    stopAfterSeconds: whole("stop-after-seconds", values["stop-after-seconds"], 1, 31_536_000) ??
      null,
    checkpointDir: values["checkpoint-dir"] ?? null,
    keepTemp: values["keep-temp"] ?? false,
    calibrate: values.calibrate ?? false,
    dashboardPort: whole("dashboard-port", values["dashboard-port"], 0, 65535) ?? null,
  };
}
