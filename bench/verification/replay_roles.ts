/**
 * The two processes of `deno task bench-verify` (replay_bench.ts): the trainers, writing every
 * result and served state into a folder, and the verifier, checking each on its own adapter. The
 * verifier needs nothing but the folder (replay_folder.ts), so the two can run on different
 * machines, days apart; or side by side, the verifier following the trainers step by step.
 *
 * @module
 */
// Not client/mod.ts: that pulls in libp2p and the hub, which the GPU machine cannot load.
import {
  gradientFactor,
  judgeChain,
  type Judgement,
  judgeReplay,
  loadModel,
  NetworkTrainer,
  otherBatch,
  randomSigns,
  republish,
  RESULT_ATTACKS,
  ResultReplayer,
} from "../../client/testing/replay_parts.ts";
import { type BatchId, learningRate, toHex } from "../../common/mod.ts";
import { LocalDataProvider } from "../../data/mod.ts";
import {
  decodePayload,
  decodeState,
  type DistroConfig,
  type DistroResult,
  encodePayload,
  encodeState,
  type PayloadExpectation,
  stateDigest,
  type StateShape,
  zeroStateDigest,
} from "../../optimizer/mod.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import {
  checkModelConfig,
  MANIFEST_FILE,
  parseManifest,
  REPLAY_FOLDER_FORMAT,
  ReplayFolderError,
  type ReplayManifest,
  sequencesRead,
} from "./replay_folder.ts";

/** What a result of the bench is: honest, or one of the result attacks (three trained, three published). */
type Kind = "honest" | typeof RESULT_ATTACKS[number];

/** One result of a step, as the trainer process writes it. */
export interface BenchItem {
  readonly kind: Kind;
  /** Whose chain it continues (a trainer's name), or null for a derived result. */
  readonly chain: string | null;
  /** The trainer whose states and batch it was made with (itself for a trained result). */
  readonly source: string;
  readonly batch: BatchId;
  readonly payload: string;
}

/** One step's file. */
export interface BenchStep {
  readonly step: number;
  readonly lr: number;
  readonly prevLr: number;
  readonly items: BenchItem[];
}

/** Per kind of result, what the verifier concluded. */
export interface KindSummary {
  pass: number;
  fail: number;
  evidence: Record<string, number>;
  maxDetail: number;
  replayMs: number;
}

/** What the verifier process prints. */
export interface VerifierSummary {
  readonly steps: number;
  readonly honest: number;
  readonly seqLen: number;
  readonly model: string;
  readonly trainerAdapter: string;
  readonly verifierAdapter: string;
  readonly kinds: Record<string, KindSummary>;
}

/** What the trainer role is told: the run's settings, the corpus to read, the folder to fill. */
export interface TrainerOptions {
  readonly steps: number;
  readonly honest: number;
  readonly seqLen: number;
  /** The model's folder, from the repository root. */
  readonly model: string;
  /** A folder of token files; the run reads a prefix of the first (sorted by name). */
  readonly data: string;
  readonly dir: string;
}

/** What the verifier role is told; the settings come from the folder's manifest. */
export interface VerifierOptions {
  readonly dir: string;
  /** Wait for each step's file (the trainers run beside it) and delete what it is done with. */
  readonly follow: boolean;
}

const ROOT = new URL("../..", import.meta.url).pathname;
const MICRO = 2;
const DISTRO: DistroConfig = {
  chunk: 64,
  topk: 8,
  decay: 0.999,
  weightDecay: 0.1,
  clipGradNorm: 1,
  quantize1bit: true,
};
const SCHEDULE = {
  kind: "Cosine",
  baseLr: 3e-3,
  warmupSteps: 10,
  warmupInitLr: 0,
  totalSteps: 300,
  finalLr: 3e-4,
} as const;

/** The seed name every model of the bench is initialised from. */
const SEED = "llama-bytes-brown";
const DATA_DIR = "data";
/**
 * The fewest sequences a folder's data holds, more than a small run reads: a machine without the
 * corpus (the lent GPU's) can train a larger run on a carried folder's data (133 kB at 64
 * tokens a sequence). The run's batches do not depend on it (`ReplayManifest.sequences` does).
 */
const DATA_PREFIX_SEQUENCES = 1024;

async function modelConfigSha256(model: string): Promise<string> {
  const bytes = await Deno.readFile(`${ROOT}${model}/config.json`);
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}

async function setup(o: { model: string; seqLen: number; dataDir: string }) {
  const rt = await GpuRuntime.create();
  const backend = Deno.env.get("DENO_WEBGPU_BACKEND") ?? "the default backend";
  const adapter = `${rt.info.description || "an unnamed adapter"} on ${backend}`;
  const model = await loadModel(`${ROOT}${o.model}`, SEED);
  const data = await LocalDataProvider.open(o.dataDir, {
    seqLen: o.seqLen,
    tokenSize: "TwoBytes",
    vocabSize: model.config.vocabSize,
  });
  const trainer = () =>
    new NetworkTrainer({
      rt,
      config: model.config,
      layout: model.layout,
      weights: model.weights,
      seqLen: o.seqLen,
      microBatch: MICRO,
      maxBatch: MICRO,
      distro: DISTRO,
    });
  return { rt, adapter, model, data, trainer };
}

/**
 * Copies the prefix of `source`'s first token file that holds `sequences` sequences into
 * `dir/data/000.ds`: the trainers and the verifier read this copy, so the verifier needs no corpus.
 */
async function writeDataPrefix(
  source: string,
  o: { dir: string; seqLen: number },
  sequences: number,
) {
  const names: string[] = [];
  for await (const e of Deno.readDir(source)) {
    if (e.isFile && e.name.endsWith(".ds")) names.push(e.name);
  }
  if (names.length === 0) throw new ReplayFolderError(`${source} holds no .ds token file`);
  const first = `${source}/${names.sort()[0]}`;
  // Two bytes a token; one spare sequence, whatever the provider's window.
  const bytes = 2 * (sequences + 1) * (o.seqLen + 1);
  const file = await Deno.open(first);
  try {
    const prefix = new Uint8Array(bytes);
    let at = 0;
    while (at < bytes) {
      const n = await file.read(prefix.subarray(at));
      if (n === null) {
        throw new ReplayFolderError(
          `${first} holds ${at} bytes; the run reads ${sequences} sequences of ${o.seqLen} ` +
            `tokens (${bytes} bytes)`,
        );
      }
      at += n;
    }
    await Deno.mkdir(`${o.dir}/${DATA_DIR}`, { recursive: true });
    await Deno.writeFile(`${o.dir}/${DATA_DIR}/000.ds`, prefix);
  } finally {
    file.close();
  }
}

function expectation(t: NetworkTrainer): PayloadExpectation {
  return { ...t.expectation, stateDigests: true };
}

function shapeOf(t: NetworkTrainer): StateShape {
  return { size: t.layout.totalSize, layouts: t.distro.layouts };
}

/**
 * Trains the honest and attacking trainers and writes every step's results and states into
 * `o.dir` (made if missing; one that already holds a run is refused).
 */
export async function runTrainerProcess(o: TrainerOptions): Promise<void> {
  await Deno.mkdir(o.dir, { recursive: true });
  if (await exists(`${o.dir}/${MANIFEST_FILE}`)) {
    throw new ReplayFolderError(
      `${o.dir} already holds a run (${MANIFEST_FILE}): name a new folder`,
    );
  }
  const manifest: ReplayManifest = {
    format: REPLAY_FOLDER_FORMAT,
    steps: o.steps,
    honest: o.honest,
    seqLen: o.seqLen,
    micro: MICRO,
    model: o.model,
    modelConfigSha256: await modelConfigSha256(o.model),
    sequences: sequencesRead({ steps: o.steps, honest: o.honest, micro: MICRO }),
  };
  await writeDataPrefix(o.data, o, Math.max(manifest.sequences, DATA_PREFIX_SEQUENCES));
  const { rt, adapter, data, trainer } = await setup({
    model: o.model,
    seqLen: o.seqLen,
    dataDir: `${o.dir}/${DATA_DIR}`,
  });
  await Deno.writeTextFile(`${o.dir}/trainer-adapter`, adapter);
  // Last of the preamble, whole or not at all: a following verifier starts when it appears.
  await writeJsonWhole(`${o.dir}/${MANIFEST_FILE}`, manifest);
  const names = [
    ...Array.from({ length: o.honest }, (_, i) => `honest-${i}`),
    "negate",
    "scale",
    "other-data",
  ];
  const trainers = names.map(() => trainer());
  const shape = shapeOf(trainers[0]);
  const zero = zeroStateDigest(shape);
  const digests = names.map(() => zero);
  const history: DistroResult[][] = [];
  let random = 1;
  const randomBit = () =>
    ((random = (Math.imul(random, 1103515245) + 12345) >>> 0) & 0x10000) !== 0;
  const lastBatch = new Map<string, BatchId>();
  for (let step = 1; step <= o.steps; step++) {
    const lr = learningRate(SCHEDULE, step), prevLr = learningRate(SCHEDULE, step - 1);
    const base = step * names.length * MICRO;
    const items: BenchItem[] = [];
    const results: DistroResult[] = [];
    const write = async (result: DistroResult, item: Omit<BenchItem, "payload">) => {
      const payload = `${step}-${items.length}.dtro`;
      await Deno.writeFile(`${o.dir}/${payload}`, encodePayload(result, expectation(trainers[0])));
      items.push({ ...item, payload });
    };
    for (const [i, t] of trainers.entries()) {
      const batch = { start: base + i * MICRO, end: base + i * MICRO + MICRO - 1 };
      const name = names[i];
      const kind = (name.startsWith("honest") ? "honest" : name) as Kind;
      const attack = kind === "honest" ? undefined : {
        gradientFactor: gradientFactor(kind === "negate" || kind === "scale" ? kind : null),
        // The batch before, as a client's attack does; in the first step, one half the data away.
        dataBatch: kind === "other-data"
          ? otherBatch(batch, lastBatch.get(name) ?? halfwayAround(batch, manifest.sequences))
          : undefined,
      };
      const trained = await t.train({ step, batch, lr, prevLr, data, attack });
      lastBatch.set(name, batch);
      const bytes = encodeState(await t.distro.readState(), shape);
      const output = stateDigest(bytes);
      await Deno.writeFile(`${o.dir}/${toHex(output)}.state`, bytes);
      const result = { ...trained.result, states: { input: digests[i], output } };
      digests[i] = output;
      results.push(result);
      await write(result, { kind, chain: name, source: name, batch });
    }
    const [h0, h1] = results;
    // The publishing attacks stand in for the trainers they are derived from: those trainers'
    // own results are not among the others a verifier compares with (they were never published).
    await write({ ...h0, params: randomSigns(h0.params, randomBit) }, {
      kind: "random-signs",
      chain: null,
      source: names[0],
      batch: h0.batch,
    });
    const old = history.at(-5)?.[1];
    if (old !== undefined) {
      await write(republish(h1, old.params), {
        kind: "replay-old",
        chain: null,
        source: names[1],
        batch: h1.batch,
      });
    }
    // A free rider trains nothing: its states are the zero state's, its coefficients h0's.
    const rider = { ...results[o.honest - 1], states: { input: zero, output: zero } };
    await write(republish(rider, h0.params), {
      kind: "free-ride",
      chain: null,
      source: names[o.honest - 1],
      batch: rider.batch,
    });
    history.push(results);
    if (history.length > 6) history.shift();
    const honest = results.slice(0, o.honest).map((r) =>
      decodePayload(encodePayload(r, expectation(trainers[0])), expectation(trainers[0]))
    );
    for (const t of trainers) await t.apply(honest, lr);
    const file: BenchStep = { step, lr, prevLr, items };
    await writeJsonWhole(`${o.dir}/step-${step}.json`, file);
  }
  for (const t of trainers) t[Symbol.dispose]();
  await data.close();
  rt[Symbol.dispose]();
}

/** Writes `value` as JSON to `path` whole or not at all: a following verifier never reads half. */
async function writeJsonWhole(path: string, value: unknown): Promise<void> {
  await Deno.writeTextFile(`${path}.tmp`, JSON.stringify(value));
  await Deno.rename(`${path}.tmp`, path);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** `dir`'s file `name`, waited for when following the trainers, else required now. */
async function readFolderText(
  dir: string,
  name: string,
  o: { follow: boolean; missing: string },
): Promise<string> {
  for (;;) {
    try {
      return await Deno.readTextFile(`${dir}/${name}`);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      if (!o.follow) throw new ReplayFolderError(`${dir}/${name} is missing: ${o.missing}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The folder's manifest, checked, and this checkout's model checked against it. */
async function readManifest(o: VerifierOptions): Promise<ReplayManifest> {
  if (!o.follow && !(await exists(o.dir))) {
    throw new ReplayFolderError(`${o.dir} does not exist: name the trainer role's folder`);
  }
  const text = await readFolderText(o.dir, MANIFEST_FILE, {
    follow: o.follow,
    missing: "not a folder the trainer role made (or one from before format 1)",
  });
  const m = parseManifest(text, `${o.dir}/${MANIFEST_FILE}`);
  checkModelConfig(m, await modelConfigSha256(m.model));
  return m;
}

/** Follows θ with the honest results and checks every result of every step. */
export async function runVerifierProcess(o: VerifierOptions): Promise<VerifierSummary> {
  const m = await readManifest(o);
  const { rt, adapter, data, trainer } = await setup({
    model: m.model,
    seqLen: m.seqLen,
    dataDir: `${o.dir}/${DATA_DIR}`,
  });
  if (data.numSequences < m.sequences) {
    throw new ReplayFolderError(
      `${o.dir}/${DATA_DIR} holds ${data.numSequences} sequences, the run reads ${m.sequences}`,
    );
  }
  const verifier = trainer();
  const replayer = new ResultReplayer(verifier);
  const shape = shapeOf(verifier);
  const zero = zeroStateDigest(shape);
  const expect = expectation(verifier);
  const previous = new Map<string, Uint8Array>();
  const kinds: Record<string, KindSummary> = {};
  const note = (kind: string, j: Judgement, ms: number) => {
    const k = kinds[kind] ??= { pass: 0, fail: 0, evidence: {}, maxDetail: 0, replayMs: 0 };
    if (j.verdict === "Pass") k.pass++;
    else {
      k.fail++;
      k.evidence[j.evidence] = (k.evidence[j.evidence] ?? 0) + 1;
    }
    if (j.verdict === "Pass" || kind === "honest") k.maxDetail = Math.max(k.maxDetail, j.detail);
    const n = k.pass + k.fail;
    k.replayMs += (ms - k.replayMs) / n;
  };
  const readState = async (digest: Uint8Array) => {
    if (digest.every((b, i) => b === zero[i])) {
      return { kind: "distro" as const, delta: new Float32Array(shape.size), own: null };
    }
    const bytes = await Deno.readFile(`${o.dir}/${toHex(digest)}.state`);
    return decodeState(bytes, shape);
  };
  const spent: string[] = [];
  for (let step = 1; step <= m.steps; step++) {
    const file = JSON.parse(
      await readFolderText(o.dir, `step-${step}.json`, {
        follow: o.follow,
        missing: `the trainer role stopped before step ${step} of ${m.steps}`,
      }),
    ) as BenchStep;
    replayer.keep(step);
    const results = await Promise.all(
      file.items.map(async (i) =>
        decodePayload(await Deno.readFile(`${o.dir}/${i.payload}`), expect)
      ),
    );
    for (const [n, item] of file.items.entries()) {
      const result = results[n];
      const t0 = performance.now();
      const prior = item.chain === null ? null : previous.get(item.chain) ?? null;
      let judgement = judgeChain(result, prior, zero);
      if (judgement === null) {
        const replayed = await replayer.replay({
          height: step,
          state: await readState(result.states!.input),
          step,
          batch: item.batch,
          lr: file.lr,
          prevLr: file.prevLr,
          data,
        });
        const output = result.states!.output;
        judgement = judgeReplay({
          result,
          servedOutput: await readState(output),
          replayed,
          others: results.filter((_, m) =>
            file.items[m].kind === "honest" && file.items[m].source !== item.source
          ),
          layouts: shape.layouts,
        });
      }
      note(item.kind, judgement, performance.now() - t0);
      if (item.chain !== null) previous.set(item.chain, result.states!.output);
    }
    // The run's θ: decay as a client without a batch, then apply the honest results.
    await verifier.decayWeights(file.lr);
    await verifier.apply(results.filter((_, n) => file.items[n].kind === "honest"), file.lr);
    replayer.retain([]);
    // Following the trainers, the folder is a scratch one: inputs of this step are nobody's input
    // again, payloads are done with. A folder made apart is kept, to verify again elsewhere.
    if (!o.follow) continue;
    for (const f of spent.splice(0)) await Deno.remove(`${o.dir}/${f}`).catch(() => {});
    for (const [n, item] of file.items.entries()) {
      spent.push(item.payload);
      if (item.chain !== null) spent.push(`${toHex(results[n].states!.input)}.state`);
    }
  }
  const trainerAdapter = await Deno.readTextFile(`${o.dir}/trainer-adapter`);
  replayer[Symbol.dispose]();
  verifier[Symbol.dispose]();
  await data.close();
  rt[Symbol.dispose]();
  return {
    steps: m.steps,
    honest: m.honest,
    seqLen: m.seqLen,
    model: m.model,
    trainerAdapter,
    verifierAdapter: adapter,
    kinds,
  };
}

/** `batch`'s length of sequences half the data away from it. */
function halfwayAround(batch: BatchId, numSequences: number): BatchId {
  const start = (batch.start + Math.floor(numSequences / 2)) % Math.max(1, numSequences);
  return { start, end: start + batch.end - batch.start };
}
