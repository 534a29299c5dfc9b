import assert from "node:assert/strict";
import { testConfig, testModel } from "../tests/support/coordinator_fixtures.ts";
import { MemoryCoordinator } from "./backend/memory.ts";
import { TrainingClient } from "./client.ts";
import { Exchange } from "./exchange.ts";
import type { ClientEventName, ClientEvents, ClientLogger } from "./log.ts";
import { DataVocabularyError } from "./data_check.ts";
import { closing } from "../data/testing/fixtures.ts";
import {
  type Checkpoint,
  type CoordinatorState,
  createCoordinator,
} from "../coordinator/core/mod.ts";
import { CoordinatorHost } from "../coordinator/server/mod.ts";
import type { DataLocation, OptimizerDefinition } from "../common/mod.ts";
import { LocalDataProvider, startDataServer } from "../data/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { readModelDir } from "../model/mod.ts";
import { identityFromSecretKey } from "../net/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const T = 16;

type Logged = { event: ClientEventName; fields: ClientEvents[ClientEventName] };

/** llama-tiny (vocab_size 512), initialised from the run's seed: nothing to download. */
const TINY_CHECKPOINT: Checkpoint = {
  kind: "Dummy",
  repo: { repoId: `${ROOT}config/models/llama-tiny`, revision: null },
};

const DISTRO: OptimizerDefinition = {
  kind: "Distro",
  clipGradNorm: 1,
  weightDecay: 0.1,
  compressionDecay: 0.999,
  compressionTopk: 4,
  compressionChunk: 64,
  quantize1bit: true,
};

/** Writes `${dir}/data/train.bin`: 64 sequences of T two-byte token ids, each below `vocab`. */
async function writeTrainData(dir: string, vocab: number): Promise<void> {
  const tokens = Uint16Array.from({ length: 64 * T }, (_, i) => (i * 37 + 11) % vocab);
  await Deno.mkdir(`${dir}/data`);
  await Deno.writeFile(`${dir}/data/train.bin`, new Uint8Array(tokens.buffer));
}

/** An in-process coordinator of `state` whose clock gains a second (and ticks) every `msPerSecond`. */
function tickingCoordinator(
  state: CoordinatorState,
  msPerSecond: number,
): { coordinator: MemoryCoordinator; stop: () => void } {
  let now = 0;
  const coordinator = new MemoryCoordinator({
    host: new CoordinatorHost({ state, withdrawOnDisconnect: true }),
    clock: () => now,
  });
  const timer = setInterval(() => {
    now += 1;
    coordinator.tick();
  }, msPerSecond);
  return { coordinator, stop: () => clearInterval(timer) };
}

Deno.test({
  name: "TrainingClient: two clients on an in-process coordinator train to Finished in step",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir();
    await writeTrainData(dir, 512);
    const state = createCoordinator({
      runId: "client-test",
      config: testConfig({
        initMinClients: 2,
        minClients: 1,
        witnessNodes: 0,
        globalBatchSizeStart: 4,
        globalBatchSizeEnd: 4,
        totalSteps: 5,
        epochTime: 100,
        warmupTime: 60,
        maxRoundTrainTime: 30,
        roundWitnessTime: 1,
        cooldownTime: 1,
      }),
      model: testModel({
        maxSeqLen: T,
        coldStartWarmupSteps: 0,
        dataLocation: { kind: "Local", path: `${dir}/data` },
        checkpoint: TINY_CHECKPOINT,
        lrSchedule: { kind: "Constant", baseLr: 5e-3, warmupSteps: 0, warmupInitLr: 0 },
        optimizer: DISTRO,
      }),
      now: 0,
    });
    const { coordinator, stop } = tickingCoordinator(state, 150);
    const rt = await GpuRuntime.create();
    const logs: Logged[][] = [[], []];
    const exchanges: Exchange[] = [];
    try {
      const clients: TrainingClient[] = [];
      for (let i = 0; i < 2; i++) {
        const identity = identityFromSecretKey(new Uint8Array(32).fill(40 + i));
        const logger: ClientLogger = { log: (event, fields) => logs[i].push({ event, fields }) };
        const exchange = await Exchange.start({
          runId: "client-test",
          secretKey: identity.secretKey,
          publicKey: identity.publicKey,
          bootstrapPeers: exchanges.flatMap((e) => e.node.addresses().map(String)),
          logger,
          onChange: () => clients[i]?.poke(),
          gossipHeartbeatMs: 100,
        });
        exchanges.push(exchange);
        clients.push(
          new TrainingClient({
            backend: coordinator.connect(identity.publicKey, "client-test"),
            exchange,
            identity,
            logger,
            rt,
            checkpointDir: `${dir}/checkpoints${i}`,
          }),
        );
      }
      const reasons = await Promise.all(clients.map((c) => c.run()));
      assert.deepEqual(reasons, ["Finished", "Finished"]);
      const applies = logs.map((l) =>
        l.filter((e) => e.event === "apply").map((e) => {
          const f = e.fields as ClientEvents["apply"];
          return `${f.step}:${f.applied}:${f.untrained_batches}:${f.params_hash}`;
        })
      );
      // Rounds 0..3 train steps 1..4; rounds 2 and 3 apply steps 1 and 2; Cooldown applies 3.
      assert.deepEqual(applies[0].map((a) => a.split(":").slice(0, 3).join(":")), [
        "1:2:0",
        "2:2:0",
        "3:2:0",
      ]);
      assert.deepEqual(applies[1], applies[0]);
      const trained = logs.flat().filter((e) => e.event === "train");
      assert.equal(trained.length, 8, "two clients × four rounds");
      for (const l of logs) {
        assert.deepEqual(l.filter((e) => e.event === "error"), []);
        assert.equal(l.filter((e) => e.event === "checkpoint").length, 1);
        // Each long phase said how far it got: the seeded init, its digest, the upload, the
        // warm-up's stages and the checkpoint's write, in that order.
        const said = l.map((e) =>
          e.event === "model_load" ? `${e.event}:${(e.fields as { phase: string }).phase}` : e.event
        ).filter((name) =>
          /^(model_load|model_upload|warmup_stage|warmup|checkpoint_progress|checkpoint)(:|$)/.test(
            name,
          )
        );
        assert.deepEqual([...new Set(said)], [
          "model_load:seeded_init",
          "model_load:digest",
          "model_upload",
          "warmup_stage",
          "warmup",
          "checkpoint_progress",
          "checkpoint",
        ]);
        assert.ok(l.some((e) => e.event === "witness"), "both clients hold witness seats");
      }
    } finally {
      stop();
      for (const e of exchanges) await e.close();
      rt[Symbol.dispose]();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/**
 * One client of a run whose model (llama-tiny, vocab_size 512) cannot read its data (token ids up
 * to 31,999), served from `dataLocation`: `run()` must stop with DataVocabularyError at load,
 * before any GPU work (no runtime is given, so creating one would be the only GPU use).
 */
async function runMismatched(
  dataLocation: DataLocation,
): Promise<{ error: unknown; logs: Logged[] }> {
  const state = createCoordinator({
    runId: "vocab-test",
    config: testConfig({
      initMinClients: 1,
      minClients: 1,
      globalBatchSizeStart: 2,
      globalBatchSizeEnd: 2,
    }),
    model: testModel({
      maxSeqLen: T,
      coldStartWarmupSteps: 0,
      dataLocation,
      checkpoint: TINY_CHECKPOINT,
    }),
    now: 0,
  });
  const { coordinator, stop } = tickingCoordinator(state, 50);
  const identity = identityFromSecretKey(new Uint8Array(32).fill(60));
  const logs: Logged[] = [];
  const logger: ClientLogger = { log: (event, fields) => logs.push({ event, fields }) };
  const exchange = await Exchange.start({
    runId: "vocab-test",
    secretKey: identity.secretKey,
    publicKey: identity.publicKey,
    logger,
    onChange: () => client.poke(),
  });
  const client: TrainingClient = new TrainingClient({
    backend: coordinator.connect(identity.publicKey, "vocab-test"),
    exchange,
    identity,
    logger,
  });
  try {
    await client.run({ signal: AbortSignal.timeout(60_000) });
    return { error: undefined, logs };
  } catch (error) {
    return { error, logs };
  } finally {
    stop();
    await exchange.close();
  }
}

Deno.test({
  name: "TrainingClient: a model that cannot read its data stops the client at load, in one line",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await writeTrainData(dir, 32000);
      const local = await runMismatched({ kind: "Local", path: `${dir}/data` });
      assert.ok(local.error instanceof DataVocabularyError, String(local.error));
      assert.match(
        local.error.message,
        /^The model's vocabulary \(vocab_size 512 \(.*llama-tiny\)\) cannot read the run's data: .*train\.bin: token id >= vocab size 512 \(\d+\) at byte offset \d+$/,
      );
      assert.deepEqual(local.logs.at(-1), { event: "end", fields: { reason: "Failed" } });
      assert.ok(!local.logs.some((l) => l.event === "model"), "the model was never built on a GPU");

      // The TCP data server sends tokens unchecked: the client compares them itself.
      await using provider = closing(
        await LocalDataProvider.open(`${dir}/data`, { seqLen: T, tokenSize: "TwoBytes" }),
      );
      await using server = startDataServer({ provider, authorize: () => "Allowed" });
      const tcp = await runMismatched({ kind: "Server", address: server.address });
      assert.ok(tcp.error instanceof DataVocabularyError, String(tcp.error));
      assert.match(
        tcp.error.message,
        /cannot read the run's data: sequence 0 holds token id \d+ at position \d+$/,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "TrainingClient: interrupted, it saves its parameters atomically before leaving",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir();
    await writeTrainData(dir, 512);
    const state = createCoordinator({
      runId: "exit-test",
      config: testConfig({
        initMinClients: 1,
        minClients: 1,
        witnessNodes: 0,
        globalBatchSizeStart: 2,
        globalBatchSizeEnd: 2,
        totalSteps: 50,
        epochTime: 1000,
        warmupTime: 60,
        maxRoundTrainTime: 30,
        roundWitnessTime: 1,
        cooldownTime: 1,
      }),
      model: testModel({
        maxSeqLen: T,
        coldStartWarmupSteps: 0,
        dataLocation: { kind: "Local", path: `${dir}/data` },
        checkpoint: TINY_CHECKPOINT,
        optimizer: DISTRO,
      }),
      now: 0,
    });
    const { coordinator, stop } = tickingCoordinator(state, 150);
    const identity = identityFromSecretKey(new Uint8Array(32).fill(70));
    const logs: Logged[] = [];
    const interrupt = new AbortController();
    const logger: ClientLogger = {
      log: (event, fields) => {
        logs.push({ event, fields });
        // SIGINT as client/main.ts delivers it: the run's signal aborts mid-run.
        if (event === "apply") interrupt.abort(new Error("interrupted"));
      },
    };
    const exchange = await Exchange.start({
      runId: "exit-test",
      secretKey: identity.secretKey,
      publicKey: identity.publicKey,
      logger,
      onChange: () => client.poke(),
    });
    const client: TrainingClient = new TrainingClient({
      backend: coordinator.connect(identity.publicKey, "exit-test"),
      exchange,
      identity,
      logger,
      checkpointDir: `${dir}/checkpoints`,
    });
    try {
      // A run that never applies (a hang) ends by the timeout, and fails the check below.
      const signal = AbortSignal.any([interrupt.signal, AbortSignal.timeout(180_000)]);
      assert.equal(await client.run({ signal }), "Aborted");
      assert.ok(interrupt.signal.aborted, "interrupted after an apply");
      const saved = logs.find((l) => l.event === "saved_on_exit")?.fields as
        | ClientEvents["saved_on_exit"]
        | undefined;
      assert.ok(saved !== undefined && saved.dir !== null, JSON.stringify(saved));
      const expected = saved.step === null
        ? "exit-test-interrupted"
        : `exit-test-step${saved.step}`;
      assert.equal(saved.dir, `${dir}/checkpoints/${expected}`);
      // The save said how far it got before it said where it went.
      const progress = logs.findLast((l) => l.event === "checkpoint_progress")?.fields as
        | ClientEvents["checkpoint_progress"]
        | undefined;
      assert.ok(progress !== undefined, "no checkpoint_progress");
      assert.deepEqual([progress.step, progress.dir], [saved.step, saved.dir]);
      assert.equal(progress.done_bytes, progress.total_bytes);
      // The folder is complete and the only entry: no temporary folder left beside it.
      assert.deepEqual([...Deno.readDirSync(`${dir}/checkpoints`)].map((e) => e.name), [expected]);
      const model = await readModelDir(saved.dir);
      assert.ok(model.weights !== null);
      assert.deepEqual(logs.at(-1), { event: "end", fields: { reason: "Aborted" } });
    } finally {
      stop();
      await exchange.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
