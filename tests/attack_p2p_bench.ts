/**
 * Bandwidth amplification over P2P: the bytes a client downloads when a member announces a
 * 32 MiB result for the 20M model, against the model's real result size (58.5 KB, 1-bit, top-8
 * in 64×64 chunks), in one run over three real exchanges on 127.0.0.1.
 *
 * - honest result (baseline): the observer fetches and verifies one real result;
 * - oversized announcement: the attacker announces 32 MiB of junk for its batch, correctly
 *   signed and committed; the observer refuses it by its size;
 * - the same announcement fetched as announced: what the exchange did before it checked
 *   sizes (fetch with the announced size as the expected one).
 *
 * Target: the oversized announcement costs at most 1.0x the expected size. When it ends the
 * benchmark prints the bytes each case downloaded per iteration, and their ratio to the
 * expected size; `deno bench` prints the times.
 *
 * Run: `deno bench -A tests/attack_p2p_bench.ts`
 *
 * @module
 */
import { waitFor } from "../client/testing/p2p.ts";
import { type P2PRun, startP2PRun, validResult } from "./support/p2p_run.ts";
import { expectedResultBytes } from "../client/mod.ts";
import { llamaParamLayout, parseLlamaConfig } from "../model/mod.ts";
import { chunkLayouts, commitmentHash } from "../optimizer/mod.ts";
import { hashToBytes } from "../net/p2p/mod.ts";

const JUNK_BYTES = 32 * 1024 * 1024;
const config = parseLlamaConfig(
  JSON.parse(
    await Deno.readTextFile(new URL("../config/models/llama-20m/config.json", import.meta.url)),
  ),
);
const expectation = {
  layouts: chunkLayouts(llamaParamLayout(config).entries, { chunk: 64, topk: 8 }),
  quantize1bit: true,
};
const EXPECTED = expectedResultBytes(expectation);
const ROUNDS = { n: 3, warmup: 0 };
const GROUP = "a 32 MiB announcement against the 20M model's result";
const downloaded: Record<string, number[]> = {};

/** Runs `attack` on a fresh run (setup untimed) and records the observer's bytes. */
async function measure(
  b: Deno.BenchContext,
  name: string,
  attack: (run: P2PRun) => Promise<void>,
): Promise<void> {
  await using run = await startP2PRun(expectation, { runId: `bench-${name}` });
  const before = run.observer.payloads.stats.receivedBytes;
  b.start();
  await attack(run);
  b.end();
  (downloaded[name] ??= []).push(run.observer.payloads.stats.receivedBytes - before);
}

/** The attacker serves 32 MiB of junk and announces it for its batch; returns its hash. */
async function announceJunk(run: P2PRun): Promise<string> {
  const payload = new Uint8Array(JUNK_BYTES).fill(7);
  const hash = run.attacker.payloads.provide(payload, { step: run.step });
  await run.attacker.gossip.publish({
    kind: "TrainingResult",
    step: run.step,
    proof: run.proofOf(2),
    batch: run.batchOf(2),
    commitment: commitmentHash({ step: run.step, batch: run.batchOf(2), payload }),
    contentHash: hashToBytes(hash),
    payloadSize: payload.length,
  });
  return hash;
}

Deno.bench({
  name: "honest result: fetched and verified",
  group: GROUP,
  baseline: true,
  ...ROUNDS,
  // An async function: deno bench awaits only those.
  fn: async (b) =>
    await measure(b, "honest result", async (run) => {
      const result = validResult(expectation, run.step, run.batchOf(0));
      await run.honest.results.publishResult(0, run.proofOf(0), result);
      const tracker = run.observer.results.tracker(0)!;
      await waitFor(
        "the honest result",
        () => tracker.announcements().some((a) => tracker.result(a.commitment) !== undefined),
        30_000,
      );
    }),
});

Deno.bench({
  name: "oversized announcement: refused",
  group: GROUP,
  ...ROUNDS,
  // An async function: deno bench awaits only those.
  fn: async (b) =>
    await measure(b, "oversized announcement", async (run) => {
      await announceJunk(run);
      await waitFor("the refusal", () => run.refusals.length === 1, 30_000);
      if (run.refusals[0].reason !== "WrongPayloadSize") {
        throw new Error(`refused for ${run.refusals[0].reason}, expected WrongPayloadSize`);
      }
    }),
});

Deno.bench({
  name: "the same announcement fetched as announced (before the size check)",
  group: GROUP,
  ...ROUNDS,
  // An async function: deno bench awaits only those.
  fn: async (b) =>
    await measure(b, "fetched as announced", async (run) => {
      const hash = await announceJunk(run);
      await run.observer.payloads.fetch(hash, {
        providers: [run.ids[2].p2pIdentity],
        expectedSize: JUNK_BYTES,
      });
    }),
});

addEventListener("unload", () => {
  console.log(`\nexpected result size: ${EXPECTED} bytes; bytes downloaded per iteration:`);
  for (const [name, bytes] of Object.entries(downloaded)) {
    const most = Math.max(...bytes);
    console.log(`  ${name}: ${bytes.join(", ")} (${(most / EXPECTED).toFixed(2)}x expected)`);
  }
});
