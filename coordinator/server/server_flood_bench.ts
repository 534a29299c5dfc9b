/**
 * The coordinator server under attack, each figure against a baseline in the same run
 * (docs/benchmarks.md, "Coordinator under attack"):
 *
 * - join: a legitimate client connects, handshakes and joins (then leaves), on a quiet
 *   server, with 4,000 idle authenticated hostile connections open (fresh keys, as the
 *   attack measured on main that locked real clients out at the 4,096-connection cap), and
 *   at a cap those connections fill (each join evicts one, and stays);
 * - requests: an honest member's request round trip with no flood, and while two
 *   connections stream 65,535-entry health checks (5.3 MB frames: refused from their
 *   header, so the attacker reconnects and tries again), or stream the largest health
 *   checks the run allows, full of garbage, from non-members (answered from their head,
 *   throttled by the byte bucket).
 *
 * The attackers run in their own process at the lowest priority
 * (tests/support/coordinator_attacker.ts), so their key generation and writes compete as
 * little as they can with the server's thread: a remote attacker's CPU is not the server's. One attack at a time: each
 * bench puts the attack it needs in place before its measured part. Everything runs on
 * 127.0.0.1, so the join group's server lifts the per-address limits (4,000 connections
 * from one address); the requests group's server keeps the defaults (16 connections per
 * address, 1.6 new ones a second), as if the attacker had one address, and lifts only the
 * message rate (the honest client sends back to back); byte rates are the defaults.
 *
 * On a machine this small (2 cores, shared) the attacker's own work slows the server as
 * much as anything the server does, so pin the bench to one CPU; the attacker is pinned to
 * the last one:
 *
 *     taskset -c 0 deno bench -A coordinator/server/server_flood_bench.ts
 */
import { generateIdentity } from "../../net/mod.ts";
import { type AttackerCommand, AttackerProcess } from "../../tests/support/coordinator_attacker.ts";
import { testConfig, testModel, testState } from "../../tests/support/coordinator_fixtures.ts";
import { CoordinatorHost } from "./host.ts";
import { clientFrameLimits } from "./protocol.ts";
import { defaultRateLimits, startCoordinatorServer } from "./server.ts";
import { createCoordinator } from "../core/mod.ts";
import { TcpBackend } from "../../client/backend/mod.ts";

const MAX_CLIENTS = 256;
const IDLE_CONNECTIONS = 4000;

/** A run that stays in WaitingForMembers: joiners come and go without starting an epoch. */
function waitingHost(): CoordinatorHost {
  return new CoordinatorHost({
    state: testState({ maxClients: MAX_CLIENTS, initMinClients: 200, minClients: 2 }, 0),
    withdrawOnDisconnect: true,
  });
}
const limits = clientFrameLimits(MAX_CLIENTS);
const joinServer = startCoordinatorServer({
  host: waitingHost(),
  hostname: "127.0.0.1",
  maxConnectionsPerAddress: 100_000, // every peer is on 127.0.0.1
  idleTimeoutMs: 3_600_000, // the idle connections stay for the whole bench
});
// A paused run (joins pile up in the pending list, nothing else moves) at a cap the idle
// connections fill: every join must evict one of them, and stays connected, so it stays full.
const capServer = startCoordinatorServer({
  host: new CoordinatorHost({
    state: createCoordinator({
      runId: "test-run",
      config: testConfig({ maxClients: MAX_CLIENTS }),
      model: testModel(),
      now: 0,
      paused: true,
    }),
    withdrawOnDisconnect: true,
  }),
  hostname: "127.0.0.1",
  maxConnections: IDLE_CONNECTIONS,
  maxConnectionsPerAddress: 100_000,
  idleTimeoutMs: 3_600_000,
});
const requestServer = startCoordinatorServer({
  host: waitingHost(),
  hostname: "127.0.0.1",
  // The honest client sends back to back, over any default rate: lift the message rate and
  // raise the byte rate 16-fold (1 MiB a second); the attackers get the same.
  rateLimits: {
    ...defaultRateLimits(limits),
    messagesPerSecond: 1e9,
    messageBurst: 1e9,
    bytesPerSecond: 1024 * 1024,
  },
});

// The attacker on the last CPU; run the bench itself on another one (see above).
const attackerProcess = new AttackerProcess({ cpu: navigator.hardwareConcurrency - 1 });
function attacker(command: AttackerCommand): Promise<Record<string, number>> {
  return attackerProcess.send(command);
}

type Attack = "none" | "idle" | "full" | "floodHuge" | "floodGarbage";
let current: Attack = "none";
/** Puts `attack` in place (stopping the previous one); a no-op when it already is. */
async function ensure(attack: Attack): Promise<void> {
  if (attack === current) return;
  const stopped = await attacker({ cmd: "stop" });
  if (current !== "none") console.error(`attack ${current} stopped:`, stopped);
  current = attack;
  const address = attack === "idle"
    ? joinServer.address
    : attack === "full"
    ? capServer.address
    : requestServer.address;
  switch (attack) {
    case "none":
      return;
    case "idle":
    case "full": {
      const { opened } = await attacker({ cmd: "idle", address, count: IDLE_CONNECTIONS });
      console.error(`${opened} idle hostile connections open`);
      return;
    }
    case "floodHuge":
      await attacker({ cmd: "floodHuge", address, connections: 2 });
      break;
    case "floodGarbage":
      await attacker({
        cmd: "floodGarbage",
        address,
        connections: 2,
        frameBytes: limits.HealthCheck,
        entries: MAX_CLIENTS,
      });
      break;
  }
  await new Promise((r) => setTimeout(r, 500)); // let the flood ramp up
}

/** Connects, handshakes and joins; leaves again unless `stay`. */
async function joinOnce(address = joinServer.address, stay?: TcpBackend[]): Promise<void> {
  const backend = await TcpBackend.connect({
    address,
    runId: "test-run",
    identity: generateIdentity(),
    reconnect: false,
  });
  await backend.join();
  if (stay === undefined) await backend.close();
  else stay.push(backend);
}
const stayed: TcpBackend[] = [];

// Warm both paths up (ed25519 tables, JIT) so the first group does not pay for it.
for (let i = 0; i < 50; i++) await joinOnce();

Deno.bench("join on a quiet server", { group: "join", baseline: true }, async (b) => {
  await ensure("none");
  b.start();
  await joinOnce();
  b.end();
});

Deno.bench(
  `join with ${IDLE_CONNECTIONS} idle hostile connections open`,
  { group: "join" },
  async (b) => {
    await ensure("idle");
    b.start();
    await joinOnce();
    b.end();
  },
);

Deno.bench(
  `join at a cap full of ${IDLE_CONNECTIONS} idle hostile connections (evicts one each)`,
  { group: "join" },
  async (b) => {
    await ensure("full");
    b.start();
    await joinOnce(capServer.address, stayed);
    b.end();
  },
);

const member = await TcpBackend.connect({
  address: requestServer.address,
  runId: "test-run",
  identity: generateIdentity(),
});
await member.join();
const repo = { kind: "Hub" as const, repo: { repoId: "org/m", revision: null } };
async function requestOnce(): Promise<void> {
  await member.sendCheckpoint(repo).catch(() => {}); // answered Error: not in an epoch
}

Deno.bench("request round trip, no flood", { group: "requests", baseline: true }, async (b) => {
  await ensure("none");
  b.start();
  await requestOnce();
  b.end();
});

Deno.bench(
  "request round trip, 2 connections streaming 5.3 MB health checks",
  { group: "requests" },
  async (b) => {
    await ensure("floodHuge");
    b.start();
    await requestOnce();
    b.end();
  },
);

Deno.bench(
  `request round trip, 2 non-members streaming ${limits.HealthCheck}-byte garbage health checks`,
  { group: "requests" },
  async (b) => {
    await ensure("floodGarbage");
    b.start();
    await requestOnce();
    b.end();
  },
);

globalThis.addEventListener("unload", () => {
  attackerProcess.close();
  for (const backend of stayed) backend.close();
  member.close();
  joinServer.close();
  requestServer.close();
  capServer.close();
});
