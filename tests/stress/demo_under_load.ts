/**
 * The demo's runs on a busy machine (`deno task stress`, too slow for `deno task test`): each
 * of the demo's configs (config/demo: the byte-level Llama the demo trains by default, and
 * config/llama-tiny: the 20M Llama of `--model llama-20m`; 3 clients, DisTrO) on a testnet that
 * calibrates first, while two busy-loop processes take both cores of a 2-core machine. Each
 * must still train: at least 10 applied steps, with the loss falling and every client holding
 * the same parameters at every step. Before the warm-up and calibration work, the first
 * step (compiling every GPU pipeline) outlasted `max_round_train_time` on such a machine and
 * the demo applied nothing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { EventWatcher } from "../../client/testing/testnet.ts";
import { clientDigests, describeDisagreements, disagreements } from "../support/one_model.ts";
import { REPO_ROOT, Testnet } from "../../client/testnet/mod.ts";
import { ensureCorpus, type TokenizerName } from "../../data/mod.ts";

/** `n` processes that spin a core each until killed. */
function busyLoops(n: number): Deno.ChildProcess[] {
  return Array.from({ length: n }, () =>
    new Deno.Command(Deno.execPath(), {
      args: ["eval", "while (true) {}"],
      stdout: "null",
      stderr: "null",
    }).spawn());
}

/** The demo's runs: its config folder and the corpus its data server reads. */
const DEMO_RUNS: readonly { config: string; corpus: TokenizerName }[] = [
  { config: "demo", corpus: "bytes" },
  { config: "llama-tiny", corpus: "llama" },
];

for (const { config, corpus } of DEMO_RUNS) {
  Deno.test({
    name: `config/${config} trains on a machine whose cores are busy: 10 applied steps, loss falls`,
    sanitizeResources: false,
    sanitizeOps: false,
  }, () => trainsWhileBusy(config, corpus));
}

async function trainsWhileBusy(config: string, corpus: TokenizerName): Promise<void> {
  await ensureCorpus(corpus);
  const hogs = busyLoops(2);
  const watcher = new EventWatcher();
  const lines: string[] = [];
  let net: Testnet | null = null;
  try {
    net = await Testnet.start({
      configPath: join(REPO_ROOT, "config", config),
      numClients: 3,
      write: (line) => lines.push(line),
      colour: false,
      onEvent: watcher.onEvent,
      calibrate: true,
    });
    const applied = () => new Set(watcher.named("apply").map((e) => Number(e.event.step)));
    await watcher.waitFor("10 applied steps", () => applied().size >= 10, 900_000);
    // The calibration measured this machine as it was (busy) and said what the run allows.
    assert.ok(
      watcher.named("testnet").some((e) => /^calibration: a step of/.test(String(e.event.message))),
    );
    // Every client built its pipelines before it said it was ready.
    assert.equal(watcher.named("warmup").length, 3);
    // The loss falls: the mean of the last three trained steps below the first three's.
    const losses = new Map<number, number[]>();
    for (const e of watcher.named("train")) {
      const step = Number(e.event.step);
      losses.set(step, [...(losses.get(step) ?? []), Number(e.event.loss)]);
    }
    const means = [...losses].sort(([a], [b]) => a - b)
      .map(([, l]) => l.reduce((s, x) => s + x, 0) / l.length);
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    const first = mean(means.slice(0, 3));
    const last = mean(means.slice(-3));
    assert.ok(last < first, `loss ${first.toFixed(3)} -> ${last.toFixed(3)} did not fall`);
    const found = disagreements(clientDigests(watcher.events));
    assert.deepEqual(found.disagreements, [], describeDisagreements(found.disagreements));
    assert.deepEqual(watcher.named("diverged"), []);
  } catch (e) {
    console.error(lines.slice(-100).join("\n"));
    throw e;
  } finally {
    for (const hog of hogs) hog.kill("SIGKILL");
    await Promise.all(hogs.map((h) => h.status));
    await net?.stop();
  }
}
