import assert from "node:assert/strict";
import "../../net/p2p/mod.ts";
import { createP2PNode, type P2PNode } from "../../net/p2p/mod.ts";
import { decodeManifest, MANIFEST_NAME } from "../../net/p2p/mod.ts";
import { PayloadService } from "../../net/p2p/mod.ts";
import { testPublic, testSecret } from "../testing/p2p.ts";
import { fetchModel, ModelDigestMismatchError, ModelUnavailableError } from "./fetch.ts";
import { modelToBlobs } from "./blobs.ts";
import { shareModel } from "../../net/p2p/mod.ts";
import { ManifestDisagreementError } from "./quorum.ts";
import { serveModel } from "./serve.ts";
import { tinyModel } from "../../model/testing/fixtures.ts";
import { decodeBf16, encodeBf16 } from "../../model/mod.ts";
import { hexToBytes, toHex } from "../../common/mod.ts";

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** `n` fully connected nodes with payload services (no retry rounds: failures are immediate). */
async function network(n: number, retries = 0) {
  const ids = Array.from({ length: n }, (_, i) => i + 1);
  const keys = ids.map(testPublic);
  const nodes: P2PNode[] = await Promise.all(
    ids.map((i) => createP2PNode({ secretKey: testSecret(i), allowedPeers: keys })),
  );
  const services = await Promise.all(
    nodes.map((node) => PayloadService.start(node, { retry: { retries } })),
  );
  for (let i = 1; i < n; i++) {
    for (let j = 0; j < i; j++) await nodes[i].connect(nodes[j].addresses()[0]);
  }
  return { keys, nodes, services, stop: () => Promise.all(nodes.map((x) => x.stop())) };
}

Deno.test("a joiner gets the majority's model bit for bit, ignoring a lying peer", async () => {
  const net = await network(5);
  try {
    const [a, b, liar, idle, joiner] = net.services;
    const model = tinyModel(11);
    const phases: string[] = [];
    const ends: [number, number][] = [];
    const servedA = serveModel(a, model, {
      step: 5,
      progress: (phase) => {
        phases.push(phase);
        return (done, total) => {
          if (done === total) ends.push([done, total]);
        };
      },
    });
    // A snapshot says how far each phase got, up to its total: the parameters, then the blobs.
    assert.deepEqual(phases, ["digest", "encode", "hash"]);
    assert.deepEqual(ends.map(([d]) => d), [
      model.weights.byteLength,
      4 * model.layout.paramCount,
      servedA.bytes,
    ]);
    const servedB = serveModel(b, { ...model, weights: model.weights.slice() }, { step: 5 });
    assert.equal(servedA.manifestHash, servedB.manifestHash, "same parameters, same manifest");
    const poisoned = model.weights.slice();
    poisoned[0] += 1;
    serveModel(liar, { ...model, weights: poisoned }, { step: 5 });
    const fetched = await fetchModel(joiner, {
      providers: net.keys.slice(0, 4),
      step: 5,
      expectedDigest: null,
      manifestTimeoutMs: 3000,
    });
    assert.deepEqual(bits(fetched.weights), bits(model.weights));
    assert.deepEqual(fetched.config, model.config);
    assert.equal(fetched.manifestHash, servedA.manifestHash);
    assert.deepEqual(fetched.supporters, [net.keys[0], net.keys[1]].map(toHex));
    assert.deepEqual(fetched.dissenters, [toHex(net.keys[2])]);
    assert.deepEqual(fetched.silent.map((s) => s.peer), [toHex(net.keys[3])]);
    assert.equal(idle.stats.served, 0);
    assert.equal(liar.stats.served, 1, "the liar is asked for its manifest, never for a tensor");
    assert.ok(a.stats.served > 1 && b.stats.served > 1, "tensors came from both supporters");
    // The joiner now serves the same model.
    assert.equal(joiner.store.hashOfName(MANIFEST_NAME), servedA.manifestHash);
    assert.deepEqual(fetched.served, servedA);
  } finally {
    await net.stop();
  }
});

Deno.test("a tie between an honest peer and a liar is refused, not guessed", async () => {
  const net = await network(3);
  try {
    const [a, liar, joiner] = net.services;
    const model = tinyModel(12);
    serveModel(a, model, { step: 5 });
    const other = model.weights.slice();
    other[5] = -other[5];
    serveModel(liar, { ...model, weights: other }, { step: 5 });
    await assert.rejects(
      () =>
        fetchModel(joiner, {
          providers: net.keys.slice(0, 2),
          step: 5,
          expectedDigest: null,
          manifestTimeoutMs: 3000,
        }),
      (e) =>
        e instanceof ManifestDisagreementError && /majority of the 2 answering/.test(e.message),
    );
    assert.equal(joiner.store.hashOfName(MANIFEST_NAME), undefined, "nothing reshared");
  } finally {
    await net.stop();
  }
});

Deno.test("once a majority of all providers agree, the rest are not waited for", async () => {
  // With retries, a peer without the model keeps answering NotFound for seconds.
  const net = await network(4, 3);
  try {
    const [a, b, _idle, joiner] = net.services;
    const model = tinyModel(13);
    serveModel(a, model, { step: 5 });
    serveModel(b, model, { step: 5 });
    const fetched = await fetchModel(joiner, {
      providers: net.keys.slice(0, 3),
      step: 5,
      expectedDigest: null,
      manifestTimeoutMs: 60_000,
    });
    assert.deepEqual(bits(fetched.weights), bits(model.weights));
    assert.deepEqual(fetched.silent, [{ peer: toHex(net.keys[2]), error: "not needed" }]);
  } finally {
    await net.stop();
  }
});

Deno.test("a new snapshot replaces the old one's blobs", async () => {
  const net = await network(1);
  try {
    const [a] = net.services;
    const first = serveModel(a, tinyModel(1), { step: 5 });
    const changed = tinyModel(1);
    const last = changed.layout.entries.at(-1)!;
    changed.weights[last.offset] += 1;
    const second = serveModel(a, changed, { step: 5, replaces: first });
    const kept = [...first.hashes].filter((h) => second.hashes.has(h));
    // Only the changed tensor and the manifest differ.
    assert.equal(kept.length, first.hashes.size - 2);
    for (const h of first.hashes) assert.equal(a.store.has(h), second.hashes.has(h));
    assert.equal(a.store.size, second.hashes.size);
    assert.equal(a.store.hashOfName(MANIFEST_NAME), second.manifestHash);
  } finally {
    await net.stop();
  }
});

Deno.test("with a recorded digest, one peer serving it wins over a stale majority", async () => {
  const net = await network(4);
  try {
    const [stale1, stale2, right, joiner] = net.services;
    const model = tinyModel(21);
    const old = { ...model, weights: model.weights.map((w) => w * 0.5) };
    serveModel(stale1, old, { step: 5 });
    serveModel(stale2, old, { step: 5 });
    const served = serveModel(right, model, { step: 5 });
    const fetched = await fetchModel(joiner, {
      providers: net.keys.slice(0, 3),
      step: 5,
      expectedDigest: served.digest,
      manifestTimeoutMs: 3000,
    });
    assert.deepEqual(bits(fetched.weights), bits(model.weights));
    assert.equal(fetched.digest, served.digest);
    assert.deepEqual(fetched.supporters, [toHex(net.keys[2])]);
  } finally {
    await net.stop();
  }
});

/**
 * A liar serves `honest`'s digest with the parameters `tamper` makes of them: the joiner must
 * refuse them once downloaded, and reshare nothing.
 */
async function assertLabelledLieRefused(
  honest: ReturnType<typeof tinyModel>,
  tamper: (weights: Float32Array) => Float32Array,
): Promise<void> {
  const net = await network(2);
  try {
    const [liar, joiner] = net.services;
    const served = serveModel(liar, honest, { step: 5 });
    // The liar now serves other parameters under the honest label.
    shareModel(liar, modelToBlobs({ ...honest, weights: tamper(honest.weights) }), {
      step: 5,
      digest: hexToBytes(served.digest, 32, "digest"),
    });
    await assert.rejects(
      () =>
        fetchModel(joiner, {
          providers: [net.keys[0]],
          step: 5,
          expectedDigest: served.digest,
          manifestTimeoutMs: 3000,
        }),
      (e) => e instanceof ModelDigestMismatchError && /claims parameters/.test(e.message),
    );
    assert.equal(joiner.store.hashOfName(MANIFEST_NAME), undefined, "nothing reshared");
  } finally {
    await net.stop();
  }
}

Deno.test("a manifest lying about its digest is refused after the download", async () => {
  await assertLabelledLieRefused(tinyModel(22), (weights) => {
    const poisoned = weights.slice();
    poisoned[3] += 1;
    return poisoned;
  });
});

Deno.test("bf16-exact parameters travel as bf16, half the bytes, and arrive bit for bit", async () => {
  const net = await network(4);
  try {
    const [a, b, joiner, other] = net.services;
    const model = tinyModel(24);
    // As after loading a bf16 checkpoint: every parameter is a bf16 value held in f32.
    const rounded = { ...model, weights: decodeBf16(encodeBf16(model.weights)) };
    const servedA = serveModel(a, rounded, { step: 5 });
    serveModel(b, { ...rounded, weights: rounded.weights.slice() }, { step: 5 });
    const asF32 = serveModel(other, model, { step: 5 });
    const tensorElements = model.layout.entries.reduce((n, e) => n + e.size, 0);
    const configBytes = modelToBlobs(model)[0][1].length;
    assert.equal(servedA.bytes, configBytes + 2 * tensorElements, "every tensor in bf16");
    // Unrounded, only the norm gains (still exactly 1) go as bf16.
    const ones = model.layout.entries.filter((e) => e.init === "ones");
    const onesElements = ones.reduce((n, e) => n + e.size, 0);
    assert.equal(asF32.bytes, configBytes + 4 * tensorElements - 2 * onesElements);
    const fetched = await fetchModel(joiner, {
      providers: net.keys.slice(0, 2),
      step: 5,
      expectedDigest: servedA.digest,
      manifestTimeoutMs: 3000,
    });
    // The joiner holds exactly the servers' parameters, and serves the same manifest.
    assert.deepEqual(bits(fetched.weights), bits(rounded.weights));
    assert.equal(fetched.digest, servedA.digest);
    assert.deepEqual(fetched.served, servedA);
    const entries = decodeManifest(a.store.get(servedA.manifestHash)!).entries;
    assert.ok(entries.slice(1).every((e) => e.dtype === "bf16"));
  } finally {
    await net.stop();
  }
});

Deno.test("a peer that rounds the parameters to bf16 under the honest label is refused", async () => {
  // Psyche-style bf16 sharing of f32 masters: half the bytes, but not the run's parameters.
  await assertLabelledLieRefused(tinyModel(25), (weights) => decodeBf16(encodeBf16(weights)));
});

Deno.test("no peer with the recorded parameters: refused, naming what the peers serve", async () => {
  const net = await network(3);
  try {
    const [a, b, joiner] = net.services;
    serveModel(a, tinyModel(23), { step: 4 });
    serveModel(b, tinyModel(23), { step: 5 });
    await assert.rejects(
      () =>
        fetchModel(joiner, {
          providers: net.keys.slice(0, 2),
          step: 5,
          expectedDigest: "ab".repeat(32),
          manifestTimeoutMs: 3000,
        }),
      (e) =>
        e instanceof ModelUnavailableError &&
        /no peer serves the parameters of step 5 \(digest abab/.test(e.message) &&
        /serves step 4/.test(e.message) && /serves step 5/.test(e.message),
    );
    // Without a record, a majority of the peers at the wanted step is enough.
    const fetched = await fetchModel(joiner, {
      providers: net.keys.slice(0, 2),
      step: 5,
      expectedDigest: null,
      manifestTimeoutMs: 3000,
    });
    assert.deepEqual(fetched.supporters, [toHex(net.keys[1])]);
  } finally {
    await net.stop();
  }
});
