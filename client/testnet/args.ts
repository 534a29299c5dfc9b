/**
 * `deno task testnet` arguments (Psyche's `local-testnet`), parsed into typed options with an
 * error naming the flag; never evaluated, unknown flags refused.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { UsageError } from "../../common/mod.ts";

/** Usage text of `deno task testnet`. */
export const TESTNET_USAGE = `Usage: deno task testnet --num-clients N --config-path DIR [options]

Starts a coordinator (deno task coordinator run) and N training clients on 127.0.0.1, each a
child process with its own labelled, coloured output, until Ctrl-C (or --stop-after-epochs).

Options:
  --num-clients N               clients to start (1..64)
  --config-path DIR             folder with state.toml (and data.toml when the run's data
                                comes from a TCP data server: served by the coordinator)
  --random-kill-num K           kill K clients at random, one every --random-kill-interval
                                seconds; each is restarted (same identity) 5 s later
  --random-kill-interval S      seconds between random kills (default 120)
  --logs console|json           human lines, or each child's JSON events with a "process"
                                field (default console)
  --stop-after-epochs E         stop cleanly after E epochs ended with training
  --stop-after-seconds S        stop cleanly after S seconds
  --checkpoint-dir DIR          clients write checkpoints under DIR/client-I (default: the
                                testnet's temporary folder)
  --keep-temp                   keep the temporary folder (identities, logs, checkpoints)
  --calibrate                   measure a training step of the run's model on this machine
                                first, and raise the run's round, Warmup and epoch times to
                                what N clients sharing it need (a busy or slow machine)
  -h, --help                    show this help`;

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
 * Parses the arguments; null when help was asked for. Throws {@link UsageError}.
 *
 * @example
 * ```ts
 * import { parseTestnetArgs } from "./args.ts";
 * const a = parseTestnetArgs(["--num-clients", "3", "--config-path", "config/llama-tiny"]);
 * if (a?.numClients !== 3 || a.logs !== "console") throw new Error("unexpected");
 * ```
 */
export function parseTestnetArgs(args: readonly string[]): TestnetArgs | null {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        "num-clients": { type: "string" },
        "config-path": { type: "string" },
        "random-kill-num": { type: "string" },
        "random-kill-interval": { type: "string" },
        logs: { type: "string" },
        "stop-after-epochs": { type: "string" },
        "stop-after-seconds": { type: "string" },
        "checkpoint-dir": { type: "string" },
        "keep-temp": { type: "boolean" },
        calibrate: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.help) return null;
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
  };
}
