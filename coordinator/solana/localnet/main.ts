/**
 * `deno task localnet [--port 8899] [--ws-port 8900] [--hostname 127.0.0.1]`: serves the
 * Solana JSON-RPC (HTTP) and subscriptions (WebSocket) around an in-process litesvm with
 * the coordinator program deployed at {@linkcode LOCALNET_PROGRAM_ID} (built first when
 * coordinator/solana/build/psyche_coordinator.so is missing), the mining pool at
 * {@linkcode LOCALNET_POOL_PROGRAM_ID} and the treasurer at
 * {@linkcode LOCALNET_TREASURER_PROGRAM_ID} (both built from their sources at every start, in
 * about a second each).
 *
 * A test harness around the real SVM, not a validator: the same operator commands and
 * clients work unchanged against `solana-test-validator`, devnet or mainnet.
 *
 * @module
 */
import {
  LOCALNET_POOL_PROGRAM_ID,
  LOCALNET_PROGRAM_ID,
  LOCALNET_TREASURER_PROGRAM_ID,
} from "./ledger.ts";
import { buildProgram, POOL_SOURCE, TREASURER_SOURCE } from "../toolchain/mod.ts";
import { startLocalnet } from "./server.ts";
import {
  denoEnv,
  type EnvLookup,
  explainEnv,
  type FlagValues,
  helpText,
  parseArgsOrExit,
  parseFlags,
} from "../../../cli/entry.ts";
import { UsageError } from "../../../common/mod.ts";

/** The flags of `deno task localnet`. */
export const LOCALNET_SPEC = {
  usage: "deno task localnet [--port 8899] [--ws-port 8900] [--hostname 127.0.0.1]",
  summary: "A Solana JSON-RPC endpoint around an in-process litesvm (Agave's runtime) with the " +
    `coordinator program deployed at ${LOCALNET_PROGRAM_ID}, the mining pool at ` +
    `${LOCALNET_POOL_PROGRAM_ID} and the treasurer at ${LOCALNET_TREASURER_PROGRAM_ID}. A test ` +
    "harness, not a validator.",
  flags: {
    port: { type: "string", value: "P", description: "JSON-RPC port", defaultText: "8899" },
    "ws-port": { type: "string", value: "P", description: "WebSocket port", defaultText: "8900" },
    hostname: {
      type: "string",
      value: "H",
      description: "address to listen on",
      defaultText: "127.0.0.1",
    },
  },
} as const;

/** Usage text. */
export const USAGE: string = helpText(LOCALNET_SPEC);

/** Parsed flags. */
export interface LocalnetArgs {
  hostname: string;
  port: number;
  wsPort: number;
}

/** Parses the flags; a {@link UsageError} names the bad one. */
export function parseLocalnetArgs(
  args: readonly string[],
  env: EnvLookup = {},
): LocalnetArgs | "help" {
  const parsed = parseFlags(LOCALNET_SPEC, args, { env });
  if (parsed.help) return "help";
  return explainEnv(parsed, () => checkLocalnetArgs(parsed.values));
}

function checkLocalnetArgs(values: FlagValues<typeof LOCALNET_SPEC>): LocalnetArgs {
  const port = (name: string, text: string | undefined, fallback: number) => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!/^\d+$/.test(text) || n > 65535) {
      throw new UsageError(`--${name} must be a port number 0..65535, found "${text}"`);
    }
    return n;
  };
  return {
    hostname: values.hostname ?? "127.0.0.1",
    port: port("port", values.port, 8899),
    wsPort: port("ws-port", values["ws-port"], 8900),
  };
}

if (import.meta.main) {
  const args = parseArgsOrExit((a) => parseLocalnetArgs(a, denoEnv), LOCALNET_SPEC);
  const pool = await buildProgram({ source: POOL_SOURCE });
  const treasurer = await buildProgram({ source: TREASURER_SOURCE });
  const net = await startLocalnet({
    ...args,
    poolProgramBytes: pool.bytes,
    treasurerProgramBytes: treasurer.bytes,
  });
  console.log(
    `localnet (litesvm test harness, not a validator)\n  rpc:     ${net.url}\n  ws:      ${net.wsUrl}\n` +
      `  program: ${net.ledger.programId}\n  pool:    ${LOCALNET_POOL_PROGRAM_ID}\n` +
      `  treasurer: ${LOCALNET_TREASURER_PROGRAM_ID}`,
  );
  const stop = () => {
    net.close().then(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
