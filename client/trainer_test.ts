import assert from "node:assert/strict";
import { wrappedRanges } from "./trainer.ts";
import {
  CLIPPED_DISTRO,
  PLAIN_DISTRO,
  TINY_SEQ_LEN as T,
  tinyTrainerBench,
} from "./testing/tiny_trainer.ts";
import { digestBytes, GpuRuntime } from "../shaders/mod.ts";
import { decodeBf16, encodeBf16, readModelDir } from "../model/mod.ts";
import { decodePayload, encodePayload } from "../optimizer/mod.ts";
import "../net/p2p/mod.ts";
import { createP2PNode, PayloadService } from "../net/p2p/mod.ts";
import { serveModel, serveModelYielding, weightBytes } from "./model_sharing/mod.ts";
import { testPublic, testSecret } from "./testing/p2p.ts";

Deno.test("wrappedRanges: splits a batch that runs past the dataset's end", () => {
  assert.deepEqual(wrappedRanges({ start: 3, end: 6 }, 5), [{ start: 3, end: 4 }, {
    start: 0,
    end: 1,
  }]);
  assert.deepEqual(wrappedRanges({ start: 12, end: 13 }, 5), [{ start: 2, end: 3 }]);
});

Deno.test({
  name:
    "NetworkTrainer: trainers and a decaying non-trainer applying the same results in any order hold identical weights",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using bench = await tinyTrainerBench(8);
    using rt = await GpuRuntime.create();
    const { data } = bench;
    const make = () => bench.trainer(rt, CLIPPED_DISTRO);
    using a = make();
    // Decodes and aggregates on two worker threads (optimizer/codec_pool.ts), a on this one.
    const everything = { workers: 2, minEntries: 0, minPayloadBytes: 0 };
    using b = bench.trainer(rt, CLIPPED_DISTRO, undefined, everything);
    using c = make(); // trains nothing: decays and applies
    using d = make(); // forgets the decay
    const h0 = await c.paramsHash();
    assert.equal(await a.paramsHash(), h0);
    const ra = await a.train({ step: 1, batch: { start: 0, end: 1 }, lr: 1e-3, prevLr: 0, data });
    const rb = await b.train({ step: 1, batch: { start: 2, end: 3 }, lr: 1e-3, prevLr: 0, data });
    assert.ok(Number.isFinite(ra.loss) && ra.loss > 0);
    assert.equal(ra.tokens, 2 * T);
    // Results travel as payload bytes.
    const bytes = [ra, rb].map((r) => encodePayload(r.result, a.expectation));
    const results = bytes.map((x) => decodePayload(x, a.expectation));
    // b decodes on its workers: the same results.
    const decodedByB = await Promise.all(bytes.map((x) => b.decode(x)));
    assert.deepEqual(decodedByB, results);
    assert.equal(await a.apply(results, 1e-3), true);
    assert.equal(await b.apply([...decodedByB].reverse(), 1e-3), true);
    await c.decayWeights(1e-3);
    assert.equal(await c.apply(results, 1e-3), true);
    assert.equal(await d.apply(results, 1e-3), true);
    const h1 = await a.paramsHash();
    assert.notEqual(h1, h0, "the update changed the weights");
    assert.equal(await b.paramsHash(), h1);
    assert.equal(await c.paramsHash(), h1);
    assert.notEqual(await d.paramsHash(), h1, "without the decay a non-trainer drifts");
    assert.equal(await c.apply([], 1e-3), false);
    await assert.rejects(
      a.train({ step: 2, batch: { start: 0, end: 2 }, lr: 1e-3, prevLr: 1e-3, data }),
      /needs 3 micro-batches, the model holds 2/,
    );
  },
});

Deno.test({
  name:
    "NetworkTrainer.roundParamsToBf16: every segment becomes float_codec's bf16 round trip; δ is untouched",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using bench = await tinyTrainerBench(4);
    const { data, model } = bench;
    // The largest tensor's bytes as the buffer cap: the parameters split into several segments.
    const cap = Math.max(...model.layout.entries.map((e) => e.size)) * 4;
    const want = decodeBf16(encodeBf16(model.weights));
    assert.notDeepEqual(want, model.weights, "the initial weights are not bf16-exact");
    const results: string[] = [];
    for (const maxBufferBytes of [undefined, cap]) {
      using rt = await GpuRuntime.create(maxBufferBytes ? { maxBufferBytes } : {});
      using trainer = bench.trainer(rt);
      assert.equal(trainer.model.params.buffers.length > 1, maxBufferBytes !== undefined);
      // A trained step leaves δ non-zero (and θ as loaded: no weight decay, nothing applied).
      await trainer.train({ step: 1, batch: { start: 0, end: 1 }, lr: 1e-3, prevLr: 0, data });
      const delta = await trainer.distro.readState();
      await trainer.roundParamsToBf16();
      const got = await trainer.model.readParams();
      const [gotBits, wantBits] = [new Uint32Array(got.buffer), new Uint32Array(want.buffer)];
      const wrong = gotBits.findIndex((b, i) => b !== wantBits[i]);
      assert.equal(wrong, -1, `θ[${wrong}] is not bf16's round trip of the loaded value`);
      assert.equal(await trainer.paramsHash(), digestBytes(new Uint8Array(want.buffer)));
      assert.deepEqual(await trainer.distro.readState(), delta, "δ stays as it was");
      await trainer.roundParamsToBf16();
      results.push(await trainer.paramsHash());
    }
    assert.equal(results[0], results[1], "rounding twice, split or not, gives the same bits");
  },
});

Deno.test({
  name:
    "NetworkTrainer.paramsHash is the host digest of the trained parameters a Cooldown snapshot serves, split or not",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using bench = await tinyTrainerBench(4);
    const { data, model } = bench;
    const node = await createP2PNode({ secretKey: testSecret(1), allowedPeers: [testPublic(1)] });
    try {
      const payloads = await PayloadService.start(node, { retry: { retries: 0 } });
      const cap = Math.max(...model.layout.entries.map((e) => e.size)) * 4;
      const manifests: string[] = [];
      for (const maxBufferBytes of [undefined, cap]) {
        using rt = await GpuRuntime.create(maxBufferBytes ? { maxBufferBytes } : {});
        using trainer = bench.trainer(rt, CLIPPED_DISTRO);
        assert.equal(trainer.model.params.buffers.length > 1, maxBufferBytes !== undefined);
        // Trained and applied: parameters that are neither the loaded ones nor bf16-exact.
        const r = await trainer.train({
          step: 1,
          batch: { start: 0, end: 1 },
          lr: 1e-3,
          prevLr: 0,
          data,
        });
        assert.equal(await trainer.apply([r.result], 1e-3), true);
        const weights = await trainer.readParams();
        const snapshot = { config: trainer.config, layout: trainer.layout, weights };
        const gpu = await trainer.paramsHash();
        assert.notEqual(gpu, digestBytes(weightBytes(model)), "training changed the parameters");
        // What #shareModel now does (the GPU's digest) against what it did (the host's).
        const host = serveModel(payloads, snapshot, { step: 2 });
        assert.equal(gpu, host.digest);
        const served = await serveModelYielding(payloads, snapshot, { step: 2, digest: gpu });
        assert.deepEqual(served, host);
        manifests.push(served.manifestHash);
      }
      assert.equal(manifests[0], manifests[1], "split or not, the same snapshot");
    } finally {
      await node.stop();
    }
  },
});

Deno.test({
  name:
    "NetworkTrainer.save and readParams: stream the parameters off the GPU, split or not, saying how far they got",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using bench = await tinyTrainerBench(1);
    const { model } = bench;
    const cap = Math.max(...model.layout.entries.map((e) => e.size)) * 4;
    for (const maxBufferBytes of [undefined, cap]) {
      using rt = await GpuRuntime.create(maxBufferBytes ? { maxBufferBytes } : {});
      using trainer = bench.trainer(rt);
      const reports: number[] = [];
      const out = `${bench.dir}/ck-${maxBufferBytes ?? "whole"}`;
      await trainer.save(out, {
        chunkFloats: 1000,
        onProgress: (done, total) => {
          assert.equal(total, 4 * model.layout.paramCount);
          reports.push(done);
        },
      });
      assert.ok(reports.length > 10, `${reports.length} reports`);
      assert.equal(reports.at(-1), 4 * model.layout.paramCount);
      const whole = await trainer.model.readParams();
      const saved = await readModelDir(out);
      assert.deepEqual(saved.weights, whole);
      // Read back a chunk at a time for a snapshot: the same floats, padding included.
      const read: number[] = [];
      const chunked = await trainer.readParams({
        chunkFloats: 1000,
        onProgress: (done, total) => {
          assert.equal(total, whole.byteLength);
          read.push(done);
        },
      });
      assert.deepEqual(chunked, whole);
      assert.ok(read.length > 10 && read.at(-1) === whole.byteLength, `${read.length} reports`);
    }
  },
});

/** The bits of `x`. */
const bitsOf = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);

/**
 * llama-tiny's weights with values a pass that writes θ at lr 0 would change: −0 every 5th
 * (`θ − 0·sign(X)` gives +0 where X < 0), ± subnormals every 11th (a GPU may flush them) and
 * a few signalling NaNs (`θ·1` quiets them).
 */
function awkwardWeights(weights: Float32Array): Float32Array {
  const out = weights.slice();
  const bits = bitsOf(out);
  for (let i = 0; i < out.length; i += 5) out[i] = -0;
  for (let i = 3; i < out.length; i += 11) bits[i] = 0x00000abc | (i % 2 ? 0x80000000 : 0);
  for (let i = 9; i < out.length; i += 4099) bits[i] = 0x7f801234;
  return out;
}

/** Weight decay on, so the dry steps' decay pass would touch θ. */
const WARM_DISTRO = { ...PLAIN_DISTRO, weightDecay: 0.1 };

Deno.test({
  name:
    "NetworkTrainer.warmUp: θ keeps the loaded bits (−0, subnormals, NaNs) that the same passes on θ change; δ is zeroed",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using bench = await tinyTrainerBench(1);
    const { model } = bench;
    const weights = awkwardWeights(model.weights);
    const loaded = bitsOf(weights);
    const cap = Math.max(...model.layout.entries.map((e) => e.size)) * 4;
    for (const maxBufferBytes of [undefined, cap]) {
      using rt = await GpuRuntime.create(maxBufferBytes ? { maxBufferBytes } : {});
      // The control: the warm-up's passes run on θ itself, as before, change those bits.
      {
        using trainer = bench.trainer(rt, WARM_DISTRO, weights);
        const zeros = new Uint32Array(2 * T);
        const none = {
          seqLen: T,
          numSequences: 2,
          getSamples: () => Promise.resolve({ count: 2, seqLen: T, tokens: zeros }),
          close: () => Promise.resolve(),
        };
        const batch = { start: 0, end: 1 };
        const dry = { batch, lr: 0, prevLr: 0, data: none };
        // θ·1 may or may not change a NaN or subnormal, by GPU (lavapipe quiets the
        // signalling NaNs); the apply's −0 → +0 is IEEE's rounding, on every GPU.
        await trainer.train({ step: 0, ...dry });
        const second = await trainer.train({ step: 1, ...dry });
        await trainer.apply([second.result], 0);
        const applied = bitsOf(await trainer.model.readParams());
        const flipped = loaded.filter((b, i) => b === 0x80000000 && applied[i] === 0).length;
        assert.ok(flipped > 0, "θ − 0·sign(X) turns some −0 into +0");
      }
      using trainer = bench.trainer(rt, WARM_DISTRO, weights);
      assert.equal(trainer.model.params.buffers.length > 1, maxBufferBytes !== undefined);
      const said: string[] = [];
      await trainer.warmUp(2, undefined, {
        onStage: (stage, sequences) => said.push(`${stage} ${sequences}`),
      });
      assert.deepEqual(said, ["first_step 2", "second_step 2", "apply 2"]);
      const got = bitsOf(await trainer.model.readParams());
      const wrong = got.findIndex((b, i) => b !== loaded[i]);
      assert.equal(wrong, -1, `θ[${wrong}] is not the loaded value`);
      assert.equal(await trainer.paramsHash(), digestBytes(new Uint8Array(weights.buffer)));
      const state = await trainer.distro.readState();
      assert.equal(state.kind === "distro" && state.own, null, "no own result");
      assert.ok(state.delta.every((d) => Object.is(d, 0)), "δ is zeroed");
    }
  },
});

Deno.test({
  name: "NetworkTrainer.warmUp: the steps after it give the bits of a trainer that never warmed up",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using bench = await tinyTrainerBench(4);
    const { data } = bench;
    using rt = await GpuRuntime.create();
    const runs: (string | Uint8Array)[][] = [];
    // Warmed first, on a fresh runtime: its steps must build no pipeline of their own.
    for (const warm of [true, false]) {
      using trainer = bench.trainer(rt, WARM_DISTRO);
      if (warm) await trainer.warmUp(2);
      const built = rt.pipelineCount;
      const seen: (string | Uint8Array)[] = [];
      for (const step of [1, 2]) {
        const start = 2 * (step - 1);
        const trained = await trainer.train({
          step,
          batch: { start, end: start + 1 },
          lr: 1e-3,
          prevLr: step === 1 ? 0 : 1e-3,
          data,
        });
        const plain = { ...trainer.expectation, stateDigests: false };
        // The nonce counts the dry steps too: all else must match.
        seen.push(encodePayload({ ...trained.result, trainerNonce: 0 }, plain));
        await trainer.apply([trained.result], 1e-3);
        seen.push(await trainer.paramsHash());
      }
      if (warm) assert.equal(rt.pipelineCount, built, "pipelines the warm-up did not build");
      runs.push(seen);
    }
    assert.deepEqual(runs[0], runs[1], "results and θ after each step");
  },
});
