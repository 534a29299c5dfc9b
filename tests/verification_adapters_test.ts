/**
 * No false accusations across adapters, and every attack caught (docs/protocol.md,
 * "Verification"): `deno task bench-verify` in small, with the trainers on lavapipe's Vulkan
 * backend and the verifier on its GL backend, two processes as two machines would be. Honest
 * results replayed on the other adapter differ in last bits; the tolerance must pass every one,
 * and fail every attacked result. (The full measurement, over a thousand honest replays, is in
 * docs/benchmarks.md, "Verification".)
 *
 * Skipped, saying why, where WebGPU has no GL adapter.
 *
 * @module
 */
import assert from "node:assert/strict";

/** What bench-verify prints last (bench/verification/replay_roles.ts `VerifierSummary`). */
interface Summary {
  readonly verifierAdapter: string;
  readonly kinds: Record<string, { pass: number; fail: number; evidence: Record<string, number> }>;
}

const BENCH = new URL("../bench/verification/replay_bench.ts", import.meta.url).pathname;

/** Why the GL backend cannot be tested here, or null when it can. */
async function glUnavailable(): Promise<string | null> {
  const probe = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "const a = await navigator.gpu.requestAdapter(); Deno.exit(a ? 0 : 3);"],
    env: { DENO_WEBGPU_BACKEND: "gl" },
    stdout: "null",
    stderr: "piped",
  }).output();
  return probe.code === 0 ? null : "WebGPU found no adapter on the GL backend on this machine";
}

const unavailable = await glUnavailable();

Deno.test({
  name: "honest results replayed on another adapter all pass; every attacked one fails",
  ignore: unavailable !== null,
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      BENCH,
      "--steps",
      "6",
      "--honest",
      "4",
      "--verifier-backend",
      "gl",
      "--json",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.equal(
    out.code,
    0,
    `bench-verify failed:\n${text}\n${new TextDecoder().decode(out.stderr)}`,
  );
  const summary = JSON.parse(text.split("\n").at(-1)!) as Summary;
  assert.match(summary.verifierAdapter, /on gl$/);
  assert.deepEqual([summary.kinds.honest.pass, summary.kinds.honest.fail], [24, 0]);
  for (const kind of ["negate", "scale", "other-data", "random-signs", "free-ride", "replay-old"]) {
    const k = summary.kinds[kind];
    assert.ok(k !== undefined, `no ${kind} results`);
    assert.equal(k.pass, 0, `${kind}: ${k.pass} passed`);
  }
  assert.equal(summary.kinds["free-ride"].evidence.CopiedResult, 6);
});

if (unavailable !== null) console.warn(`verification_adapters_test skipped: ${unavailable}`);
