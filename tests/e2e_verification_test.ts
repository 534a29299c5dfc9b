/**
 * Verification end to end (docs/protocol.md, "Verification"): a real coordinator and clients as
 * processes over libp2p, with `verification_percent = 100` so every round samples 4 of its 6
 * batches (MAX_SAMPLES_PER_ROUND), and dishonest members that commit one attack each
 * (client/attacks.ts, `PSYCHE_FAULT_ATTACK`). For each attacker the test checks that:
 * - the coordinator ejects it for a failed verification, with the evidence the attack leaves,
 *   within {@link DETECTION_ROUNDS} rounds of its first result: a result is sampled with
 *   probability 2/3 a round, so the first sampled result comes 1.5 rounds in on average, and three
 *   attackers all sampled within 13 rounds fail to happen once in about 500,000 runs
 *   (3 · (1/3)^13);
 * - its results are rejected from the honest clients' applies once it is ejected;
 * - the honest clients hold one model at every step, never lose a member of their own to a false
 *   verdict, and keep training after the attacker is gone.
 * A lying verifier accuses honest results: the honest trainers stay, the liar is ejected; a silent
 * verifier and a silent witness are ejected as idle.
 *
 * The data are random tokens (not zeros: a result computed on other data must differ).
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type SeenEvent, startTinyTestnet } from "../client/testing/testnet.ts";
import type { Attack } from "../client/mod.ts";
import { assertOneModel, clientErrors } from "./support/one_model.ts";

/** A folder of random llama-tiny tokens (vocabulary 512), 32 tokens a sequence. */
async function randomTokens(sequences: number): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "psyche-e2e-tokens-" });
  let x = 0x12345678;
  const tokens = Uint16Array.from({ length: sequences * 32 }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x >>> 23;
  });
  await Deno.writeFile(join(dir, "train.bin"), new Uint8Array(tokens.buffer));
  return dir;
}

const step = (e: SeenEvent) => Number(e.event.step);

/** Rounds after its first result within which an attacker is ejected (see the module doc). */
const DETECTION_ROUNDS = 14;

/**
 * A run of 3 honest clients and one client per attack in `attackers` (client-4 onwards), until
 * every attacker is ejected and the honest clients trained `after` steps more; `check` then
 * looks at the events.
 */
async function runWithAttackers(
  name: string,
  attackers: readonly Attack[],
  check: (events: readonly SeenEvent[], key: (label: string) => string) => void,
  options: { after?: number; maxRoundTrainTime?: number } = {},
) {
  const after = options.after ?? 3;
  const honest = ["client-1", "client-2", "client-3"];
  const clients = honest.length + attackers.length;
  const attackerOf = (label: string) => attackers[Number(label.split("-")[1]) - honest.length - 1];
  const data = await randomTokens(4096);
  await using testnet = await startTinyTestnet({
    runId: `e2e-verify-${name}`,
    initMinClients: clients,
    minClients: 2,
    witnessNodes: 0,
    globalBatchSize: 2 * clients,
    epochTime: 300,
    maxRoundTrainTime: options.maxRoundTrainTime ?? 20,
    warmupTime: 30,
    verificationPercent: 100,
    data: { local: data },
  }, {
    numClients: clients,
    clientEnv: (label) => {
      const attack = attackerOf(label);
      return attack === undefined ? undefined : { PSYCHE_FAULT_ATTACK: attack };
    },
  });
  const { net, watcher, lines } = testnet;
  try {
    const attackerLabels = attackers.map((_, i) => `client-${honest.length + i + 1}`);
    const ejectedKeys = () =>
      new Set(watcher.named("ejected", "coordinator").map((e) => String(e.event.client)));
    const ejectedAt = await watcher.waitFor(
      `every attacker (${attackers.join(", ")}) ejected`,
      () => {
        const keys = ejectedKeys();
        if (!attackerLabels.every((l) => keys.has(net.clientKey(l)))) return null;
        return Math.max(...watcher.named("ejected", "coordinator").map(step));
      },
      240_000,
    );
    const until = ejectedAt + after;
    await watcher.waitFor(
      `the honest clients to apply step ${until}`,
      () => honest.every((l) => watcher.named("apply", l).some((e) => step(e) >= until)),
      180_000,
    );
    const honestEvents = watcher.events.filter((e) =>
      e.kind !== "client" || honest.includes(e.label)
    );
    assertOneModel(honestEvents, 4);
    assert.deepEqual(clientErrors(honestEvents), []);
    check(watcher.events, (label) => net.clientKey(label));
    // No honest client was ejected.
    for (const l of honest) assert.ok(!ejectedKeys().has(net.clientKey(l)), `${l} ejected`);
  } catch (e) {
    const log = Deno.env.get("PSYCHE_E2E_LOG");
    if (log !== undefined) await Deno.writeTextFile(log, lines.join("\n"));
    console.error(lines.slice(-120).join("\n"));
    throw e;
  } finally {
    await Deno.remove(data, { recursive: true });
  }
}

/** The coordinator's ejection of `label`. */
function ejection(events: readonly SeenEvent[], key: string): Record<string, unknown> {
  const found = events.find((e) =>
    e.kind === "coordinator" && e.event.event === "ejected" && e.event.client === key
  );
  assert.ok(found, `no ejection of ${key.slice(0, 8)}`);
  return found.event;
}

/** The step of `label`'s first trained result. */
function firstTrained(events: readonly SeenEvent[], label: string): number {
  const first = events.find((e) => e.label === label && e.event.event === "train");
  assert.ok(first, `${label} never trained`);
  return step(first);
}

Deno.test({
  name: "verification ejects a negated gradient, a result of other data and a free rider, " +
    "and the honest clients train on as one model",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await runWithAttackers("train", ["negate", "other-data", "free-ride"], (events, key) => {
    const expected: Record<string, string[]> = {
      "client-4": ["StateMismatch", "ResultMismatch"],
      "client-5": ["StateMismatch", "ResultMismatch"],
      "client-6": ["CopiedResult"],
    };
    for (const [label, evidence] of Object.entries(expected)) {
      const e = ejection(events, key(label));
      assert.equal(e.cause, "FailedVerification", label);
      assert.ok(evidence.includes(String(e.evidence)), `${label}: ${e.evidence}`);
      const rounds = Number(e.step) - firstTrained(events, label);
      assert.ok(rounds <= DETECTION_ROUNDS, `${label}: caught ${rounds} rounds after its first`);
    }
    // Once ejected, an attacker's results are rejected: an honest apply says so.
    assert.ok(
      events.some((e) =>
        e.label === "client-1" && e.event.event === "apply" &&
        (e.event.rejected as unknown[]).length > 0
      ),
      "no apply rejected a result",
    );
  });
});

Deno.test({
  name: "verification ejects random signs, a replayed old result and a scaled gradient",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await runWithAttackers("publish", ["random-signs", "replay-old", "scale"], (events, key) => {
    for (const label of ["client-4", "client-5", "client-6"]) {
      const e = ejection(events, key(label));
      assert.equal(e.cause, "FailedVerification", label);
      const rounds = Number(e.step) - firstTrained(events, label);
      assert.ok(rounds <= DETECTION_ROUNDS, `${label}: caught ${rounds} rounds after its first`);
    }
    // A lie about the published coefficients alone leaves the served state inconsistent.
    assert.equal(ejection(events, key("client-4")).evidence, "StateInconsistent");
    assert.equal(ejection(events, key("client-5")).evidence, "StateInconsistent");
    assert.ok(
      ["StateMismatch", "ResultMismatch"].includes(
        String(ejection(events, key("client-6")).evidence),
      ),
    );
  });
});

Deno.test({
  name: "a verifier that accuses honest results is ejected, one that stays silent too, and a " +
    "silent witness; no honest trainer is removed",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const attackers = ["false-accuse", "idle-verifier", "idle-witness"] as const;
  await runWithAttackers("verifiers", attackers, (events, key) => {
    assert.equal(ejection(events, key("client-4")).cause, "FalseAccusation");
    assert.equal(ejection(events, key("client-5")).cause, "IdleVerifier");
    // Every client is an elected witness (6 seats, a quorum of 4): the silent one goes at the end
    // of its first round.
    const idle = ejection(events, key("client-6"));
    assert.equal(idle.cause, "IdleWitness");
    assert.equal(Number(idle.step), firstTrained(events, "client-6"));
    // The liar's accusations failed no honest trainer's result.
    const honest = new Set(["client-1", "client-2", "client-3"].map(key));
    const failedHonest = events.filter((e) =>
      e.kind === "coordinator" && e.event.event === "verification_closed" &&
      e.event.outcome === "failed" && honest.has(String(e.event.trainer))
    );
    assert.deepEqual(failedHonest, []);
  }, { maxRoundTrainTime: 6 });
});
