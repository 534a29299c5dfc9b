/**
 * `deno task data-server --config data.toml [--port N] [--hostname H]
 *  (--allow PUBKEY_HEX ... | --allow-any-client)`: serves a tokenized folder to
 * authenticated clients. Standalone there is no coordinator to say who is in the
 * epoch, so the operator lists the public keys allowed (or, for local demos only,
 * allows any client that completes the handshake). Stops on SIGINT/SIGTERM.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { IdentityError, publicKeyFromHex, toHex } from "../net/identity.ts";
import { startDataServerFromConfig } from "./data_server_config.ts";
import { DataError } from "./errors.ts";
import type { AuthorizeFn } from "./tcp_server.ts";

const USAGE = "usage: deno task data-server --config data.toml [--port N] [--hostname H] " +
  "(--allow PUBKEY_HEX ... | --allow-any-client)";

async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: "string" },
      port: { type: "string" },
      hostname: { type: "string" },
      allow: { type: "string", multiple: true },
      "allow-any-client": { type: "boolean" },
      help: { type: "boolean" },
    },
  });
  if (values.help || values.config === undefined) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`error: --port must be 0..65535, found "${values.port}"`);
    return 2;
  }
  let allowed: Set<string>;
  try {
    allowed = new Set((values.allow ?? []).map((hex) => toHex(publicKeyFromHex(hex))));
  } catch (e) {
    if (!(e instanceof IdentityError)) throw e;
    console.error(`error: --allow: ${e.message}`);
    return 2;
  }
  if (allowed.size === 0 && !values["allow-any-client"]) {
    console.error(
      `error: name the clients to serve with --allow, or pass --allow-any-client\n${USAGE}`,
    );
    return 2;
  }
  const authorize: AuthorizeFn = (key) =>
    values["allow-any-client"] || allowed.has(toHex(key)) ? "Allowed" : "NotInThisRound";
  try {
    const running = await startDataServerFromConfig(values.config, {
      authorize,
      port,
      hostname: values.hostname,
      onEvent: (e) => {
        if (e.kind === "Connected") console.log(`client ${e.client} connected`);
        if (e.kind === "Rejected") {
          console.log(`refused ${e.client} batch ${e.batch.start}..${e.batch.end}: ${e.reason}`);
        }
        if (e.kind === "Disconnected" && e.error) {
          console.log(`client ${e.client ?? "?"}: ${e.error.message}`);
        }
      },
    });
    const { config, provider, server } = running;
    console.log(
      `serving ${config.dir}: ${provider.numSequences} sequences of ${config.seqLen} tokens ` +
        `on ${server.address}`,
    );
    const stopped = new Promise<void>((resolve) => {
      Deno.addSignalListener("SIGINT", resolve);
      Deno.addSignalListener("SIGTERM", resolve);
    });
    await stopped;
    await running.close();
    return 0;
  } catch (e) {
    if (e instanceof DataError) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
