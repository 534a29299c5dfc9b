import assert from "node:assert/strict";
import "../../net/p2p/mod.ts";
import { createP2PNode, PayloadService } from "../../net/p2p/mod.ts";
import { testPublic, testSecret } from "../testing/p2p.ts";
import { tinyModel } from "../../model/testing/fixtures.ts";
import { decodeBf16, encodeBf16 } from "../../model/mod.ts";
import { digestBytes } from "../../shaders/mod.ts";
import {
  type ServedModel,
  serveModel,
  serveModelYielding,
  type SnapshotPhase,
  weightBytes,
} from "./serve.ts";
import type { SharedModel } from "./blobs.ts";

/** A payload service on a node of its own (nothing connects to it). */
async function service(n: number) {
  const node = await createP2PNode({ secretKey: testSecret(n), allowedPeers: [testPublic(n)] });
  const payloads = await PayloadService.start(node, { retry: { retries: 0 } });
  return { payloads, stop: () => node.stop() };
}

const rounded = (m: SharedModel): SharedModel => ({
  ...m,
  weights: decodeBf16(encodeBf16(m.weights)),
});

// The manifest hashes of tinyModel(11) at step 5, f32 and rounded to bf16, as the one-go
// serveModel gave them before snapshots were made of steps (commit 2f5dc5b): the blobs, their
// dtypes and the manifest must not change, or clients of different versions disagree.
const PINNED = {
  f32: "b33aba029e017a7df19856b17162dab55c395a31f8ed4e01feb9e554431c1e0e",
  bf16: "01580947e62f6ed55049aefbfffa258a495680e0bac9fa27308d8a4015a587e0",
};

Deno.test("serveModelYielding serves the same blobs and manifest as serveModel, at any step size", async () => {
  const a = await service(1), b = await service(2);
  try {
    for (
      const [kind, model] of [["f32", tinyModel(11)], ["bf16", rounded(tinyModel(11))]] as const
    ) {
      const once = serveModel(a.payloads, model, { step: 5 });
      assert.equal(once.manifestHash, PINNED[kind], `${kind}: the manifest of before`);
      // Steps of 1 word, 3 words (tensors and blobs split unevenly), and the default.
      for (const stepBytes of [4, 12, undefined]) {
        const got = await serveModelYielding(b.payloads, model, { step: 5, stepBytes });
        assert.deepEqual(got, once, `${kind}, steps of ${stepBytes} bytes`);
        for (const hash of got.hashes) {
          assert.deepEqual(b.payloads.store.get(hash), a.payloads.store.get(hash), hash);
        }
      }
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

Deno.test("a given digest is served as the label, and the host digests nothing", async () => {
  const a = await service(1);
  try {
    const model = tinyModel(12);
    const digest = digestBytes(weightBytes(model));
    const phases: SnapshotPhase[] = [];
    const progress = (phase: SnapshotPhase) => {
      phases.push(phase);
      return () => {};
    };
    const computed = await serveModelYielding(a.payloads, model, { step: 2, progress });
    assert.deepEqual(phases, ["digest", "encode", "hash"]);
    phases.length = 0;
    const given = await serveModelYielding(a.payloads, model, { step: 2, digest, progress });
    assert.deepEqual(phases, ["encode", "hash"], "no host digest when one is given");
    assert.deepEqual(given, computed, "same manifest: the digest given is the host's");
    const other = await serveModelYielding(a.payloads, model, { step: 2, digest: "ab".repeat(32) });
    assert.equal(other.digest, "ab".repeat(32), "the label carries the digest given");
    assert.notEqual(other.manifestHash, computed.manifestHash);
  } finally {
    await a.stop();
  }
});

/**
 * Serves `model` in steps of `stepBytes`, and at every progress report schedules a probe timer
 * and records whether the previous report's probe has fired since: a timer on the event loop
 * runs between two reports only if the snapshot gave the loop a turn.
 */
async function probeTurns(
  serve: (options: Parameters<typeof serveModel>[2]) => ServedModel | Promise<ServedModel>,
) {
  let fired = 0;
  const turns: boolean[] = [];
  const phases = new Set<SnapshotPhase>();
  let last: number | null = null;
  const report = (phase: SnapshotPhase) => () => {
    phases.add(phase);
    if (last !== null) turns.push(fired > last);
    last = fired;
    setTimeout(() => fired++, 0);
  };
  const served = await serve({ step: 3, stepBytes: 256, progress: report });
  // Let every probe still pending run before the test ends (they may be clamped to 4 ms).
  await new Promise((resolve) => setTimeout(resolve, 20));
  return { served, turns, phases, firedAfter: fired };
}

Deno.test("while a snapshot is served the event loop keeps turning: timers fire between its steps", async () => {
  const a = await service(1);
  try {
    const model = tinyModel(13);
    const yielding = await probeTurns((o) =>
      serveModelYielding(a.payloads, model, { ...o, sliceMs: 0 })
    );
    assert.deepEqual([...yielding.phases], ["digest", "encode", "hash"]);
    // tinyModel's 2,960 floats in 256-byte steps: dozens of reports per phase.
    assert.ok(yielding.turns.length > 100, `${yielding.turns.length} reports`);
    const missed = yielding.turns.filter((t) => !t).length;
    assert.equal(missed, 0, `the loop did not turn between ${missed} pairs of reports`);
    // The same work in one go: no probe fires until it is over (what a client did before).
    const once = await probeTurns((o) => serveModel(a.payloads, model, o));
    assert.ok(once.turns.length > 100);
    assert.ok(once.turns.every((t) => !t), "in one go, the loop never turns");
    assert.deepEqual(once.served, yielding.served);
  } finally {
    await a.stop();
  }
});
