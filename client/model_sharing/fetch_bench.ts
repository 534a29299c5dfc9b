/**
 * P2P model sharing speed: a joiner fetching the 20 M-parameter Llama (config/models/llama-20m,
 * 80 MB of f32 blobs) from two providers in the same process, over the bulk path (tensors of
 * 1 MiB and more; the default) and with it off (every byte over noise), and the blob codec alone;
 * and a resync as a diverged or restarted client does it: the parameters of the recorded step
 * (their digest checked), then put on the GPU with the dry steps that build its pipelines.
 * Group "dtype" fetches the same model with its parameters rounded to bf16 (as right after a
 * bf16 checkpoint load), which travels as bf16 blobs (40 MB), against the f32 fetch.
 *
 *   deno bench -A client/model_sharing/fetch_bench.ts
 *
 * @module
 */
import "../../net/p2p/mod.ts";
import { createP2PNode } from "../../net/p2p/mod.ts";
import { PayloadService } from "../../net/p2p/mod.ts";
import { testPublic, testSecret } from "../testing/p2p.ts";
import { modelFromBlobs, modelToBlobs } from "./blobs.ts";
import { fetchModel } from "./fetch.ts";
import { serveModel } from "./serve.ts";
import { NetworkTrainer } from "../trainer.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import { decodeBf16, encodeBf16, initParams, readModelDir } from "../../model/mod.ts";

const { config, layout } = await readModelDir("config/models/llama-20m");
const model = { config, layout, weights: initParams(layout, config, 1) };
const blobs = modelToBlobs(model);
const rounded = { ...model, weights: decodeBf16(encodeBf16(model.weights)) };
const bf16Blobs = modelToBlobs(rounded);

// Nodes 1 and 2 provide; node 3 fetches with the bulk path on, node 4 with it off; nodes 5
// and 6 provide the bf16-exact model.
const ids = [1, 2, 3, 4, 5, 6];
const keys = ids.map(testPublic);
const nodes = await Promise.all(
  ids.map((n) => createP2PNode({ secretKey: testSecret(n), allowedPeers: keys })),
);
const services = await Promise.all(
  nodes.map((node, i) => PayloadService.start(node, i === 3 ? { bulk: false } : {})),
);
for (let i = 1; i < ids.length; i++) {
  for (let j = 0; j < i; j++) await nodes[i].connect(nodes[j].addresses()[0]);
}
const served = serveModel(services[0], model, { step: 1 });
serveModel(services[1], model, { step: 1 });
const servedBf16 = serveModel(services[4], rounded, { step: 1 });
serveModel(services[5], rounded, { step: 1 });
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
console.log(`f32 snapshot: ${served.bytes} bytes; bf16-exact snapshot: ${servedBf16.bytes} bytes`);

Deno.bench("blobs: llama-20m to f32 blobs (80 MB)", { group: "codec" }, () => {
  modelToBlobs(model);
});

Deno.bench("blobs: f32 blobs to llama-20m", { group: "codec" }, () => {
  modelFromBlobs(blobs);
});

Deno.bench("blobs: bf16-exact llama-20m to bf16 blobs (40 MB)", { group: "codec" }, () => {
  modelToBlobs(rounded);
});

Deno.bench("blobs: bf16 blobs to llama-20m", { group: "codec" }, () => {
  modelFromBlobs(bf16Blobs);
});

Deno.bench(
  `dtype: fetch llama-20m as f32 (${mb(served.bytes)}) from 2 providers, digest checked`,
  { group: "dtype", baseline: true, n: 8, warmup: 2 },
  async () => {
    await fetchModel(services[2], {
      providers: keys.slice(0, 2),
      step: 1,
      expectedDigest: served.digest,
      reshare: false,
    });
  },
);

Deno.bench(
  `dtype: fetch llama-20m as bf16 (${mb(servedBf16.bytes)}) from 2 providers, digest checked`,
  { group: "dtype", n: 8, warmup: 2 },
  async () => {
    const fetched = await fetchModel(services[2], {
      providers: keys.slice(4, 6),
      step: 1,
      expectedDigest: servedBf16.digest,
      reshare: false,
    });
    if (fetched.weights.length !== rounded.weights.length) throw new Error("wrong model");
  },
);

Deno.bench(
  "fetch llama-20m from 2 providers (80 MB, verified), bulk path",
  { group: "fetch", baseline: true, n: 5, warmup: 1 },
  async () => {
    // A fresh store each time: no reshare, so nothing is served locally.
    await fetchModel(services[2], {
      providers: keys.slice(0, 2),
      step: 1,
      expectedDigest: null,
      reshare: false,
    });
  },
);

Deno.bench(
  "fetch llama-20m from 2 providers (80 MB, verified), in-band only",
  { group: "fetch", n: 5, warmup: 1 },
  async () => {
    await fetchModel(services[3], {
      providers: keys.slice(0, 2),
      step: 1,
      expectedDigest: null,
      reshare: false,
    });
  },
);

Deno.bench(
  "resync llama-20m: fetch the recorded step's parameters from 2 providers, digest checked",
  { group: "resync", baseline: true, n: 5, warmup: 1 },
  async () => {
    await fetchModel(services[2], {
      providers: keys.slice(0, 2),
      step: 1,
      expectedDigest: served.digest,
      reshare: false,
    });
  },
);

const rt = await GpuRuntime.create();
Deno.bench(
  "resync llama-20m: fetch, then the client's install (GPU upload, 2 dry steps of 2 x 128, digest)",
  { group: "resync", n: 3, warmup: 1 },
  async () => {
    const fetched = await fetchModel(services[2], {
      providers: keys.slice(0, 2),
      step: 1,
      expectedDigest: served.digest,
      reshare: false,
    });
    using trainer = new NetworkTrainer({
      rt,
      config: fetched.config,
      layout: fetched.layout,
      weights: fetched.weights,
      seqLen: 128,
      microBatch: 1,
      maxBatch: 2,
      distro: {
        chunk: 64,
        topk: 8,
        decay: 0.999,
        weightDecay: null,
        clipGradNorm: 1,
        quantize1bit: true,
      },
    });
    await trainer.warmUp(2);
    if (await trainer.paramsHash() !== served.digest) throw new Error("resynced to other bits");
  },
);

globalThis.addEventListener("unload", () => {
  for (const node of nodes) void node.stop();
});
