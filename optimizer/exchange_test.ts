/**
 * Several peers running the networked DisTrO protocol end to end: generate, encode the payload,
 * commit, receive everyone's payloads in a peer-specific order, verify, decode, aggregate
 * exactly and apply. Two CPU reference peers and one GPU peer must hold bit-identical
 * parameters after every step.
 */
import assert from "node:assert/strict";
import { ed25519 } from "@noble/curves/ed25519.js";
import { randomF32 } from "../shaders/testing/kernels.ts";
import { commit, type Commitment, verifyCommitment } from "./commitment.ts";
import { type DistroConfig, DistroReference, type NamedParam } from "./distro.ts";
import { aggregateFixed } from "./exact.ts";
import { DistroOptimizer } from "./gpu/distro_gpu.ts";
import { chunkLayouts } from "./layout.ts";
import { canonicalOrder, type DistroResult } from "./result.ts";
import { decodePayload, encodePayload } from "./wire.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const SHAPES = [{ name: "w", shape: [32, 48] }, { name: "b", shape: [48] }];
const OFFSETS = [0, 32 * 48];
const SIZE = 32 * 48 + 64;

const CONFIG: DistroConfig = {
  chunk: 16,
  topk: 4,
  decay: 0.95,
  weightDecay: 0.01,
  clipGradNorm: null,
  quantize1bit: true,
};

interface Peer {
  secret: Uint8Array;
  publicKey: Uint8Array;
  target: Float32Array[];
  /** Current parameters, per tensor. */
  theta(): Promise<Float32Array[]>;
  /** Lookahead, gradients of ½‖θ − target‖², generate: the result to send. */
  train(step: number, lr: number, prevLr: number): Promise<DistroResult>;
  apply(results: DistroResult[], lr: number): Promise<void>;
}

function cpuPeer(id: number, init: Float32Array[], config: DistroConfig): Peer {
  const params: NamedParam[] = SHAPES.map((s, n) => ({ ...s, data: init[n].slice() }));
  const opt = new DistroReference(params, config);
  const secret = new Uint8Array(32).fill(id + 1);
  const target = SHAPES.map((_, n) => randomF32(100 * id + n, init[n].length));
  return {
    secret,
    publicKey: ed25519.getPublicKey(secret),
    target,
    theta: () => Promise.resolve(params.map((p) => p.data.slice())),
    train(step, lr, prevLr) {
      opt.lookahead(prevLr);
      const grads = params.map((p, n) => p.data.map((x, i) => x - target[n][i]));
      const gen = opt.generate(grads, lr);
      return Promise.resolve(
        DistroReference.result({ step, batch: { start: id, end: id }, trainerNonce: 0 }, gen),
      );
    },
    apply(results, lr) {
      opt.apply(results, lr);
      return Promise.resolve();
    },
  };
}

function gpuPeer(
  rt: GpuRuntime,
  id: number,
  options: { init: Float32Array[]; config: DistroConfig },
): Peer & Disposable {
  const { init, config } = options;
  const flat = new Float32Array(SIZE);
  init.forEach((t, n) => flat.set(t, OFFSETS[n]));
  const params = rt.buffer("params", flat);
  const grads = rt.buffer("grads", SIZE * 4);
  const opt = new DistroOptimizer(rt, {
    params: SHAPES.map((s, n) => ({ ...s, offset: OFFSETS[n] })),
    size: SIZE,
    config,
  });
  const secret = new Uint8Array(32).fill(id + 1);
  const target = SHAPES.map((_, n) => randomF32(100 * id + n, init[n].length));
  const theta = async () => {
    const all = await rt.read(params);
    return init.map((t, n) => all.slice(OFFSETS[n], OFFSETS[n] + t.length));
  };
  return {
    secret,
    publicKey: ed25519.getPublicKey(secret),
    target,
    theta,
    async train(step, lr, prevLr) {
      const look = rt.beginStep("lookahead");
      opt.encodeLookahead(look, { params, prevLr });
      await look.submit();
      const g = new Float32Array(SIZE);
      (await theta()).forEach((t, n) => g.set(t.map((x, i) => x - target[n][i]), OFFSETS[n]));
      rt.write(grads, g);
      const gen = rt.beginStep("generate");
      opt.encodeGenerate(gen, { params, grads, lr, gradSumSq: null });
      await gen.submit();
      return {
        step,
        batch: { start: id, end: id },
        trainerNonce: 0,
        params: await opt.readResult(),
      };
    },
    async apply(results, lr) {
      const ordered = canonicalOrder(results);
      const update = opt.layouts.map((l, n) => aggregateFixed(l, ordered.map((r) => r.params[n])));
      const s = rt.beginStep("apply");
      opt.encodeApply(s, { params, lr, update });
      await s.submit();
    },
    [Symbol.dispose]: () => opt[Symbol.dispose](),
  };
}

async function exchange(config: DistroConfig) {
  using rt = await GpuRuntime.create();
  const init = SHAPES.map((s, n) => randomF32(7 + n, s.shape.reduce((a, b) => a * b), -1, 1));
  using gpu = gpuPeer(rt, 2, { init, config });
  const peers: Peer[] = [cpuPeer(0, init, config), cpuPeer(1, init, config), gpu];
  const expect = { layouts: chunkLayouts(SHAPES, config), quantize1bit: config.quantize1bit };
  const orders = [[2, 0, 1], [1, 2, 0], [0, 1, 2]];
  let prevLr = 0;
  const start = await peers[0].theta();
  for (let step = 1; step <= 4; step++) {
    const lr = 0.05;
    const sent: { payload: Uint8Array; commitment: Commitment }[] = [];
    for (const peer of peers) {
      const result = await peer.train(step, lr, prevLr);
      const payload = encodePayload(result, expect);
      sent.push({
        payload,
        commitment: commit({ step, batch: result.batch, payload }, peer.secret),
      });
    }
    for (const [me, peer] of peers.entries()) {
      const received = orders[me].map((from) => {
        const { payload, commitment } = sent[from];
        // Peer `from` was assigned batch [from, from] for this step.
        const batch = { start: from, end: from };
        const result = decodePayload(payload, { ...expect, step, batch });
        assert.ok(
          verifyCommitment(commitment, peers[from].publicKey, {
            step,
            batch: result.batch,
            payload,
          }),
        );
        return result;
      });
      await peer.apply(received, lr);
    }
    const thetas = await Promise.all(peers.map((p) => p.theta()));
    assert.deepEqual(thetas[1], thetas[0], `step ${step}: CPU peers differ`);
    assert.deepEqual(thetas[2], thetas[0], `step ${step}: the GPU peer differs`);
    prevLr = lr;
  }
  const end = await peers[0].theta();
  assert.notDeepEqual(end, start);
}

Deno.test("two CPU peers and a GPU peer stay bit-identical through signed payload exchange", async () => {
  await exchange(CONFIG);
});

Deno.test("the same holds with bf16 values (canonical order, decoded payloads only)", async () => {
  await exchange({ ...CONFIG, quantize1bit: false });
});
