/**
 * The run's relay (net/p2p/relay.ts) in a process of its own, for benchmarks that must not
 * share a thread with it: `deno run -A client/testing/relay_child.ts <member index>...` serves
 * the test keys of those indices on 127.0.0.1, prints `{ "address" }` and stops when stdin
 * closes.
 *
 * @module
 */
import "../../net/p2p/mod.ts";
import { startRelay } from "../../net/p2p/mod.ts";
import { readHello, testPublic } from "./p2p.ts";
import { toHex } from "../../common/mod.ts";

/** A relay in a child process. */
export interface RelayChild {
  readonly address: string;
  /** Closes its stdin and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts a relay process serving the test keys of `members`. */
export async function spawnRelay(members: readonly number[]): Promise<RelayChild> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, ...members.map(String)],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const { hello, reader } = await readHello(child.stdout, "relay");
  return {
    address: String(hello.address),
    async stop() {
      await child.stdin.close();
      await reader.cancel();
      await child.status;
    },
  };
}

if (import.meta.main) {
  const members = new Set(Deno.args.map((n) => toHex(testPublic(Number(n)))));
  const relay = await startRelay({
    host: "127.0.0.1",
    port: 0,
    isMember: (key) => members.has(key),
    maxReservations: 16,
  });
  console.log(JSON.stringify({ address: relay.addresses()[0] }));
  const stdin = Deno.stdin.readable.getReader();
  while (!(await stdin.read()).done) { /* until the parent closes it */ }
  await relay.close();
}
