import assert from "node:assert/strict";
import {
  eventFromJson,
  eventJson,
  eventLevel,
  eventLogger,
  formatEvent,
  type ServerEvent,
} from "./log.ts";

const KEY = "ab".repeat(32);

Deno.test("console lines name what happened and shorten keys", () => {
  assert.equal(
    formatEvent({ kind: "Joined", client: KEY, pending: 3 }),
    "join     abababab… (3 pending)",
  );
  assert.equal(
    formatEvent({ kind: "Left", client: KEY, withdrawn: true }),
    "leave    abababab… (withdrawn from the epoch)",
  );
  assert.equal(
    formatEvent({
      kind: "Checkpoint",
      client: KEY,
      repo: { kind: "Hub", repo: { repoId: "org/m", revision: "r1" } },
    }),
    "ckpt     abababab… uploaded Hub org/m@r1",
  );
  assert.equal(
    formatEvent({
      kind: "Rejected",
      client: KEY,
      request: "Witness",
      code: "DuplicateWitness",
      message: "client 1 already reported this round",
    }),
    "reject   abababab… Witness: DuplicateWitness: client 1 already reported this round",
  );
  assert.equal(
    formatEvent({ kind: "EpochEnd", epoch: 2, step: 9, success: true, cause: "epoch_time" }),
    "epoch    ended after training (its time was up), now epoch 2 at step 9",
  );
});

Deno.test("an epoch nobody attested says so, as a warning", () => {
  const unattested: ServerEvent = {
    kind: "EpochEnd",
    epoch: 4,
    step: 12,
    success: true,
    cause: "no_witnesses",
  };
  assert.equal(
    formatEvent(unattested),
    "epoch    ended unattested (no witness reported in its last round; all must join again)" +
      ", now epoch 4 at step 12",
  );
  assert.equal(eventLevel(unattested), "warn");
  assert.equal(JSON.parse(eventJson(unattested, 0)).cause, "no_witnesses");
  const timely: ServerEvent = { ...unattested, cause: "total_steps" };
  assert.equal(eventLevel(timely), "info");
  assert.equal(
    formatEvent({ kind: "EpochEnd", epoch: 1, step: 1, success: false, cause: "warmup" }),
    "epoch    ended in Warmup (too few clients), now epoch 1 at step 1",
  );
});

Deno.test("JSON lines carry the time, the event kind and every field", () => {
  const event: ServerEvent = { kind: "Saved", path: "/s/run-step5.toml", step: 5 };
  assert.deepEqual(JSON.parse(eventJson(event, 0)), {
    time: "1970-01-01T00:00:00.000Z",
    level: "info",
    event: "saved",
    path: "/s/run-step5.toml",
    step: 5,
  });
  const lines: string[] = [];
  const log = eventLogger("json", { write: (l) => lines.push(l), clock: () => 1000 });
  log({ kind: "Stopped" });
  assert.deepEqual(lines, ['{"time":"1970-01-01T00:00:01.000Z","level":"info","event":"stopped"}']);
  const human: string[] = [];
  eventLogger("console", { write: (l) => human.push(l) })({ kind: "Stopped" });
  assert.deepEqual(human, ["stopped"]);
});

Deno.test("defence events say who, why and for how long", () => {
  assert.equal(
    formatEvent({ kind: "BackedOff", client: KEY, cause: "HealthCheck", epoch: 3, until: 5 }),
    "backoff  abababab… dropped by a health check in epoch 3; may join again from epoch 5",
  );
  assert.equal(
    formatEvent({
      kind: "Throttled",
      peer: "10.0.0.7:4100",
      client: KEY,
      limit: "bytes",
      waitMs: 250,
    }),
    "throttle abababab… (10.0.0.7:4100) over its bytes rate; not read for 250 ms",
  );
  assert.equal(
    formatEvent({
      kind: "ConnectionClosed",
      peer: "10.0.0.7:4100",
      client: KEY,
      reason: "idle for 30 s and not a member of the run",
    }),
    "close    abababab… (10.0.0.7:4100): idle for 30 s and not a member of the run",
  );
});

Deno.test("a run held by back-offs and bars says so as a warning, with how long the wait is", () => {
  const held = {
    kind: "HeldByBars",
    joined: 3,
    eligible: 2,
    initMinClients: 3,
    liftsInSeconds: 60,
  } as const;
  assert.equal(
    formatEvent(held),
    "held     3 clients joined, init_min_clients is 3, but back-offs and bars leave 2 free to " +
      "start the epoch; waiting 60 s more lifts enough of them (each epoch_time waited counts " +
      "as an epoch)",
  );
  assert.equal(eventLevel(held), "warn");
});

Deno.test("a round's end says its witnesses, whether training timed out, and untrained batches", () => {
  const end = {
    kind: "RoundEnd",
    height: 4,
    step: 5,
    witnesses: 2,
    quorum: 2,
    trainTimedOut: true,
    batches: 6,
    untrainedBatches: 1,
  } as const;
  assert.equal(
    formatEvent(end),
    "round    4 ended at step 5: 2 witnesses (quorum 2); training ended by its timer; " +
      "1 of 6 batches of round 3 untrained",
  );
  assert.equal(
    formatEvent({ ...end, height: 0, step: 1, trainTimedOut: false, batches: 0 }),
    "round    0 ended at step 1: 2 witnesses (quorum 2)",
  );
  assert.deepEqual(JSON.parse(eventJson(end, 0)), {
    time: "1970-01-01T00:00:00.000Z",
    level: "info",
    event: "round_end",
    round: 4,
    step: 5,
    witnesses: 2,
    quorum: 2,
    train_timed_out: true,
    batches: 6,
    untrained_batches: 1,
  });
  assert.deepEqual(eventFromJson(JSON.parse(eventJson(end, 0))), end, "read back");
});

Deno.test("JSON lines: nested fields in snake_case too, and a level for what was refused", () => {
  const witness: ServerEvent = {
    kind: "Witness",
    client: "ab",
    index: 1,
    height: 2,
    digest: null,
    metadata: {
      step: 3,
      tokensPerSec: 40,
      bandwidthPerSec: 0,
      loss: 1.5,
      evals: [],
      promptResults: [],
    },
  } as unknown as ServerEvent;
  const line = JSON.parse(eventJson(witness, 0));
  assert.equal(line.event, "witness");
  assert.equal(line.round, 2);
  assert.equal(line.metadata.tokens_per_sec, 40);
  assert.deepEqual(eventFromJson(line), witness);
  const refused = JSON.parse(
    eventJson({ kind: "ConnectionRefused", peer: "p", client: null, reason: "r" }, 0),
  );
  assert.equal(refused.event, "connection_refused");
  assert.equal(refused.level, "warn");
  assert.equal(
    JSON.parse(eventJson({ kind: "SaveFailed", path: "p", reason: "disk full" }, 0)).level,
    "error",
  );
});

Deno.test("verification events say whose result, what was found and what follows", () => {
  const other = "cd".repeat(32);
  assert.equal(
    formatEvent({
      kind: "VerificationOpened",
      height: 4,
      step: 9,
      trainer: KEY,
      stage: "Verify",
      seats: [other],
    }),
    "verify   abababab…'s result of round 4 (step 9) sampled; seats cdcdcdcd…",
  );
  assert.equal(
    formatEvent({
      kind: "VerificationReport",
      client: other,
      height: 4,
      trainer: KEY,
      verdict: "Fail",
      evidence: "ResultMismatch",
      detail: 480_000,
    }),
    "verify   cdcdcdcd… says Fail for abababab…'s result of round 4 (ResultMismatch, 480000 ppm)",
  );
  const ejected = {
    kind: "Ejected" as const,
    client: KEY,
    cause: "FailedVerification" as const,
    evidence: "ResultMismatch" as const,
    epoch: 1,
    step: 9,
    barredUntil: 6,
  };
  assert.equal(
    formatEvent(ejected),
    "eject    abababab… failed verification (ResultMismatch) at step 9; barred until epoch 6",
  );
  assert.equal(eventLevel(ejected), "warn");
  assert.equal(
    formatEvent({ ...ejected, cause: "IdleVerifier", evidence: "None" }),
    "eject    abababab… did not report as a verifier at step 9; barred until epoch 6",
  );
});
