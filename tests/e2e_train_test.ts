/**
 * End to end: a coordinator server and three training clients, each a real process on
 * 127.0.0.1, train the tiny Llama (config/models/llama-tiny, with the LLaMA-2 vocabulary of
 * the bundled Brown corpus) for two epochs with DisTrO. Checks that every client applied
 * the same steps with bit-identical parameters (hash per step), that the loss went down,
 * that no batch went untrained, and that each checkpoint holds the parameters the client
 * last reported.
 *
 * @module
 */
import { tinyRunToml } from "../client/testing/testnet.ts";
import assert from "node:assert/strict";
import { readModelDir } from "../model/mod.ts";
import { digestBytes } from "../shaders/mod.ts";
import { toHex } from "../common/mod.ts";
import { freePorts } from "../client/testnet/mod.ts";
import { peerIdOf, publicKeyOf } from "../net/p2p/mod.ts";
import { lifelineSpawnOptions } from "../cli/entry.ts";
import { releaseLifeline } from "./support/lifeline.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const CLIENTS = 3;
const DEADLINE_MS = 200_000;

interface Event {
  event: string;
  [field: string]: unknown;
}

/** Timing knobs of a test run. */
interface Timing {
  epochTime: number;
  maxRoundTrainTime: number;
  /** The run finishes at this step (default 1000: never, in these tests). */
  totalSteps?: number;
  /**
   * Serve the corpus from the coordinator's in-process TCP data server on this port
   * (`--data-config`) instead of the clients reading the folder themselves.
   */
  dataServerPort?: number;
}

function stateToml(dir: string, t: Timing): string {
  return tinyRunToml({
    runId: "e2e-train",
    warmupTime: 25,
    cooldownTime: 2,
    epochTime: t.epochTime,
    maxRoundTrainTime: t.maxRoundTrainTime,
    roundWitnessTime: 1,
    minClients: 1,
    initMinClients: CLIENTS,
    maxClients: 16,
    globalBatchSize: 6,
    witnessNodes: 0,
    totalSteps: t.totalSteps ?? 1000,
    waitingForMembersExtraTime: 1,
    modelDir: `${dir}/model`,
    data: t.dataServerPort === undefined
      ? { local: `${ROOT}data/corpus/brown/train` }
      : { server: `127.0.0.1:${t.dataServerPort}` },
    baseLr: 5e-3,
    weightDecay: 0.1,
  });
}

/** Collects a child's stdout lines as JSON events. */
function collect(child: Deno.ChildProcess, events: Event[]): Promise<void> {
  return (async () => {
    let rest = "";
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) {
      rest += decoder.decode(chunk, { stream: true });
      const lines = rest.split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        try {
          events.push(JSON.parse(line));
        } catch {
          // not an event (e.g. deno's own output): ignored
        }
      }
    }
  })();
}

async function drain(stream: ReadableStream<Uint8Array>, into: string[]): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) into.push(decoder.decode(chunk));
}

async function waitUntil(what: string, cond: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A coordinator and its clients, running as child processes, with their JSON events. */
interface Run {
  dir: string;
  coordinatorEvents: Event[];
  clientEvents: Event[][];
  children: Deno.ChildProcess[];
  stderr: string[][];
  readers: Promise<void>[];
  /** Public key (hex) of each client. */
  keys: string[];
}

/** Starts a coordinator (with `coordinatorArgs`) and `CLIENTS` clients in a fresh folder. */
async function startRun(timing: Timing, coordinatorArgs: string[] = []): Promise<Run> {
  const dir = await Deno.makeTempDir({ prefix: "psyche-e2e-" });
  const run: Run = {
    dir,
    coordinatorEvents: [],
    clientEvents: [],
    children: [],
    stderr: [[]],
    readers: [],
    keys: [],
  };
  // The tiny model with the corpus's vocabulary (LLaMA-2 token ids go up to 32000).
  const config = JSON.parse(
    await Deno.readTextFile(`${ROOT}config/models/llama-tiny/config.json`),
  );
  await Deno.mkdir(`${dir}/model`);
  await Deno.writeTextFile(
    `${dir}/model/config.json`,
    JSON.stringify({ ...config, vocab_size: 32000 }),
  );
  await Deno.writeTextFile(`${dir}/state.toml`, stateToml(dir, timing));
  if (timing.dataServerPort !== undefined) {
    await Deno.writeTextFile(
      `${dir}/data.toml`,
      `dir = "${ROOT}data/corpus/brown/train"\ntoken_size = "TwoBytes"\nseq_len = 32\n` +
        `shuffle_seed = [${Array.from({ length: 32 }, (_, i) => i + 1).join(", ")}]\n`,
    );
    coordinatorArgs = [...coordinatorArgs, `--data-config=${dir}/data.toml`];
  }
  const [serverPort, ...p2pPorts] = freePorts(1 + CLIENTS);
  const secrets = Array.from(
    { length: CLIENTS },
    (_, i) => new Uint8Array(32).map((_, j) => (i * 53 + j * 11 + 5) & 0xff),
  );
  const peerIds = secrets.map((s) => peerIdOf(publicKeyOf(s)).toString());
  run.keys = secrets.map((s) => toHex(publicKeyOf(s)));
  for (const [i, s] of secrets.entries()) await Deno.writeFile(`${dir}/key${i}`, s);
  const coordinator = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `${ROOT}coordinator/cli/main.ts`,
      "run",
      `--state=${dir}/state.toml`,
      `--server-port=${serverPort}`,
      "--hostname=127.0.0.1",
      "--logs=json",
      ...coordinatorArgs,
    ],
    ...lifelineSpawnOptions(),
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  releaseLifeline(coordinator);
  run.children.push(coordinator);
  run.readers.push(
    collect(coordinator, run.coordinatorEvents),
    drain(coordinator.stderr, run.stderr[0]),
  );
  // A client gives up on a coordinator that refuses its first connection: start them once it
  // listens, however long a busy machine takes to load it.
  await waitUntil(
    "the coordinator to listen",
    () => run.coordinatorEvents.some((e) => e.event === "listening"),
    60_000,
  );
  for (let i = 0; i < CLIENTS; i++) {
    const bootstrap = p2pPorts.flatMap((port, j) =>
      j === i ? [] : [`--bootstrap-peer=/ip4/127.0.0.1/tcp/${port}/p2p/${peerIds[j]}`]
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}client/main.ts`,
        "train",
        "--run-id=e2e-train",
        `--server-addr=127.0.0.1:${serverPort}`,
        `--identity-secret-key-path=${dir}/key${i}`,
        `--bind-p2p-port=${p2pPorts[i]}`,
        ...bootstrap,
        `--checkpoint-dir=${dir}/checkpoints${i}`,
        "--logs=json",
      ],
      ...lifelineSpawnOptions(),
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    releaseLifeline(child);
    run.children.push(child);
    run.clientEvents.push([]);
    run.stderr.push([]);
    run.readers.push(collect(child, run.clientEvents[i]), drain(child.stderr, run.stderr[i + 1]));
  }
  return run;
}

/** Waits for `cond`, failing with the clients' last events and stderr. */
async function waitForRun(run: Run, what: string, cond: () => boolean): Promise<void> {
  try {
    await waitUntil(what, cond, DEADLINE_MS);
  } catch (e) {
    const tail = run.clientEvents.map((ev, i) =>
      `client ${i}: ${ev.slice(-5).map((x) => JSON.stringify(x)).join("\n")}\n` +
      run.stderr[i + 1].join("").slice(-2000)
    );
    throw new Error(`${(e as Error).message}\n${tail.join("\n")}`);
  }
}

/** Kills whatever still runs and removes the folder. */
async function cleanUp(run: Run): Promise<void> {
  for (const child of run.children) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
  }
  await Promise.allSettled(run.readers);
  await Deno.remove(run.dir, { recursive: true });
}

/** Stops the clients in `which` with SIGTERM and returns their exit codes, then the coordinator. */
async function stopRun(run: Run, which: number[]): Promise<number[]> {
  const clients = which.map((i) => run.children[i + 1]);
  for (const child of clients) child.kill("SIGTERM");
  const codes = (await Promise.all(clients.map((c) => c.status))).map((s) => s.code);
  run.children[0].kill("SIGTERM");
  await run.children[0].status;
  return codes;
}

/** `epoch:step:hash` of every apply a client logged. */
function appliedSteps(events: Event[]): string[] {
  return events.filter((e) => e.event === "apply").map((e) =>
    `${e.epoch}:${e.step}:${e.params_hash}`
  );
}

Deno.test({
  name: "e2e: three clients train two epochs with identical parameters and falling loss",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const run = await startRun({ epochTime: 30, maxRoundTrainTime: 20 });
    const { clientEvents } = run;
    try {
      // Two epochs are over when every client wrote its second checkpoint.
      const checkpoints = (i: number) => clientEvents[i].filter((e) => e.event === "checkpoint");
      await waitForRun(
        run,
        "two checkpoints from every client",
        () => clientEvents.every((_, i) => checkpoints(i).length >= 2),
      );
      const codes = await stopRun(run, [0, 1, 2]);
      await Promise.all(run.readers);
      for (const [i, code] of codes.entries()) {
        assert.equal(code, 0, `client ${i} exit: ${run.stderr[i + 1].join("").slice(-2000)}`);
      }

      // Every client applied the same steps, each with the same parameter hash.
      const applies = clientEvents.map((ev) => ev.filter((e) => e.event === "apply"));
      assert.ok(applies[0].length >= 3, `client 0 applied ${applies[0].length} steps`);
      for (let i = 1; i < CLIENTS; i++) {
        assert.deepEqual(appliedSteps(clientEvents[i]), appliedSteps(clientEvents[0]));
      }
      assert.deepEqual(new Set(applies[0].map((e) => e.epoch)), new Set([0, 1]), "two epochs");
      assert.equal(new Set(applies[0].map((e) => e.params_hash)).size, applies[0].length);
      for (const a of applies.flat()) {
        assert.equal(a.untrained_batches, 0, `untrained batches in ${JSON.stringify(a)}`);
        assert.equal(a.applied, CLIENTS);
      }

      // Training happened in both epochs and the loss went down.
      const trains = clientEvents.flat().filter((e) => e.event === "train")
        .sort((a, b) => (a.step as number) - (b.step as number));
      assert.deepEqual(new Set(trains.map((e) => e.epoch)), new Set([0, 1]));
      const mean = (xs: Event[]) => xs.reduce((s, e) => s + (e.loss as number), 0) / xs.length;
      const first = mean(trains.slice(0, CLIENTS));
      const last = mean(trains.slice(-CLIENTS));
      assert.ok(last < first - 0.1, `loss ${first} -> ${last}`);

      // Each checkpoint holds the client's parameters as of its last apply.
      for (let i = 0; i < CLIENTS; i++) {
        const cp = checkpoints(i)[1];
        const saved = await readModelDir(cp.dir as string);
        assert.ok(saved.weights !== null);
        const hash = digestBytes(new Uint8Array(saved.weights.buffer));
        const before = clientEvents[i].filter((e) =>
          e.event === "apply" && Date.parse(e.time as string) <= Date.parse(cp.time as string)
        );
        assert.equal(hash, before[before.length - 1].params_hash);
        assert.match(cp.dir as string, /e2e-train-step\d+$/);
      }
      // The coordinator ended the first epoch (the second is in its Cooldown); no client errors.
      assert.ok(run.coordinatorEvents.some((e) => e.event === "epoch_end"));
      // Both epochs started on readiness (every client's warmup witness), not the warmup timer.
      const ready = run.coordinatorEvents.filter((e) => e.event === "warmup_witness");
      assert.equal(ready.length, 2 * CLIENTS);
      const errors = clientEvents.flat().filter((e) =>
        e.event === "error" || e.event === "refused" || e.event === "download_failed"
      );
      assert.deepEqual(errors, [], "an honest run refuses nothing and loses no payload");
    } finally {
      await cleanUp(run);
    }
  },
});

Deno.test({
  name: "e2e: a client that stops delivering is reported by the witnesses and dropped",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // The dead client never sends Finished or its witness: rounds end at the train timeout.
    const run = await startRun({ epochTime: 60, maxRoundTrainTime: 6 }, [
      "--withdraw-on-disconnect=false",
    ]);
    const { clientEvents, coordinatorEvents } = run;
    try {
      await waitForRun(
        run,
        "a first applied step",
        () => clientEvents[0].some((e) => e.event === "apply"),
      );
      run.children[3].kill("SIGKILL"); // client 2 disappears without a word
      await run.children[3].status;
      const dead = run.keys[2];
      const reports = () =>
        clientEvents.slice(0, 2).flat().filter((e) => e.event === "health_check_sent");
      await waitForRun(
        run,
        "a health check that drops client 2",
        () =>
          coordinatorEvents.some((e) => e.event === "health_check" && (e.dropped as number) > 0) &&
          reports().length > 0,
      );
      for (const r of reports()) assert.deepEqual(r.clients, [dead]);
      // The survivors go on with identical parameters.
      const applied = () => appliedSteps(clientEvents[0]).length;
      const after = applied();
      await waitForRun(run, "another applied step", () => applied() > after);
      const codes = await stopRun(run, [0, 1]);
      assert.deepEqual(codes, [0, 0]);
      await Promise.all(run.readers);
      const [a, b] = [appliedSteps(clientEvents[0]), appliedSteps(clientEvents[1])];
      const common = Math.min(a.length, b.length);
      assert.deepEqual(a.slice(0, common), b.slice(0, common));
    } finally {
      await cleanUp(run);
    }
  },
});

Deno.test({
  name:
    "e2e: an epoch cut short by total_steps applies round H-1 at Cooldown, then clients exit (data from the data server)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // Rounds 0..3 train steps 1..4; the run ends at step 5: Cooldown applies step 3 (round
    // H - 1 = 2, attested by round 3's witnesses); step 4 is never attested. The data comes
    // from the coordinator's TCP data server this time.
    const [dataServerPort] = freePorts(1);
    const run = await startRun({
      epochTime: 200,
      maxRoundTrainTime: 20,
      totalSteps: 5,
      dataServerPort,
    });
    const { clientEvents } = run;
    try {
      const statuses = await Promise.race([
        Promise.all(run.children.slice(1).map((c) => c.status)),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error("clients did not exit")), DEADLINE_MS)
        ),
      ]);
      assert.deepEqual(statuses.map((s) => s.code), [0, 0, 0]);
      run.children[0].kill("SIGTERM");
      await run.children[0].status;
      await Promise.all(run.readers);
      for (let i = 0; i < CLIENTS; i++) {
        const events = clientEvents[i];
        assert.deepEqual(appliedSteps(events), appliedSteps(clientEvents[0]));
        assert.deepEqual(events.filter((e) => e.event === "end").map((e) => e.reason), [
          "Finished",
        ]);
        const trained = events.filter((e) => e.event === "train").map((e) => e.step as number);
        const applies = events.filter((e) => e.event === "apply");
        const last = applies[applies.length - 1];
        assert.ok(last !== undefined, `client ${i} applied nothing: ${JSON.stringify(events)}`);
        const cooldown = events.find((e) => e.event === "state" && e.run_state === "Cooldown")!;
        assert.ok(
          Date.parse(last.time as string) >= Date.parse(cooldown.time as string),
          "applied at Cooldown",
        );
        assert.equal(last.step, Math.max(...trained) - 1);
        assert.deepEqual(applies.map((a) => a.step), [1, 2, 3]);
        const cp = events.find((e) => e.event === "checkpoint")!;
        const saved = await readModelDir(cp.dir as string);
        const hash = digestBytes(new Uint8Array(saved.weights!.buffer));
        assert.equal(hash, last.params_hash);
      }
    } finally {
      await cleanUp(run);
    }
  },
});
