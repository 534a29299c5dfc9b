/**
 * `coordinator run --data-config`: the data server runs in-process and admits exactly the
 * epoch's clients, each for its own batch of the current round.
 */
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { generateIdentity } from "../net/mod.ts";
import { testConfig, testModel, warmupReport } from "./support/coordinator_fixtures.ts";
import type { CliIo } from "../cli/entry.ts";
import {
  type CoordinatorState,
  currentRound,
  NO_DIGEST,
  roundAssignments,
} from "../coordinator/core/mod.ts";
import { runCommand } from "../coordinator/server/mod.ts";
import { equalBytes } from "../common/mod.ts";
import { runConfigToToml } from "../coordinator/config/mod.ts";
import { TcpDataProvider } from "../data/mod.ts";
import { freePort } from "../client/testnet/mod.ts";
import { TcpBackend } from "../client/backend/mod.ts";

const CORPUS = resolve(new URL("../data/corpus/brown/train", import.meta.url).pathname);

async function nextState(
  backend: TcpBackend,
  predicate: (s: CoordinatorState) => boolean,
): Promise<CoordinatorState> {
  for await (const s of backend.states({ signal: AbortSignal.timeout(10_000) })) {
    if (predicate(s)) return s;
  }
  throw new Error(`no matching state; last ${backend.latest()?.runState}`);
}

Deno.test("the in-process data server serves each epoch client its own batch only", async () => {
  const dir = await Deno.makeTempDir({ prefix: "server-data-" });
  const dataPort = freePort();
  const statePath = join(dir, "state.toml");
  const dataPath = join(dir, "data.toml");
  await Deno.writeTextFile(
    statePath,
    runConfigToToml({
      runId: "data-run",
      runState: "WaitingForMembers",
      config: testConfig({
        warmupTime: 5,
        maxRoundTrainTime: 10,
        epochTime: 30,
        initMinClients: 2,
        minClients: 2,
        waitingForMembersExtraTime: 1,
        globalBatchSizeStart: 4,
        globalBatchSizeEnd: 4,
        maxClients: 8,
      }),
      model: testModel({
        maxSeqLen: 32,
        coldStartWarmupSteps: 0,
        dataLocation: { kind: "Server", address: `127.0.0.1:${dataPort}` },
      }),
      progress: { epoch: 0, step: 1, epochStartDataIndex: 0 },
    }),
  );
  const seed = Array.from({ length: 32 }, (_, i) => i).join(", ");
  await Deno.writeTextFile(
    dataPath,
    `dir = ${JSON.stringify(CORPUS)}\ntoken_size = "TwoBytes"\nseq_len = 32\n` +
      `shuffle_seed = [${seed}]\n`,
  );

  const lines: string[] = [];
  let listening: (address: string) => void;
  const address = new Promise<string>((resolve) => listening = resolve);
  const io: CliIo = {
    readTextFile: (p) => Deno.readTextFile(p),
    isDirectory: () => Promise.resolve(true),
    out: (line) => {
      lines.push(line);
      const e = JSON.parse(line);
      if (e.event === "listening") listening(e.address);
    },
    err: (line) => lines.push(line),
  };
  let stop: () => void;
  const stopped = new Promise<void>((resolve) => stop = resolve);
  const running = runCommand(
    ["--state", statePath, "--data-config", dataPath, "--hostname", "127.0.0.1", "--logs", "json"],
    io,
    { stop: stopped },
  );
  const ids = [generateIdentity(), generateIdentity()];
  const backends: TcpBackend[] = [];
  const providers: TcpDataProvider[] = [];
  try {
    const where = await Promise.race([
      address,
      running.then((code) => {
        throw new Error(`run exited ${code}: ${lines.join("\n")}`);
      }),
    ]);
    for (const identity of ids) {
      const b = await TcpBackend.connect({ address: where, runId: "data-run", identity });
      backends.push(b);
      await b.join();
    }
    const warm = await nextState(backends[0], (s) => s.runState === "Warmup");
    for (const b of backends) {
      const index = warm.epochState.clients.findIndex((c) =>
        equalBytes(c.id.signer, b.identity.signer)
      );
      await b.sendWarmupWitness(warmupReport(warm, index), NO_DIGEST);
    }
    const train = await nextState(backends[0], (s) => s.runState === "RoundTrain");
    const assignments = roundAssignments(train, currentRound(train));
    assert.equal(assignments.length, 2);

    const dataAddress = `127.0.0.1:${dataPort}`;
    for (const a of assignments) {
      const key = train.epochState.clients[a.clientIndex].id.signer;
      const identity = ids.find((id) => equalBytes(id.publicKey, key))!;
      const provider = await TcpDataProvider.connect(dataAddress, {
        secretKey: identity.secretKey,
        timeoutMs: 5000,
      });
      providers.push(provider);
      const batch = await provider.getSamples(a.batch);
      assert.equal(batch.count, a.batch.end - a.batch.start + 1);
      assert.equal(batch.tokens.length, batch.count * 32);
      const other = assignments.find((x) => x !== a)!;
      await assert.rejects(provider.getSamples(other.batch), /WrongDataIdForStep/);
    }
    const stranger = await TcpDataProvider.connect(dataAddress, {
      secretKey: generateIdentity().secretKey,
      timeoutMs: 5000,
    });
    providers.push(stranger);
    await assert.rejects(stranger.getSamples(assignments[0].batch), /NotInThisRound/);
    assert.ok(lines.some((l) => JSON.parse(l).event === "data_refused"));
  } finally {
    for (const p of providers) await p.close();
    for (const b of backends) await b.close();
    stop!();
    assert.equal(await running, 0);
    await Deno.remove(dir, { recursive: true });
  }
});
