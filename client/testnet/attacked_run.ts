/**
 * One real testnet of the demo's model and data (config/demo: the 1.9M-parameter Llama over Brown
 * bytes, the coordinator's data server) with 4 clients (or as many as said), some of which may attack
 * (client/attacks.ts, `PSYCHE_FAULT_ATTACK`), run to a number of steps; then the held-out loss of
 * client-1's final checkpoint on validation text no client trained on, as the demo measures it.
 * `deno task bench-verify-loss` runs it per scenario, and tests/e2e_verification_loss_test.ts
 * runs a clean and a defended one.
 *
 * @module
 */
import { join } from "node:path";
import { heldOutLoss } from "./held_out.ts";
import { REPO_ROOT, Testnet } from "./launcher.ts";
import { CORPUS_TOKENIZERS, ensureCorpus } from "../../data/mod.ts";
import type { Attack } from "../attacks.ts";

/** One run: its name, `verification_percent`, and who attacks how. */
export interface Scenario {
  readonly name: string;
  readonly percent: number;
  /**
   * One attack (client/attacks.ts) per attacker: the last clients commit them, one each (the
   * first attack is the last client's). Empty for a run of honest clients.
   */
  readonly attacks: readonly Attack[];
  /** How many clients the run has (4 unless said). */
  readonly clients?: number;
}

/** One ejection by the coordinator. */
export interface Ejection {
  /** The ejected client's attack, or null when it was honest. */
  readonly attack: Attack | null;
  readonly cause: string;
}

/** What one scenario measured. */
export interface Outcome {
  readonly name: string;
  readonly steps: number;
  readonly heldOutLoss: number;
  /** Mean seconds between the ends of consecutive rounds. */
  readonly roundSeconds: number;
  /** Who the coordinator ejected: an attacker's attack (null for an honest client), and why. */
  readonly ejections: readonly Ejection[];
  /** Results of the attacker applied by client-1 (batches not rejected). */
  readonly attackerApplied: number;
  /** How many clients attacked. */
  readonly attackers: number;
  readonly verifications: number;
  readonly replayMs: number;
  readonly seconds: number;
}

/** Ejections as a person reads them: "negate FailedVerification, honest IdleWitness". */
export function describeEjections(ejections: readonly Ejection[]): string {
  return ejections.map((e) => `${e.attack ?? "honest"} ${e.cause}`).join(", ") || "none";
}

/** A run whose rounds stop ending for this long has stalled: it fails, keeping its log. */
const STALL_MS = 180_000;

/**
 * Runs `s` for `steps` steps and measures it. Progress (every 10 rounds) goes to `progress`.
 * Throws, naming the kept log, when no round ends for {@link STALL_MS}.
 */
export async function runScenario(
  s: Scenario,
  steps: number,
  progress: (line: string) => void = (line) => console.error(line),
): Promise<Outcome> {
  const clients = s.clients ?? 4;
  if (s.attacks.length >= clients) {
    throw new RangeError(`${s.name}: ${s.attacks.length} attackers leave no honest client`);
  }
  const attackOf = new Map(s.attacks.map((attack, i) => [`client-${clients - i}`, attack]));
  const attackerLabels = [...attackOf.keys()];
  await ensureCorpus("bytes"); // built on first use, as the demo does
  const demo = join(REPO_ROOT, "config", "demo");
  const folder = await Deno.makeTempDir({ prefix: `psyche-verify-loss-${s.name}-` });
  const state = (await Deno.readTextFile(join(demo, "state.toml")))
    .replace(/^min_clients = .*$/m, "min_clients = 2")
    .replace(/^init_min_clients = .*$/m, `init_min_clients = ${clients}`)
    .replace(/^global_batch_size_start = .*$/m, "global_batch_size_start = 8")
    .replace(/^global_batch_size_end = .*$/m, "global_batch_size_end = 8")
    .replace(/^verification_percent = .*$/m, `verification_percent = ${s.percent}`)
    .replace(/^epoch_time = .*$/m, "epoch_time = 100000")
    .replace(/^total_steps = .*$/m, `total_steps = ${steps}`)
    .replace(/^warmup_time = .*$/m, "warmup_time = 60");
  await Deno.writeTextFile(join(folder, "state.toml"), state);
  const data = (await Deno.readTextFile(join(demo, "data.toml")))
    .replace(/^dir = "(.*)"$/m, (_, d) => `dir = ${JSON.stringify(join(demo, d))}`);
  await Deno.writeTextFile(join(folder, "data.toml"), data);
  const checkpoints = join(folder, "checkpoints");
  const events: { label: string; event: Record<string, unknown> }[] = [];
  const started = performance.now();
  // Every process's output goes to a log kept when the scenario fails.
  const logPath = join(folder, "testnet.log");
  const log = await Deno.open(logPath, { write: true, create: true });
  const encoder = new TextEncoder();
  const net = await Testnet.start({
    configPath: folder,
    numClients: clients,
    write: (line) => log.writeSync(encoder.encode(line + "\n")),
    logs: "json",
    checkpointDir: checkpoints,
    onEvent: (label, _kind, event) => events.push({ label, event }),
    clientEnv: (label) => {
      const attack = attackOf.get(label);
      return attack === undefined ? undefined : { PSYCHE_FAULT_ATTACK: attack };
    },
  });
  const finished = () => events.some((e) => e.label === "coordinator" && e.event.to === "Finished");
  const roundEnds = () =>
    events.filter((e) => e.label === "coordinator" && e.event.event === "round_end").length;
  let seen = 0;
  let progressAt = Date.now();
  while (!finished()) {
    const ends = roundEnds();
    if (ends !== seen) {
      if (Math.floor(ends / 10) !== Math.floor(seen / 10)) {
        progress(`${s.name}: ${ends} of ${steps} rounds`);
      }
      seen = ends;
      progressAt = Date.now();
    } else if (Date.now() - progressAt > STALL_MS) {
      await net.stop();
      log.close();
      throw new Error(
        `${s.name}: no round ended for ${STALL_MS / 1000} s after ${ends} rounds; the ` +
          `processes' output is in ${logPath}`,
      );
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  const seconds = (performance.now() - started) / 1000;
  const attackOfKey = new Map([...attackOf].map(([label, a]) => [net.clientKey(label), a]));
  await net.stop();
  log.close();
  const dir = join(checkpoints, "client-1");
  const last = lastCheckpoint(dir);
  if (last === undefined) {
    // The loss is measured on client-1's model: say why there is none, not a bare NotFound.
    const dropped = events.find((e) => e.label === "client-1" && e.event.event === "dropped");
    const why = dropped === undefined
      ? ""
      : ` (a health check dropped it at step ${dropped.event.step}: ${dropped.event.note})`;
    throw new Error(
      `${s.name}: client-1 wrote no checkpoint${why}; the processes' output is in ${logPath}`,
    );
  }
  const loss = await heldOutLoss({
    modelFolder: join(dir, last),
    runId: "llama-bytes-brown",
    validationDir: join(CORPUS_TOKENIZERS.bytes.dir, "validation"),
    seqLen: 256,
    sequences: 64,
  });
  const ends = events.filter((e) => e.label === "coordinator" && e.event.event === "round_end")
    .map((e) => Date.parse(String(e.event.time)));
  const roundSeconds = ends.length < 2 ? NaN : (ends.at(-1)! - ends[0]) / 1000 / (ends.length - 1);
  const verifications = events.filter((e) => e.event.event === "verification");
  const attackerBatches = new Set(
    events.filter((e) => attackerLabels.includes(e.label) && e.event.event === "train")
      .map((e) => String(e.event.batch)),
  );
  const applied = events.filter((e) => e.label === "client-1" && e.event.event === "apply");
  const rejected = new Set(applied.flatMap((e) => (e.event.rejected as unknown[]).map(String)));
  await Deno.remove(folder, { recursive: true }).catch(() => {});
  return {
    name: s.name,
    steps,
    heldOutLoss: loss.loss,
    roundSeconds,
    ejections: events.filter((e) => e.label === "coordinator" && e.event.event === "ejected")
      .map((e) => ({
        attack: attackOfKey.get(String(e.event.client)) ?? null,
        cause: String(e.event.cause),
      })),
    attackers: attackerLabels.length,
    attackerApplied: [...attackerBatches].filter((b) => !rejected.has(b)).length,
    verifications: verifications.length,
    replayMs: verifications.length === 0
      ? 0
      : verifications.reduce((a, e) => a + Number(e.event.replay_ms), 0) / verifications.length,
    seconds,
  };
}

/** The newest checkpoint folder's name in `dir` (`...-step<N>`), or undefined if none. */
function lastCheckpoint(dir: string): string | undefined {
  let names: string[];
  try {
    names = [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  const step = (name: string) => Number(name.split("step").at(-1));
  return names.sort((a, b) => step(a) - step(b)).at(-1);
}
