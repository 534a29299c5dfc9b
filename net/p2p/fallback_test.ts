import assert from "node:assert/strict";
import {
  type AttemptFailureCode,
  PayloadAttemptError,
  PayloadFetchError,
  type RetryPolicy,
  withFallback,
} from "./fallback.ts";

const policy: RetryPolicy = {
  attemptTimeoutMs: 1000,
  retries: 2,
  backoffMs: 100,
  maxBackoffMs: 150,
};

/** A scripted set of providers: each call consumes the next outcome for that provider. */
function scripted(outcomes: Record<string, Array<AttemptFailureCode | "ok" | "hang">>) {
  const calls: string[] = [];
  const sleeps: number[] = [];
  const bad = new Set<string>();
  const attempt = (provider: string, signal: AbortSignal): Promise<string> => {
    calls.push(provider);
    const outcome = outcomes[provider].shift() ?? "unreachable";
    if (outcome === "ok") return Promise.resolve(`bytes from ${provider}`);
    if (outcome === "hang") {
      return new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(new Error("aborted")))
      );
    }
    return Promise.reject(new PayloadAttemptError(outcome, `${provider} said ${outcome}`));
  };
  const timers: AbortController[] = [];
  const rearms: number[] = [];
  const options = {
    what: "payload x",
    policy,
    isBad: (p: string) => bad.has(p),
    markBad: (p: string) => void bad.add(p),
    sleep: (ms: number) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    watchdog: () => {
      const c = new AbortController();
      timers.push(c);
      return { signal: c.signal, rearm: () => rearms.push(timers.indexOf(c)), stop: () => {} };
    },
  };
  return { attempt, options, calls, sleeps, bad, timers, rearms };
}

Deno.test("the first provider that succeeds wins; earlier ones are tried in order", async () => {
  const s = scripted({ a: ["not-found"], b: ["ok"], c: ["ok"] });
  assert.equal(await withFallback(["a", "b", "c"], s.attempt, s.options), "bytes from b");
  assert.deepEqual(s.calls, ["a", "b"]);
  assert.deepEqual(s.sleeps, []);
});

Deno.test("a provider serving mismatching bytes is marked bad and skipped afterwards", async () => {
  const s = scripted({ a: ["hash-mismatch"], b: ["unreachable", "ok"] });
  assert.equal(await withFallback(["a", "b"], s.attempt, s.options), "bytes from b");
  assert.deepEqual(s.calls, ["a", "b", "b"]);
  assert.deepEqual([...s.bad], ["a"]);
  assert.deepEqual(s.sleeps, [100]);
});

Deno.test("rounds back off exponentially up to the cap, then the error lists every attempt", async () => {
  const s = scripted({ a: [], b: [] });
  const error = await withFallback(["a", "b"], s.attempt, s.options).catch((e) => e);
  assert.ok(error instanceof PayloadFetchError);
  assert.deepEqual(s.sleeps, [100, 150]);
  assert.equal(error.attempts.length, 6);
  assert.deepEqual(error.attempts.map((a: { round: number }) => a.round), [0, 0, 1, 1, 2, 2]);
  assert.match(error.message, /Cannot fetch payload x: a: unreachable, b: unreachable/);
});

Deno.test("all providers bad or none given: fails at once", async () => {
  const s = scripted({});
  s.bad.add("a");
  const error = await withFallback(["a"], s.attempt, s.options).catch((e) => e);
  assert.ok(error instanceof PayloadFetchError);
  assert.match(error.message, /no usable provider/);
  assert.deepEqual(s.calls, []);
});

Deno.test("a hung attempt times out and the next provider is tried", async () => {
  const s = scripted({ a: ["hang"], b: ["ok"] });
  const result = withFallback(["a", "b"], s.attempt, s.options);
  await Promise.resolve();
  s.timers[0].abort();
  assert.equal(await result, "bytes from b");
  const s2 = scripted({ a: ["hang"] });
  const p2 = withFallback(["a"], s2.attempt, { ...s2.options, policy: { ...policy, retries: 0 } });
  await Promise.resolve();
  s2.timers[0].abort();
  const error = await p2.catch((e) => e);
  assert.equal(error.attempts[0].code, "timeout");
});

Deno.test("the caller's abort ends the download with its reason", async () => {
  const s = scripted({ a: ["hang"], b: ["ok"] });
  const controller = new AbortController();
  const result = withFallback(["a", "b"], s.attempt, { ...s.options, signal: controller.signal });
  await Promise.resolve();
  controller.abort(new Error("round over"));
  await assert.rejects(result, /round over/);
  assert.deepEqual(s.calls, ["a"]);
});

Deno.test("the attempt timeout starts only once the gate lets the attempt run", async () => {
  const s = scripted({ a: ["ok"] });
  let release!: () => void;
  const slotFree = new Promise<void>((r) => release = r);
  const gated = withFallback(["a"], s.attempt, {
    ...s.options,
    gate: async (_provider, task) => {
      await slotFree;
      return await task();
    },
  });
  await Promise.resolve();
  assert.equal(s.timers.length, 0, "no timer while waiting for a slot");
  release();
  assert.equal(await gated, "bytes from a");
  assert.equal(s.timers.length, 1);
});

Deno.test("a transfer that keeps making progress outlives the stall timeout; a stalled one does not", async () => {
  const realPolicy = { ...policy, attemptTimeoutMs: 60, retries: 0 };
  const failures: string[] = [];
  const base = {
    what: "payload y",
    policy: realPolicy,
    isBad: () => false,
    markBad: () => {},
    onFailure: (provider: string, code: string) => failures.push(`${provider}: ${code}`),
  };
  // Bytes every 20 ms for 300 ms: five times the stall timeout in all, never 60 ms without.
  const slow = (_p: string, signal: AbortSignal, progress: () => void) =>
    new Promise<string>((resolve, reject) => {
      let ticks = 0;
      const timer = setInterval(() => {
        progress();
        if (++ticks === 15) {
          clearInterval(timer);
          resolve("all of it");
        }
      }, 20);
      signal.addEventListener("abort", () => {
        clearInterval(timer);
        reject(signal.reason);
      });
    });
  assert.equal(await withFallback(["slow"], slow, base), "all of it");
  // Two chunks, then nothing.
  const stalls = (_p: string, signal: AbortSignal, progress: () => void) =>
    new Promise<string>((_, reject) => {
      setTimeout(progress, 20);
      setTimeout(progress, 40);
      signal.addEventListener("abort", () => reject(signal.reason));
    });
  const started = performance.now();
  const error = await withFallback(["stalls"], stalls, base).catch((e) => e);
  assert.ok(error instanceof PayloadFetchError);
  assert.equal(error.attempts[0].code, "timeout");
  assert.match(error.attempts[0].message, /no progress for 60 ms/);
  assert.ok(performance.now() - started >= 100, "the two chunks re-armed the timer");
  assert.deepEqual(failures, ["stalls: timeout"]);
});

Deno.test("an attempt that went on from bytes held records where it started", async () => {
  const s = scripted({ a: ["timeout"], b: ["protocol"], c: ["timeout"] });
  // a leaves 4096 bytes behind, b adds none, c is asked from 4096 too.
  const held = [0, 4096, 4096];
  let calls = 0;
  const error = await withFallback(["a", "b", "c"], s.attempt, {
    ...s.options,
    policy: { ...policy, retries: 0 },
    heldBytes: () => held[calls++],
  }).catch((e) => e);
  assert.ok(error instanceof PayloadFetchError);
  assert.deepEqual(error.attempts.map((a) => a.resumedFrom), [undefined, 4096, 4096]);
  assert.match(error.message, /a: timeout, b: protocol \(from byte 4096\), c: timeout \(from/);
});
