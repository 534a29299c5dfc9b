/**
 * End to end on Solana: the localnet (litesvm with the real coordinator program, served
 * over JSON-RPC and WebSocket by this test process), a run opened and configured through
 * the RPC, and training clients as real processes (`client/main.ts train --rpc ...`) that
 * follow the coordinator account, join every epoch, send the ticks, warmup witnesses,
 * witnesses and health checks as transactions, and train the tiny Llama with DisTrO.
 *
 * - two clients train one epoch with identical parameters; one of them is then killed
 *   mid-epoch, the other finishes the epoch alone, and the killed one restarts with the same
 *   wallet: it joins again, loads the model from its peer and trains the next epoch with the
 *   same parameters as the client that stayed;
 * - in a permissioned run an unauthorized wallet is refused (the client exits naming
 *   NotAuthorizedToJoin) while a delegate's join is registered;
 * - a client with `--hub-repo` (the only one, so the elected checkpointer) uploads its Cooldown
 *   checkpoint to a local fake Hub (client/testing/fake_hub.ts: huggingface.co is unreachable
 *   here) and reports it by transaction: the program records the revision and ends the Cooldown
 *   long before its timer.
 *
 * @module
 */
import { type TinyRunOptions, tinyRunToml } from "../client/testing/testnet.ts";
import { FakeHub } from "../client/testing/fake_hub.ts";
import assert from "node:assert/strict";
import { getAddressEncoder } from "@solana/kit";
import { startTestRun, type TestRun } from "../coordinator/solana/testing/localnet_run.ts";
import { parseRunConfig } from "../coordinator/config/mod.ts";
import { decodeCoordinatorAccount } from "../coordinator/solana/abi/mod.ts";
import { keypairJson, type Wallet } from "../coordinator/solana/rpc/mod.ts";
import { generateIdentity } from "../net/mod.ts";
import { freePorts } from "../client/testnet/mod.ts";
import { peerIdOf } from "../net/p2p/mod.ts";
import { newWitnessEvents } from "../coordinator/solana/cli/mod.ts";
import { toHex } from "../common/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const DEADLINE_MS = 150_000;

interface Event {
  event: string;
  [field: string]: unknown;
}

function stateToml(runId: string, dir: string, overrides: TinyRunOptions = {}): string {
  return tinyRunToml({
    runId,
    warmupTime: 19,
    cooldownTime: 2,
    epochTime: 20,
    maxRoundTrainTime: 10,
    roundWitnessTime: 1,
    minClients: 1,
    initMinClients: 2,
    maxClients: 16,
    globalBatchSize: 4,
    witnessNodes: 0,
    totalSteps: 1000,
    waitingForMembersExtraTime: 2,
    modelDir: `${dir}/model`,
    data: { local: `${ROOT}data/corpus/brown/train` },
    baseLr: 5e-3,
    ...overrides,
  });
}

/** One client process with its JSON events and stderr. */
class ClientProcess {
  readonly events: Event[] = [];
  readonly stderr: string[] = [];
  readonly child: Deno.ChildProcess;
  readonly #readers: Promise<void>[];

  constructor(args: string[], env?: Record<string, string>) {
    this.child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}client/main.ts`, "train", ...args, "--logs=json"],
      env,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#readers = [this.#collect(), this.#drain()];
  }

  async #collect(): Promise<void> {
    let rest = "";
    const decoder = new TextDecoder();
    for await (const chunk of this.child.stdout) {
      rest += decoder.decode(chunk, { stream: true });
      const lines = rest.split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        try {
          this.events.push(JSON.parse(line));
        } catch {
          // not an event
        }
      }
    }
  }

  async #drain(): Promise<void> {
    const decoder = new TextDecoder();
    for await (const chunk of this.child.stderr) this.stderr.push(decoder.decode(chunk));
  }

  of(kind: string): Event[] {
    return this.events.filter((e) => e.event === kind);
  }

  /** Kills the process (SIGKILL unless told) and waits for its output to end. */
  async stop(signal: Deno.Signal = "SIGKILL"): Promise<number> {
    try {
      this.child.kill(signal);
    } catch {
      // already exited
    }
    const { code } = await this.child.status;
    await Promise.allSettled(this.#readers);
    return code;
  }

  /** Waits for the process to exit on its own. */
  async exited(): Promise<number> {
    const { code } = await this.child.status;
    await Promise.allSettled(this.#readers);
    return code;
  }

  tail(): string {
    return `${this.events.slice(-6).map((e) => JSON.stringify(e)).join("\n")}\n` +
      this.stderr.join("").slice(-1500);
  }
}

async function waitFor(
  what: string,
  cond: () => boolean,
  clients: ClientProcess[],
  ms = DEADLINE_MS,
): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) {
      const tails = clients.map((c, i) => `client ${i}:\n${c.tail()}`).join("\n");
      throw new Error(`timed out waiting for ${what}\n${tails}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A run folder (model config, state.toml) and the run opened on a fresh localnet. */
async function openRun(runId: string, permissionless = true, overrides: TinyRunOptions = {}) {
  const dir = await Deno.makeTempDir({ prefix: "psyche-sol-" });
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}config/models/llama-tiny/config.json`));
  await Deno.mkdir(`${dir}/model`);
  await Deno.writeTextFile(
    `${dir}/model/config.json`,
    JSON.stringify({ ...config, vocab_size: 32000 }),
  );
  const parsed = parseRunConfig(stateToml(runId, dir, overrides), `${dir}/state.toml`);
  const run = await startTestRun({
    runId,
    config: parsed.config,
    model: parsed.model,
    permissionless,
  });
  return { dir, run };
}

/** Writes `wallet` as a keypair file and returns its path. */
async function walletFile(dir: string, name: string, wallet: Wallet): Promise<string> {
  const path = `${dir}/${name}.json`;
  await Deno.writeTextFile(path, keypairJson(wallet.identity));
  return path;
}

function clientArgs(
  run: TestRun,
  o: { walletPath: string; port: number; bootstrap: string[]; checkpointDir?: string },
): string[] {
  return [
    `--run-id=${run.runId}`,
    `--rpc=${run.net.url}`,
    `--ws-rpc=${run.net.wsUrl}`,
    `--wallet-private-key-path=${o.walletPath}`,
    `--main-authority=${run.authority.signer.address}`,
    `--program-id=${run.net.ledger.programId}`,
    `--bind-p2p-port=${o.port}`,
    ...o.bootstrap.map((b) => `--bootstrap-peer=${b}`),
    ...(o.checkpointDir === undefined ? [] : [`--checkpoint-dir=${o.checkpointDir}`]),
  ];
}

const applied = (c: ClientProcess, epoch: number) =>
  c.of("apply").filter((e) => e.epoch === epoch).map((e) => `${e.step}:${e.params_hash}`);

Deno.test({
  name: "solana e2e: two clients train an epoch; a client killed mid-epoch rejoins",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { dir, run } = await openRun("sol-e2e");
    const clients: ClientProcess[] = [];
    try {
      const wallets = [await run.newWallet(), await run.newWallet()];
      const paths = await Promise.all(wallets.map((w, i) => walletFile(dir, `wallet${i}`, w)));
      // Client 0 has a libp2p key of its own; client 1's wallet key doubles as its p2p key.
      const p2p0 = generateIdentity();
      await Deno.writeFile(`${dir}/p2p0`, p2p0.secretKey);
      const p2pKeys = [p2p0.publicKey, wallets[1].identity.publicKey];
      const ports = freePorts(3);
      const addr = (i: number, port = ports[i]) =>
        `/ip4/127.0.0.1/tcp/${port}/p2p/${peerIdOf(p2pKeys[i])}`;
      for (let i = 0; i < 2; i++) {
        clients.push(
          new ClientProcess([
            ...clientArgs(run, {
              walletPath: paths[i],
              port: ports[i],
              bootstrap: [addr(1 - i)],
              checkpointDir: `${dir}/checkpoints${i}`,
            }),
            ...(i === 0 ? [`--identity-secret-key-path=${dir}/p2p0`] : []),
          ]),
        );
      }
      // Epoch 0: both train; it is over when both wrote their Cooldown checkpoint.
      await waitFor(
        "both clients' first checkpoint",
        () => clients.every((c) => c.of("checkpoint").length >= 1),
        clients,
      );
      const epoch0 = clients.map((c) => applied(c, 0));
      assert.ok(epoch0[0].length >= 1, `client 0 applied ${epoch0[0].length} steps`);
      assert.deepEqual(epoch0[1], epoch0[0], "identical parameters after every step");
      for (const a of clients.flatMap((c) => c.of("apply"))) {
        assert.equal(a.untrained_batches, 0, JSON.stringify(a));
        assert.equal(a.applied, 2);
      }
      for (const c of clients) {
        assert.ok(c.of("warmup_witness").length >= 1, "warmup witnessed by transaction");
      }
      // The witnesses' losses ride in their transactions: what `deno task dashboard` draws.
      const losses = await newWitnessEvents(run.rpc, {
        coordinator: run.coordinator,
        programId: run.net.ledger.programId,
        seen: new Set(),
      });
      const reporters = wallets.map((w) =>
        toHex(new Uint8Array(getAddressEncoder().encode(w.signer.address)))
      );
      assert.ok(losses.length >= 1, "witness losses read back from the transactions");
      for (const e of losses) {
        assert.ok(reporters.includes(e.client), `a loss from ${e.client}`);
        assert.ok(e.metadata.loss > 0 && e.metadata.loss < 30, JSON.stringify(e.metadata));
        assert.ok(e.metadata.step >= 1);
      }
      // The run lists each wallet with the p2p key it joined with.
      const listed = decodeCoordinatorAccount((await run.rpc.accountData(run.coordinator))!);
      for (const [i, w] of wallets.entries()) {
        const key = getAddressEncoder().encode(w.signer.address);
        const reg = listed.registry.find((r) => r.signer.every((b, j) => b === key[j]));
        assert.deepEqual(reg?.p2pIdentity, p2pKeys[i], `client ${i}'s p2p key`);
      }

      // Epoch 1: kill client 1 once it trained a step, restart it with the same wallet.
      await waitFor(
        "client 1 training in epoch 1",
        () => clients[1].of("train").some((e) => e.epoch === 1),
        clients,
      );
      await clients[1].stop();
      // Client 0 finishes epoch 1 alone (health checks drop the dead one); the restart comes
      // at the epoch's end, so the model it loads from its peer is the newest one.
      await waitFor(
        "client 0's second checkpoint",
        () => clients[0].of("checkpoint").length >= 2,
        clients,
      );
      const restarted = new ClientProcess(clientArgs(run, {
        walletPath: paths[1],
        port: ports[2],
        bootstrap: [addr(0)],
      }));
      clients.push(restarted);
      // It joins again and trains a later epoch in step with client 0.
      await waitFor(
        "the restarted client applying a step of a later epoch",
        () => restarted.of("apply").some((e) => (e.epoch as number) >= 2),
        clients,
      );
      const epoch = restarted.of("apply").find((e) => (e.epoch as number) >= 2)!.epoch as number;
      await waitFor(
        "client 0 applying the same steps",
        () => applied(clients[0], epoch).length >= applied(restarted, epoch).length,
        clients,
      );
      const mine = applied(restarted, epoch);
      const latest = decodeCoordinatorAccount((await run.rpc.accountData(run.coordinator))!);
      assert.deepEqual(
        mine,
        applied(clients[0], epoch).slice(0, mine.length),
        `restarted: ${JSON.stringify(restarted.of("model"))}\n0: ${
          JSON.stringify(clients[0].of("apply").slice(-8))
        }\ncheckpoint ${JSON.stringify(latest.state.model.checkpoint)}\n${restarted.tail()}`,
      );

      // The account agrees: the restarted wallet is a client of the current epoch.
      const account = decodeCoordinatorAccount((await run.rpc.accountData(run.coordinator))!);
      assert.ok(account.state.progress.epoch >= 2);
      const key = getAddressEncoder().encode(wallets[1].signer.address);
      assert.ok(
        account.state.epochState.clients.some((c) => c.id.signer.every((b, i) => b === key[i])),
        "the restarted wallet is in the epoch's clients",
      );
      assert.deepEqual(clients[0].of("error"), [], "client 0 logged no errors");
    } finally {
      await Promise.all(clients.map((c) => c.stop()));
      await run.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "solana e2e: a permissioned run refuses an unauthorized wallet and registers a delegate",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { dir, run } = await openRun("sol-closed", false);
    const clients: ClientProcess[] = [];
    try {
      const delegate = await run.newWallet();
      const stranger = await run.newWallet();
      // The join authority (the run's authority here) grants itself; it names the delegate.
      await run.operator.grantAuthorizer(run.coordinator, run.authority.signer.address);
      await run.operator.setDelegates(run.coordinator, [delegate.signer.address]);
      const ports = freePorts(2);
      const [good, bad] = [
        new ClientProcess(clientArgs(run, {
          walletPath: await walletFile(dir, "delegate", delegate),
          port: ports[0],
          bootstrap: [],
        })),
        new ClientProcess(clientArgs(run, {
          walletPath: await walletFile(dir, "stranger", stranger),
          port: ports[1],
          bootstrap: [],
        })),
      ];
      clients.push(good, bad);
      assert.equal(await bad.exited(), 1, bad.tail());
      assert.match(bad.stderr.join(""), /Refused: join_run refused: \w+ may not join run/);
      assert.match(bad.stderr.join(""), /NotAuthorizedToJoin/);
      const key = getAddressEncoder().encode(delegate.signer.address);
      await waitFor(
        "the delegate's registration",
        () => run.pending().some((p) => p.signer.every((b, i) => b === key[i])),
        clients,
        30_000,
      );
      assert.equal(run.pending().length, 1, "only the delegate is registered");
    } finally {
      await Promise.all(clients.map((c) => c.stop()));
      await run.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "solana e2e: the elected checkpointer's Hub report ends Cooldown on the program",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const cooldown = 60;
    const { dir, run } = await openRun("sol-hub", true, {
      initMinClients: 1,
      warmupTime: 9,
      epochTime: 10,
      maxRoundTrainTime: 8,
      cooldownTime: cooldown,
    });
    await using hub = FakeHub.start({ token: "hf_sol" });
    const clients: ClientProcess[] = [];
    try {
      const wallet = await run.newWallet();
      const [port] = freePorts(1);
      const env = { HF_TOKEN: "hf_sol" }; // added to this process's environment
      clients.push(
        new ClientProcess([
          ...clientArgs(run, {
            walletPath: await walletFile(dir, "wallet", wallet),
            port,
            bootstrap: [],
            checkpointDir: `${dir}/checkpoints`,
          }),
          "--hub-repo=owner/sol",
          `--hub-url=${hub.url}`,
        ], env),
      );
      const [client] = clients;
      await waitFor(
        "the client's Hub report",
        () => client.of("hub_reported").length >= 1,
        clients,
      );
      const [reported] = client.of("hub_reported");
      assert.equal(hub.commits.length, 1);
      assert.equal(reported.revision, hub.commits[0].oid);
      await waitFor(
        "the next state after Cooldown",
        () =>
          client.of("state").some((e) => e.run_state !== "Cooldown" && (e.epoch as number) >= 1),
        clients,
        30_000,
      );
      const states = client.of("state");
      const start = states.findIndex((e) => e.run_state === "Cooldown");
      assert.ok(start >= 0, "the client saw the Cooldown");
      const end = states.slice(start).find((e) => e.run_state !== "Cooldown")!;
      const ms = Date.parse(String(end.time)) - Date.parse(String(states[start].time));
      assert.ok(ms < cooldown * 1000 / 2, `Cooldown lasted ${ms} ms of its ${cooldown} s`);
      const account = decodeCoordinatorAccount((await run.rpc.accountData(run.coordinator))!);
      // A Dummy run takes the report (Hub), and the epoch's end makes it P2P.
      assert.deepEqual(account.state.model.checkpoint, {
        kind: "P2P",
        repo: { repoId: "owner/sol", revision: hub.commits[0].oid },
      });
      assert.deepEqual(client.of("error"), [], "no errors");
    } finally {
      await Promise.all(clients.map((c) => c.stop()));
      await run.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
