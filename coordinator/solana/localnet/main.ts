/**
 * `deno task localnet [--port 8899] [--ws-port 8900] [--hostname 127.0.0.1]`: serves the
 * Solana JSON-RPC (HTTP) and subscriptions (WebSocket) around an in-process litesvm with
 * the coordinator program deployed at {@linkcode LOCALNET_PROGRAM_ID} (built first when
 * coordinator/solana/build/psyche_coordinator.so is missing).
 *
 * A test harness around the real SVM, not a validator: the same operator commands and
 * clients work unchanged against `solana-test-validator`, devnet or mainnet.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { LOCALNET_PROGRAM_ID } from "./ledger.ts";
import { startLocalnet } from "./server.ts";
import { parseArgsOrExit } from "../../../cli/entry.ts";

/** Usage text. */
export const USAGE =
  `Usage: deno task localnet [--port 8899] [--ws-port 8900] [--hostname 127.0.0.1]

A Solana JSON-RPC endpoint around an in-process litesvm (Agave's runtime) with the
coordinator program deployed at ${LOCALNET_PROGRAM_ID}. A test harness, not a validator.`;

/** Parsed flags. */
export interface LocalnetArgs {
  hostname: string;
  port: number;
  wsPort: number;
}

/** Parses the flags; a TypeError names the bad one. */
export function parseLocalnetArgs(args: readonly string[]): LocalnetArgs | "help" {
  const { values } = parseArgs({
    args: [...args],
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: "string" },
      "ws-port": { type: "string" },
      hostname: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return "help";
  const port = (name: string, text: string | undefined, fallback: number) => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!/^\d+$/.test(text) || n > 65535) {
      throw new TypeError(`--${name} must be a port number 0..65535, found "${text}"`);
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
  const args = parseArgsOrExit(parseLocalnetArgs, USAGE);
  const net = await startLocalnet(args);
  console.log(
    `localnet (litesvm test harness, not a validator)\n  rpc:     ${net.url}\n  ws:      ${net.wsUrl}\n` +
      `  program: ${net.ledger.programId}`,
  );
  const stop = () => {
    net.close().then(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
