import assert from "node:assert/strict";
import { ResultReplayer } from "./replayer.ts";
import { CLIPPED_DISTRO, tinyTrainerBench } from "./testing/tiny_trainer.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { decodePayload, encodePayload } from "../optimizer/mod.ts";

Deno.test({
  name: "a replay from the kept parameters and the served state is the trainer's step, bit for bit",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using bench = await tinyTrainerBench(12, "replayer-test");
    using rt = await GpuRuntime.create();
    const { data } = bench;
    const make = () => bench.trainer(rt, CLIPPED_DISTRO);
    using trainer = make();
    using verifier = make(); // trains nothing: decays and applies, like a client without a batch
    using replayer = new ResultReplayer(verifier);
    const wire = (r: Parameters<typeof encodePayload>[0]) =>
      decodePayload(encodePayload(r, trainer.expectation), trainer.expectation);
    for (let step = 1; step <= 3; step++) {
      const lr = 1e-3 * step;
      const prevLr = 1e-3 * (step - 1);
      const height = step - 1;
      const batch = { start: 2 * height, end: 2 * height + 1 };
      replayer.keep(height);
      const before = await trainer.distro.readState();
      const trained = await trainer.train({ step, batch, lr, prevLr, data });
      const after = await trainer.distro.readState();
      const own = await trainer.distro.readOwn();
      const replayed = await replayer.replay({
        height,
        state: before,
        step,
        batch,
        lr,
        prevLr,
        data,
      });
      assert.deepEqual(replayed.own, own, `step ${step}: the same coefficients and values`);
      assert.deepEqual(replayed.state, after, `step ${step}: the same state after`);
      assert.ok(replayed.gradientStep > 0 && replayed.gradientStep <= lr * 1.000001);
      assert.ok(Math.abs(replayed.loss - trained.loss) < 1e-6);
      // Both apply the result; the verifier decays as a client without a batch does.
      await verifier.decayWeights(lr);
      const result = wire(trained.result);
      await trainer.apply([result], lr);
      await verifier.apply([result], lr);
      assert.equal(await verifier.paramsHash(), await trainer.paramsHash());
    }
    assert.deepEqual(replayer.keptHeights, [0, 1, 2]);
    replayer.retain([2]);
    assert.deepEqual(replayer.keptHeights, [2]);
    replayer.keep(3); // reuses a released copy
    assert.deepEqual(replayer.keptHeights, [2, 3]);
    await assert.rejects(
      () =>
        replayer.replay({
          height: 0,
          state: { kind: "distro", delta: new Float32Array(trainer.layout.totalSize), own: null },
          step: 1,
          batch: { start: 0, end: 1 },
          lr: 1e-3,
          prevLr: 0,
          data,
        }),
      /the parameters of round 0 were not kept/,
    );
  },
});
