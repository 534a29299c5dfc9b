/**
 * How many kernels DisTrO launches per step on llama-tiny's and the 20M model's layouts: at small
 * batches a GPU step is mostly per-dispatch overhead (train/step_dispatches_test.ts), and per
 * parameter DisTrO's dispatches outnumbered the model's own. Every per-chunk kernel now runs as
 * one table dispatch per pipeline over all the parameters that take it (all fit one binding
 * here), so the counts follow from the kinds of chunk the shapes make, not from the number of
 * parameters. Derived from the layouts, not copied from a run.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DistroOptimizer } from "./distro_gpu.ts";
import { chunkRows, hasChunkKernels } from "./chunk_wgsl.ts";
import { hasFastDct } from "../fast_dct.ts";
import type { ChunkLayout } from "../layout.ts";
import { llamaParamLayout, readLlamaConfig } from "../../model/mod.ts";
import { GpuRuntime } from "../../shaders/mod.ts";

const MODELS = ["llama-tiny", "llama-20m"];

/** Distinct values of `key` over `layouts`: the pipelines, so the table dispatches, of a kind. */
function kinds(layouts: readonly ChunkLayout[], key: (l: ChunkLayout) => string): number {
  return new Set(layouts.map(key)).size;
}

for (const model of MODELS) {
  Deno.test(`DisTrO launches one dispatch per pipeline, not per parameter (${model})`, async () => {
    const path = new URL(`../../config/models/${model}/config.json`, import.meta.url).pathname;
    const layout = llamaParamLayout(await readLlamaConfig(path));
    using rt = await GpuRuntime.create({ profileDispatches: true });
    if (!rt.hasTimestamps) return; // dispatch names come with the timestamps
    const size = layout.totalSize;
    const params = layout.entries.map((e) => ({ name: e.name, shape: e.shape, offset: e.offset }));
    using opt = new DistroOptimizer(rt, {
      params,
      size,
      config: {
        chunk: 64,
        topk: 4,
        decay: 0.999,
        weightDecay: 0.1,
        clipGradNorm: null,
        quantize1bit: true,
      },
    });
    const theta = rt.buffer("theta", size * 4);
    const grads = rt.buffer("grads", new Float32Array(size).fill(1e-3));
    const counts: Map<string, number>[] = [];
    for (let t = 1; t <= 2; t++) {
      const before = rt.dispatchTimings!.length;
      const step = rt.beginStep("distro step");
      opt.encodeStep(step, { params: theta, grads, lr: 1e-3, stepNumber: t, gradSumSq: null });
      await step.submit();
      const count = new Map<string, number>();
      for (const { name } of rt.dispatchTimings!.slice(before)) {
        const kind = name.split("/")[1];
        count.set(kind, (count.get(kind) ?? 0) + 1);
      }
      counts.push(count);
    }
    const layouts = opt.layouts;
    const n = layouts.length;
    // Llama at chunk 64: every side a power of two, so all take the fused feedback + fast DCT.
    assert.ok(layouts.every((l) => hasFastDct(l.n1) && hasFastDct(l.n2)));
    // The fused column pass is keyed by chunk height and columns per invocation (two where the
    // parameter's columns and chunk width are even); the DCT's row pass by chunk width and
    // whether it writes row maxima (widths that are multiples of 4); top-k by that too: the
    // row-skipping kernel where there are row maxima, else the vec4 or scalar scan.
    const cols = (l: ChunkLayout) => l.shape.length === 2 ? l.shape[1] : 1;
    const rowMax = (l: ChunkLayout) => l.n2 % 4 === 0;
    const feedback = kinds(layouts, (l) => `${l.n1} ${cols(l) % 2 === 0 && l.n2 % 2 === 0}`);
    const rows = kinds(layouts, (l) => `${l.n2} ${rowMax(l)}`);
    const topk = kinds(layouts, (l) => rowMax(l) ? "rows" : `${l.totalk % 4 === 0}`);
    // The apply: the per-chunk kernel keyed by chunk width and row block, or the exact vec4 or
    // scalar kernel; the own result's fixed point, one kernel.
    const apply = kinds(
      layouts,
      (l) => hasChunkKernels(l.n2) ? `${l.n2} ${chunkRows(l.n1)}` : `${l.n2 % 4 === 0}`,
    );
    const sum = (c: Map<string, number>, ...names: string[]) =>
      names.reduce((a, name) => a + (c.get(name) ?? 0), 0);
    for (const [t, c] of counts.entries()) {
      const applies = t === 0 ? 0 : 1;
      assert.deepEqual(
        {
          weightDecay: sum(c, "weight-decay"),
          feedback: sum(c, "fast-feedback-cols"),
          rows: sum(c, "fast-dct-rows", "fast-dct-rows-max"),
          topk: sum(c, "topk", "topk-vec4", "topk-rows"),
          ownFixed: sum(c, "own-fixed"),
          apply: sum(c, "chunk-apply", "apply", "apply-vec4"),
          lookahead: sum(c, "lookahead"),
        },
        {
          weightDecay: 1, // one flat pass over the buffer (it fits one binding)
          feedback,
          rows,
          topk,
          ownFixed: applies,
          apply: applies * apply,
          lookahead: 1,
        },
        `${model} step ${t + 1}`,
      );
      const distro = [...c.values()].reduce((a, b) => a + b, 0);
      assert.ok(distro < n, `${distro} dispatches for ${n} parameters`);
    }
  });
}
