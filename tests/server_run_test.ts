/**
 * The TCP coordinator end to end: a `coordinator run` child process, clients over
 * TcpBackend that send real warmup witnesses and committee-selected witnesses, hostile
 * connections that must be refused without disturbing the run, a client that disconnects
 * (withdrawn), and a restart from the state saved at the epoch end.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  answerChallenge,
  decodeHandshakeMessage,
  encodeFrame,
  encodeHandshakeMessage,
  generateIdentity,
  type Identity,
  writeAll,
  writeFrame,
} from "../net/mod.ts";
import { testConfig, testModel } from "./support/coordinator_fixtures.ts";
import {
  framesUntilClosed,
  rawConnect,
  ScriptedClient,
  ServerProcess,
} from "./support/server_driver.ts";
import type { CoordinatorState } from "../coordinator/core/mod.ts";
import { equalBytes } from "../common/mod.ts";
import { runConfigToToml } from "../coordinator/config/mod.ts";
import { decodeServerMessage, encodeClientMessage } from "../coordinator/server/mod.ts";
import { BackendError, TcpBackend } from "../client/backend/mod.ts";

const RUN_ID = "tcp-e2e";

/** A run with 1-2 s timers: an epoch is over in about ten seconds. */
function stateToml(): string {
  return runConfigToToml({
    runId: RUN_ID,
    runState: "WaitingForMembers",
    config: testConfig({
      warmupTime: 3,
      cooldownTime: 1,
      maxRoundTrainTime: 2,
      roundWitnessTime: 1,
      epochTime: 4,
      totalSteps: 1000,
      initMinClients: 3,
      minClients: 2,
      witnessNodes: 0,
      waitingForMembersExtraTime: 1,
      globalBatchSizeStart: 6,
      globalBatchSizeEnd: 6,
      maxClients: 8,
    }),
    model: testModel({ coldStartWarmupSteps: 0 }),
    progress: { epoch: 0, step: 1, epochStartDataIndex: 0 },
  });
}

async function client(address: string, identity = generateIdentity()): Promise<ScriptedClient> {
  const backend = await TcpBackend.connect({ address, runId: RUN_ID, identity });
  return new ScriptedClient(backend);
}

function withdrawn(state: CoordinatorState, key: Uint8Array): boolean {
  return [...state.epochState.clients, ...state.epochState.exitedClients].some((c) =>
    equalBytes(c.id.signer, key) && c.state === "Withdrawn"
  );
}

/** The frames a hostile peer gets back (all of them: the server must close). */
async function hostile(
  address: string,
  script: (raw: Awaited<ReturnType<typeof rawConnect>>) => Promise<void>,
): Promise<Uint8Array[]> {
  const raw = await rawConnect(address);
  await script(raw);
  return await framesUntilClosed(raw);
}

async function readChallenge(raw: Awaited<ReturnType<typeof rawConnect>>) {
  const frame = await raw.frames.next();
  assert.ok(frame !== null);
  const msg = decodeHandshakeMessage(frame);
  assert.equal(msg.kind, "Challenge");
  return msg as Extract<typeof msg, { kind: "Challenge" }>;
}

async function authenticate(raw: Awaited<ReturnType<typeof rawConnect>>, id: Identity) {
  const challenge = await readChallenge(raw);
  const answer = answerChallenge(id.secretKey, challenge.context, challenge.nonce);
  await writeFrame(raw.conn, encodeHandshakeMessage({ kind: "ChallengeResponse", ...answer }));
  const verdict = await raw.frames.next();
  assert.equal(decodeHandshakeMessage(verdict!).kind, "Accepted");
}

function rejection(frames: Uint8Array[]): string {
  const last = frames.at(-1);
  assert.ok(last !== undefined, "the server sent no rejection before closing");
  const msg = decodeHandshakeMessage(last);
  assert.equal(msg.kind, "Rejected");
  return (msg as { reason: string }).reason;
}

function refusal(frames: Uint8Array[]): string {
  const msg = decodeServerMessage(frames.at(-1)!);
  assert.equal(msg.kind, "Refused");
  return (msg as { reason: string }).reason;
}

Deno.test("a TCP run: epochs, hostile peers refused, disconnect withdraws, restart resumes", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "server-run-" });
  const statePath = join(dir, "state.toml");
  const saveDir = join(dir, "saved");
  await Deno.writeTextFile(statePath, stateToml());
  const server = ServerProcess.start(["--state", statePath, "--save-state-dir", saveDir]);
  const clients: ScriptedClient[] = [];
  let savedPath = "";
  let savedStep = 0;
  try {
    const address = await server.address();
    for (let i = 0; i < 3; i++) clients.push(await client(address));
    for (const c of clients) c.start();
    await Promise.all(clients.map((c) => c.backend.join()));
    const [a, b, leaver] = clients;

    await t.step("three clients join and the run reaches training", async () => {
      const s = await a.waitFor((s) => s.runState === "RoundTrain", 15_000, "RoundTrain");
      assert.equal(s.epochState.clients.length, 3);
    });

    await t.step("hostile connections are refused, each on its own", async () => {
      // Garbage instead of a handshake answer.
      let frames = await hostile(address, async (raw) => {
        await readChallenge(raw);
        await writeFrame(raw.conn, new Uint8Array([0xde, 0xad, 0xbe, 0xef]));
      });
      assert.match(rejection(frames), /handshake message/);
      // An oversized frame: only the 4-byte length prefix is needed.
      frames = await hostile(address, async (raw) => {
        await readChallenge(raw);
        const header = new Uint8Array(4);
        new DataView(header.buffer).setUint32(0, 9 * 1024 * 1024);
        await writeAll(raw.conn, header);
      });
      // Before the handshake, no frame may be longer than the run's largest client message.
      assert.match(rejection(frames), /Frame of 9437184 bytes exceeds the maximum of 1024 bytes/);
      // A signature by another key: unauthenticated.
      frames = await hostile(address, async (raw) => {
        const challenge = await readChallenge(raw);
        const answer = answerChallenge(
          generateIdentity().secretKey,
          challenge.context,
          challenge.nonce,
        );
        answer.publicKey = generateIdentity().publicKey;
        await writeFrame(
          raw.conn,
          encodeHandshakeMessage({ kind: "ChallengeResponse", ...answer }),
        );
      });
      assert.match(rejection(frames), /invalid signature/);
      // A protocol message before the handshake.
      frames = await hostile(address, async (raw) => {
        await writeFrame(
          raw.conn,
          encodeClientMessage({ kind: "Join", requestId: 1, runId: RUN_ID }),
        );
      });
      assert.ok(rejection(frames).length > 0);
      // Authenticated, then a garbage frame: Refused, naming the problem.
      frames = await hostile(address, async (raw) => {
        await authenticate(raw, generateIdentity());
        await writeAll(raw.conn, encodeFrame(new Uint8Array([0, 0, 0, 0, 1, 0, 200])));
      });
      assert.match(refusal(frames), /Join: field "runId"/);
      // Authenticated, then an oversized frame.
      frames = await hostile(address, async (raw) => {
        await authenticate(raw, generateIdentity());
        const header = new Uint8Array(4);
        new DataView(header.buffer).setUint32(0, 0xffff_ffff);
        await writeAll(raw.conn, header);
      });
      assert.match(refusal(frames), /Frame of 4294967295 bytes exceeds the maximum/);
      // Authenticated with the wrong run id.
      const wrong = await TcpBackend.connect({
        address,
        runId: "not-this-run",
        identity: generateIdentity(),
      });
      await assert.rejects(
        wrong.join(),
        (e) =>
          e instanceof BackendError && e.kind === "Refused" &&
          e.message.includes(`"not-this-run"`) && e.message.includes(`"${RUN_ID}"`),
      );
      await wrong.close();
    });

    await t.step("a client that disconnects is withdrawn; the others keep training", async () => {
      const key = leaver.backend.identity.signer;
      await leaver.stop();
      const s = await a.waitFor((s) => withdrawn(s, key), 5_000, "the leaver withdrawn");
      assert.ok(["RoundTrain", "RoundWitness"].includes(s.runState));
      const before = s.progress.step;
      await a.waitFor((s) => s.progress.step >= before + 2, 10_000, "two more steps");
    });

    await t.step("a client joining during training waits for the next epoch", async () => {
      const joiner = await client(address);
      clients.push(joiner);
      joiner.start();
      await joiner.backend.join();
      const s = a.backend.latest()!;
      assert.equal(s.progress.epoch, 0);
      assert.ok(
        !s.epochState.clients.some((c) => equalBytes(c.id.signer, joiner.backend.identity.signer)),
      );
    });

    await t.step("the epoch ends, is saved, and the next epoch starts with three", async () => {
      const next = await a.waitFor(
        (s) => s.progress.epoch === 1 && s.runState === "Warmup",
        30_000,
        "epoch 1 Warmup",
      );
      assert.equal(next.epochState.clients.length, 3);
      assert.ok(!withdrawn(next, leaver.backend.identity.signer));
      const states = a.seen.filter((o) => o.epoch === 0).map((o) => o.runState);
      for (const s of ["WaitingForMembers", "Warmup", "RoundTrain", "RoundWitness", "Cooldown"]) {
        assert.ok(states.includes(s as never), `client A never saw ${s}: ${states.join(",")}`);
      }
      const saved = await server.waitForEvent((e) => e.event === "saved", 5_000, "Saved");
      savedPath = String(saved.path);
      savedStep = Number(saved.step);
      assert.equal(savedPath, join(saveDir, `${RUN_ID}-step${savedStep}.toml`));
      assert.ok(savedStep > 4, `an epoch runs at least 4 steps, saved at ${savedStep}`);
      assert.deepEqual(a.errors, []);
      assert.deepEqual(b.errors, []);
      const witnesses = server.events.filter((e) => e.event === "witness");
      assert.ok(witnesses.length >= 8, `only ${witnesses.length} witnesses logged`);
    });
  } finally {
    for (const c of clients) await c.stop();
    const code = await server.stop();
    if (savedPath === "") await Deno.remove(dir, { recursive: true });
    assert.equal(code, 0, `server stderr: ${server.stderr.join("\n")}`);
  }

  await t.step({
    name: "a restarted server resumes from the saved state",
    ignore: savedPath === "",
    fn: async () => {
      const resumed = ServerProcess.start(["--state", savedPath]);
      try {
        const listening = await resumed.waitForEvent(
          (e) => e.event === "listening",
          15_000,
          "Listening",
        );
        assert.equal(listening.step, savedStep);
        assert.equal(listening.epoch, 1);
        const watcher = await client(String(listening.address));
        try {
          const s = await watcher.waitFor(() => true, 5_000, "a state");
          assert.equal(s.progress.step, savedStep);
          assert.equal(s.runState, "WaitingForMembers");
          assert.equal(s.model.checkpoint.kind, "P2P");
        } finally {
          await watcher.stop();
        }
      } finally {
        assert.equal(await resumed.stop(), 0);
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
});

Deno.test("coordinator run --relay on every interface, with the task's permissions, names its relay", async () => {
  const dir = await Deno.makeTempDir({ prefix: "server-relay-" });
  const statePath = join(dir, "state.toml");
  await Deno.writeTextFile(statePath, stateToml());
  // On 0.0.0.0 the relay lists the interfaces it is reachable on, which needs --allow-sys.
  const server = ServerProcess.start(["--state", statePath, "--relay", "--hostname", "0.0.0.0"]);
  try {
    const relay = await server.waitForEvent((e) => e.event === "relay", 15_000, "relay");
    const addresses = relay.addresses as string[];
    assert.ok(addresses.some((a) => a.startsWith("/ip4/127.0.0.1/tcp/")), String(addresses));
    const port = (await server.address()).split(":").at(-1);
    const told: string[][] = [];
    const backend = await TcpBackend.connect({
      address: `127.0.0.1:${port}`,
      runId: RUN_ID,
      identity: generateIdentity(),
      onEvent: (e) => {
        if (e.kind === "Relays") told.push(e.addresses);
      },
    });
    try {
      for (let i = 0; i < 250 && told.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.deepEqual(told, [addresses]);
    } finally {
      await backend.close();
    }
  } finally {
    assert.equal(await server.stop(), 0, server.stderr.join("\n"));
    await Deno.remove(dir, { recursive: true });
  }
});
