/**
 * A stand-alone model provider for benchmarks that need it on another host (a network
 * namespace, client/testing/netns.ts).
 *
 * `deno run -A client/testing/model_provider.ts <secret index> <f32|bf16> <host> <allowed index>...`
 * serves the seeded llama-20m (config/models/llama-20m), its parameters rounded to bf16 for
 * `bf16` (so they travel as bf16 blobs), as model sharing does at step 1; prints one JSON line
 * `{ "address", "digest", "bytes" }` on stdout, and stops when stdin closes. With `relay`
 * (passed as `PSYCHE_BENCH_RELAY`), it first reserves a slot on that relay and prints its
 * relayed address as `relayed`.
 *
 * @module
 */
import "../../net/p2p/mod.ts";
import { createP2PNode } from "../../net/p2p/mod.ts";
import { PayloadService } from "../../net/p2p/mod.ts";
import { readHello, testPublic, testSecret } from "./p2p.ts";
import { serveModel } from "../model_sharing/serve.ts";
import { decodeBf16, encodeBf16, initParams, readModelDir } from "../../model/mod.ts";

/** A provider running in a child process. */
export interface ModelProvider {
  /** Its libp2p address, with `/p2p/<id>`. */
  readonly address: string;
  /** The served parameters' digest (hex). */
  readonly digest: string;
  /** Bytes of the served blobs. */
  readonly bytes: number;
  /** Its address through the relay, when it was given one. */
  readonly relayed?: string;
  /** Closes its stdin and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts a provider, inside `prefix` (e.g. `ip netns exec <ns>`) when given. */
export async function spawnModelProvider(
  options: {
    self: number;
    dtype: "f32" | "bf16";
    host: string;
    allowed: readonly number[];
    prefix?: readonly string[];
    /** A relay (multiaddr with `/p2p/<relay>`) to reserve a slot on. */
    relay?: string;
  },
): Promise<ModelProvider> {
  const args = [
    ...(options.prefix ?? []),
    Deno.execPath(),
    "run",
    "-A",
    new URL(import.meta.url).pathname,
    String(options.self),
    options.dtype,
    options.host,
    ...options.allowed.map(String),
  ];
  const child = new Deno.Command(args[0], {
    args: args.slice(1),
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
    env: options.relay === undefined ? {} : { PSYCHE_BENCH_RELAY: options.relay },
  }).spawn();
  const { hello, reader } = await readHello(child.stdout, "model provider");
  return {
    ...(hello as { address: string; digest: string; bytes: number; relayed?: string }),
    async stop() {
      await child.stdin.close();
      await reader.cancel();
      await child.status;
    },
  };
}

if (import.meta.main) {
  const [selfText, dtype, host, ...allowedText] = Deno.args;
  if (dtype !== "f32" && dtype !== "bf16") throw new RangeError(`dtype must be f32 or bf16`);
  const self = Number(selfText);
  const { config, layout } = await readModelDir("config/models/llama-20m");
  const seeded = initParams(layout, config, 1);
  const weights = dtype === "bf16" ? decodeBf16(encodeBf16(seeded)) : seeded;
  const node = await createP2PNode({
    secretKey: testSecret(self),
    host,
    allowedPeers: allowedText.map((n) => testPublic(Number(n))),
  });
  const service = await PayloadService.start(node);
  const served = serveModel(service, { config, layout, weights }, { step: 1 });
  const relay = Deno.env.get("PSYCHE_BENCH_RELAY");
  let relayed: string | undefined;
  if (relay !== undefined) {
    const failures = await node.setRelays([relay]);
    if (failures.length > 0) throw new Error(`relay: ${failures[0].error}`);
    for (let i = 0; i < 500 && relayed === undefined; i++) {
      relayed = node.addresses().map(String).find((a) => a.includes("/p2p-circuit"));
      if (relayed === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    if (relayed === undefined) throw new Error("no reservation on the relay after 10 s");
  }
  console.log(JSON.stringify({
    address: node.addresses()[0].toString(),
    digest: served.digest,
    bytes: served.bytes,
    relayed,
  }));
  const stdin = Deno.stdin.readable.getReader();
  while (!(await stdin.read()).done) { /* until the parent closes it */ }
  await node.stop();
}
