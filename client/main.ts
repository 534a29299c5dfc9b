/**
 * `deno task client <command>`: `train` joins a run through its TCP coordinator (or the
 * Solana coordinator program with `--rpc`) and trains
 * until the run finishes (or SIGINT/SIGTERM); `show-identity` prints the client's public
 * key and libp2p peer id. See client/cli.ts for the flags.
 *
 * @module
 */
import "../net/p2p/mod.ts";
import { TcpBackend, type TcpBackendEvent } from "./backend/tcp.ts";
import { type MeetingPlaces, SolanaBackend } from "./backend/solana.ts";
import type { CoordinatorBackend } from "./backend/backend.ts";
import {
  bulkOptions,
  type ClientArgs,
  clientHelp,
  parseClientArgs,
  type SolanaTrainArgs,
  type TrainArgs,
  USAGE,
} from "./cli.ts";
import { type ClientFaults, TrainingClient } from "./client.ts";
import { type Attack, parseAttack } from "./attacks.ts";
import { Exchange, type ExchangeFaults } from "./exchange.ts";
import {
  type ClientLogger,
  consoleClientLogger,
  jsonClientLogger,
  teeClientLogger,
} from "./log.ts";
import { startClientMetrics } from "./metrics_server.ts";
import { BackgroundEvals } from "./background_evals.ts";
import { taskFolder } from "../eval/mod.ts";
import { openTerminalTui } from "./tui/screen.ts";
import { peerIdOf } from "../net/p2p/mod.ts";
import { address } from "@solana/kit";
import { denoEnv, EXIT_OK, EXIT_USAGE, onStopRequest } from "../cli/entry.ts";
import { coordinatorAddress } from "../coordinator/solana/abi/mod.ts";
import {
  DEFAULT_PROGRAM_ID,
  DEFAULT_TREASURER_PROGRAM_ID,
  loadWallet,
  SolanaRpcClient,
} from "../coordinator/solana/rpc/mod.ts";
import { toHex } from "../common/mod.ts";
import { hubDownload, hubTarget } from "./checkpoints/mod.ts";
import { generateIdentity, type Identity, identityFromHex, loadIdentity } from "../net/mod.ts";

export { EXIT_OK, EXIT_USAGE };

/** A failure while running (coordinator refused, model missing, …). */
export const EXIT_FAILURE = 1;

/** The identity from `path`, else `RAW_IDENTITY_SECRET_KEY` (hex), else a fresh one. */
export async function resolveIdentity(path: string | null): Promise<Identity> {
  if (path !== null) return await loadIdentity(path);
  const hex = Deno.env.get("RAW_IDENTITY_SECRET_KEY");
  if (hex !== undefined && hex !== "") return identityFromHex(hex);
  return generateIdentity();
}

/** What `--logs` turns into: the logger, and what to do when the client stops. */
interface ChosenLogger {
  logger: ClientLogger;
  /** Ends the display (the TUI gives the terminal back and leaves a summary). */
  close(): void;
}

/**
 * The logger for `--logs`: JSON lines, console lines, or the full-screen TUI when stdout is a
 * terminal (else console lines after a one-line notice, so a pipe or a file never gets escape
 * codes).
 */
function chooseLogger(
  args: TrainArgs,
  io: { write: (line: string) => void; terminal?: boolean },
): ChosenLogger {
  if (args.logs === "json") return { logger: jsonClientLogger(io.write), close() {} };
  if (args.logs === "tui" && io.terminal === true) {
    const tui = openTerminalTui({
      runId: args.runId,
      coordinator: args.serverAddr ?? args.solana?.rpc ?? "?",
    });
    return { logger: tui.logger, close: () => tui.close().forEach(io.write) };
  }
  if (args.logs === "tui") {
    io.write("--logs tui: stdout is not a terminal, printing console lines instead");
  }
  return { logger: consoleClientLogger(io.write), close() {} };
}

/**
 * Runs `train` until the run finishes or `signal` aborts. `terminal`: whether `write` reaches a
 * terminal (where `--logs tui` draws its screen).
 */
export async function train(
  args: TrainArgs,
  io: { write: (line: string) => void; signal?: AbortSignal; terminal?: boolean },
): Promise<void> {
  const metrics = args.metrics === null ? null : serveMetrics(args.runId, args.metrics);
  const chosen = chooseLogger(args, io);
  try {
    const logger = metrics === null ? chosen.logger : teeClientLogger(chosen.logger, metrics);
    if (metrics !== null) logger.log("metrics", { url: metrics.url });
    await trainWith(args, logger, io.signal);
  } finally {
    await metrics?.close();
    chosen.close();
  }
}

/** `--metrics-port`: the endpoint, or an error naming the flag when it cannot listen. */
function serveMetrics(runId: string, at: { hostname: string; port: number }) {
  try {
    return startClientMetrics({ runId, ...at });
  } catch (e) {
    throw new Error(
      `--metrics-port ${at.port}: cannot listen on ${at.hostname}:${at.port}: ${
        (e as Error).message
      }`,
    );
  }
}

async function trainWith(
  args: TrainArgs,
  logger: ClientLogger,
  signal: AbortSignal | undefined,
): Promise<void> {
  // A missing HF_TOKEN is a setup mistake: say so before joining the run.
  const env = (name: string) => Deno.env.get(name);
  const hub = hubTarget(args, env);
  const wallet = args.solana === undefined
    ? null
    : await loadWallet(args.solana.walletPrivateKeyPath);
  // On Solana the wallet key doubles as the libp2p identity unless one is given.
  const identity = wallet !== null && args.identitySecretKeyPath === null
    ? wallet.identity
    : await resolveIdentity(args.identitySecretKeyPath);
  // Missing eval datasets are a setup mistake: say so now, not after joining the run.
  for (const task of args.evals?.tasks ?? []) {
    await taskFolder(task, { tasksDir: args.evals?.tasksDir });
  }
  let client: TrainingClient | null = null;
  const exchange = await Exchange.start({
    runId: args.runId,
    secretKey: identity.secretKey,
    publicKey: identity.publicKey,
    host: args.bindP2pInterface,
    port: args.bindP2pPort,
    bootstrapPeers: args.bootstrapPeers,
    relays: args.relays,
    maxConcurrentDownloads: args.maxConcurrentDownloads,
    bulk: bulkOptions(args),
    logger,
    onChange: () => client?.poke(),
    faults: networkFaultsFromEnv(),
  });
  let backend: CoordinatorBackend | null = null;
  try {
    if (args.solana !== undefined && wallet !== null) {
      backend = await connectSolana(args.solana, {
        runId: args.runId,
        wallet,
        p2pIdentity: identity.publicKey,
        logger,
        signal,
        // The run's account names its relays and bootstrap peers: meet peers there.
        meet: (at) => {
          void exchange.useRelays(at.relays);
          void exchange.useBootstrapPeers(at.bootstrapPeers);
        },
      });
    } else {
      backend = await TcpBackend.connect({
        address: args.serverAddr ?? "",
        runId: args.runId,
        identity,
        signal,
        // Clients may start before their coordinator: wait for it, saying so.
        waitForCoordinator: true,
        onEvent: (e) => {
          // The coordinator names the run's relays on every connection: meet peers there.
          if (e.kind === "Relays") exchange.useRelays(e.addresses);
          else logConnection(logger, e);
        },
      });
    }
    logger.log("start", {
      identity: toHex(identity.publicKey),
      run_id: args.runId,
      p2p_addresses: exchange.node.addresses().map((a) => a.toString()),
      adapter: "webgpu",
    });
    client = new TrainingClient({
      backend,
      exchange,
      identity,
      logger,
      modelOverride: args.model,
      microBatch: args.microBatchSize,
      recompute: args.recompute,
      checkpointDir: args.checkpointDir,
      hub,
      hubDownload: hubDownload(args, env),
      retention: { deleteOldSteps: args.deleteOldSteps, keepSteps: args.keepSteps },
      faults: faultsFromEnv(),
      evals: args.evals === null ? null : new BackgroundEvals(args.evals, logger),
    });
    await client.run({ signal });
  } finally {
    await backend?.close();
    await exchange.close();
  }
}

/** Narrates the coordinator connection, so a client that lost it never waits in silence. */
export function logConnection(logger: ClientLogger, e: TcpBackendEvent): void {
  switch (e.kind) {
    case "Connected":
    case "Failed":
      return; // the start line and the run's error say these
    case "Disconnected":
      return logger.log("disconnected", { address: e.address, reason: e.reason });
    case "Reconnecting":
      return logger.log("reconnecting", {
        address: e.address,
        attempt: e.attempt,
        delay_ms: e.delayMs,
        error: e.error,
      });
    case "Reconnected":
      return logger.log("reconnected", { address: e.address, attempts: e.attempts });
    case "StatesSkipped":
      return logger.log("states_skipped", { skipped: e.skipped });
    case "Relays":
      return; // the exchange uses them, and says so
    default: {
      const unreachable: never = e;
      throw new Error(`unknown backend event ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * Test hooks that break the client on purpose, from the environment (never from a flag, so no
 * one turns them on by accident): `PSYCHE_FAULT_FLIP_WEIGHT_AFTER_STEP=N` changes one parameter
 * right after the apply of step N's results, as a bit flip or a bad apply would, so tests can
 * watch the run notice and the client resync; `PSYCHE_FAULT_SKIP_SNAPSHOT_ROUNDING=1` shares
 * the f32 masters unrounded at Cooldown even when the run's snapshot dtype is bf16;
 * `PSYCHE_FAULT_MISS_COOLDOWN=1` never hands the client a Cooldown state, as a backlog or a slow
 * follower may skip one; `PSYCHE_FAULT_ATTACK=negate` (or another of client/attacks.ts `ATTACKS`)
 * makes it a dishonest member, so tests watch verification catch it.
 */
function faultsFromEnv(): ClientFaults {
  const faults: {
    flipWeightAfterStep?: number;
    skipSnapshotRounding?: boolean;
    missCooldown?: boolean;
    attack?: Attack;
  } = {};
  const attack = Deno.env.get("PSYCHE_FAULT_ATTACK");
  if (attack !== undefined) faults.attack = parseAttack(attack);
  const flip = Deno.env.get("PSYCHE_FAULT_FLIP_WEIGHT_AFTER_STEP");
  if (flip !== undefined) {
    const step = Number(flip);
    if (!Number.isSafeInteger(step) || step < 0) {
      throw new RangeError(`PSYCHE_FAULT_FLIP_WEIGHT_AFTER_STEP must be a step, found "${flip}"`);
    }
    faults.flipWeightAfterStep = step;
  }
  const skip = Deno.env.get("PSYCHE_FAULT_SKIP_SNAPSHOT_ROUNDING");
  if (skip !== undefined) {
    if (skip !== "1") {
      throw new RangeError(`PSYCHE_FAULT_SKIP_SNAPSHOT_ROUNDING must be 1, found "${skip}"`);
    }
    faults.skipSnapshotRounding = true;
  }
  const miss = Deno.env.get("PSYCHE_FAULT_MISS_COOLDOWN");
  if (miss !== undefined) {
    if (miss !== "1") {
      throw new RangeError(`PSYCHE_FAULT_MISS_COOLDOWN must be 1, found "${miss}"`);
    }
    faults.missCooldown = true;
  }
  return faults;
}

/** Announcement kinds `PSYCHE_FAULT_LOSE_FIRST_GOSSIP` may name. */
const LOSABLE_KINDS = ["TrainingResult", "Finished", "PeerAddresses"] as const;

/**
 * Network faults, from the environment like `faultsFromEnv`:
 * `PSYCHE_FAULT_LOSE_FIRST_GOSSIP=TrainingResult,Finished` loses the first arriving copy of every
 * announcement of those kinds, as a lossy network would, so tests can watch the run recover it.
 */
function networkFaultsFromEnv(): ExchangeFaults {
  const lose = Deno.env.get("PSYCHE_FAULT_LOSE_FIRST_GOSSIP");
  if (lose === undefined) return {};
  const kinds = lose.split(",").map((k) => k.trim());
  const unknown = kinds.filter((k) => !(LOSABLE_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0 || lose.trim() === "") {
    throw new RangeError(
      `PSYCHE_FAULT_LOSE_FIRST_GOSSIP must list kinds among ${LOSABLE_KINDS.join(", ")}, ` +
        `found "${lose}"`,
    );
  }
  return { loseFirstCopy: kinds as (typeof LOSABLE_KINDS)[number][] };
}

/**
 * The Solana backend for `--rpc`: the run's account from its creator and id (or given),
 * followed through `--rpc` (and `--rpc-2`). `meet` gets the relays and bootstrap peers the
 * account names, first and whenever they change, as the TCP backend's `Relays` event does.
 */
export async function connectSolana(
  flags: SolanaTrainArgs,
  o: {
    runId: string;
    wallet: Awaited<ReturnType<typeof loadWallet>>;
    p2pIdentity: Uint8Array;
    logger: ClientLogger;
    meet: (at: MeetingPlaces) => void;
    signal?: AbortSignal;
  },
): Promise<SolanaBackend> {
  const programId = flags.programId === null ? DEFAULT_PROGRAM_ID : address(flags.programId);
  const coordinator = flags.coordinator !== null
    ? address(flags.coordinator)
    : await coordinatorAddress({
      mainAuthority: address(flags.mainAuthority ?? ""),
      runId: o.runId,
      programId,
    });
  const rpcs = [new SolanaRpcClient({ url: flags.rpc, wsUrl: flags.wsRpc ?? undefined })];
  if (flags.rpc2 !== null) {
    rpcs.push(new SolanaRpcClient({ url: flags.rpc2, wsUrl: flags.wsRpc2 ?? undefined }));
  }
  const claim = flags.claim === null ? undefined : {
    treasurerProgramId: flags.treasurerProgramId === null
      ? DEFAULT_TREASURER_PROGRAM_ID
      : address(flags.treasurerProgramId),
    destination: address(flags.claim),
  };
  return await SolanaBackend.connect({
    rpcs,
    wallet: o.wallet.signer,
    p2pIdentity: o.p2pIdentity,
    programId,
    coordinator,
    runId: o.runId,
    signal: o.signal,
    claim,
    depositTokenAccount: flags.depositTokenAccount === null
      ? undefined
      : address(flags.depositTokenAccount),
    onEvent: (e) => {
      if (e.kind === "Claimed") {
        o.logger.log("claimed", {
          points: e.points.toString(),
          total: e.total.toString(),
          treasury: e.treasury,
        });
      }
      if (e.kind === "SendFailed") o.logger.log("error", { what: e.what, error: e.error });
      if (e.kind === "SubscriptionLost") {
        o.logger.log("error", { what: "accountSubscribe", error: e.reason });
      }
      if (e.kind === "MeetingAddresses") {
        o.meet({ relays: e.relays, bootstrapPeers: e.bootstrapPeers });
      }
    },
  });
}

/** Prints the identity's public key (hex) and libp2p peer id. */
export async function showIdentity(path: string | null, write: (line: string) => void) {
  const identity = await resolveIdentity(path);
  write(`public key: ${toHex(identity.publicKey)}`);
  write(`peer id:    ${peerIdOf(identity.publicKey).toString()}`);
}

async function main(argv: string[]): Promise<number> {
  let args: ClientArgs;
  try {
    args = parseClientArgs(argv, denoEnv);
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n\n${USAGE}`);
    return EXIT_USAGE;
  }
  const write = (line: string) => console.log(line);
  try {
    switch (args.command) {
      case "help":
        console.log(clientHelp(args.topic));
        return EXIT_OK;
      case "show-identity":
        await showIdentity(args.identitySecretKeyPath, write);
        return EXIT_OK;
      case "train": {
        const controller = new AbortController();
        const unsubscribe = onStopRequest((reason) =>
          controller.abort(new Error(reason === "parent exited" ? reason : "interrupted"))
        );
        try {
          await train(args, {
            write,
            signal: controller.signal,
            terminal: Deno.stdout.isTerminal(),
          });
        } finally {
          unsubscribe();
        }
        return EXIT_OK;
      }
      default: {
        const unreachable: never = args;
        throw new Error(`unknown command ${JSON.stringify(unreachable)}`);
      }
    }
  } catch (e) {
    console.error(`client: ${(e as Error).message}`);
    return EXIT_FAILURE;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
