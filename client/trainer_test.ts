import assert from "node:assert/strict";
import { loadModel } from "./model_source.ts";
import { NetworkTrainer, wrappedRanges } from "./trainer.ts";
import { LocalDataProvider } from "../data/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { decodePayload, type DistroResult, encodePayload } from "../optimizer/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const T = 16;

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
    const dir = await Deno.makeTempDir();
    using rt = await GpuRuntime.create();
    try {
      const tokens = Uint16Array.from({ length: 8 * T }, (_, i) => (i * 37 + 11) % 512);
      await Deno.writeFile(`${dir}/train.bin`, new Uint8Array(tokens.buffer));
      const data = await LocalDataProvider.open(dir, {
        seqLen: T,
        tokenSize: "TwoBytes",
        vocabSize: 512,
      });
      const model = await loadModel(`${ROOT}config/models/llama-tiny`, "trainer-test");
      const make = () =>
        new NetworkTrainer({
          rt,
          config: model.config,
          layout: model.layout,
          weights: model.weights,
          seqLen: T,
          microBatch: 1,
          maxBatch: 2,
          distro: {
            chunk: 64,
            topk: 4,
            decay: 0.999,
            weightDecay: 0.1,
            clipGradNorm: 1,
            quantize1bit: true,
          },
        });
      using a = make();
      using b = make();
      using c = make(); // trains nothing: decays and applies
      using d = make(); // forgets the decay
      const h0 = await c.paramsHash();
      assert.equal(await a.paramsHash(), h0);
      const ra = await a.train({ step: 1, batch: { start: 0, end: 1 }, lr: 1e-3, prevLr: 0, data });
      const rb = await b.train({ step: 1, batch: { start: 2, end: 3 }, lr: 1e-3, prevLr: 0, data });
      assert.ok(Number.isFinite(ra.loss) && ra.loss > 0);
      assert.equal(ra.tokens, 2 * T);
      // Results travel as payload bytes.
      const wire = (r: DistroResult) =>
        decodePayload(encodePayload(r, a.expectation), a.expectation);
      const results = [wire(ra.result), wire(rb.result)];
      assert.equal(await a.apply(results, 1e-3), true);
      assert.equal(await b.apply([...results].reverse(), 1e-3), true);
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
      await data.close();
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
