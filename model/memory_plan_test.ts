import assert from "node:assert/strict";
import {
  checkMemoryPlan,
  formatBytes,
  formatMemoryPlan,
  logitsChunkRows,
  type MemoryLimits,
  planMemory,
} from "./memory_plan.ts";
import { parseLlamaConfig, readLlamaConfig } from "./hf_config.ts";
import { initParams, llamaParamLayout } from "./params.ts";
import { LlamaModel } from "./llama.ts";
import { CPU_PROFILE, GPU_PROFILE, GpuRuntime } from "../shaders/mod.ts";

const GiB = 2 ** 30, MiB = 2 ** 20;
const TINY = parseLlamaConfig({
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 40,
  max_position_embeddings: 64,
});
const LLAMA_1B = await readLlamaConfig(
  new URL("../config/models/llama-1b/config.json", import.meta.url).pathname,
);
/** lavapipe's limits on a 24 GiB machine. */
const LAVAPIPE: MemoryLimits = {
  maxBufferSize: 2 ** 31 - 1,
  maxStorageBufferBindingSize: 128 * MiB,
  systemTotal: 24 * GiB,
  systemAvailable: 20 * GiB,
  unified: true,
};
const FLAGS = {
  flags: { microBatch: "--micro-batch", seqLen: "--sequence-length", recompute: "--recompute" },
};

Deno.test("the plan's parameters and activations are what LlamaModel allocates", async () => {
  const layout = llamaParamLayout(TINY);
  const plan = planMemory({
    config: TINY,
    microBatch: 3,
    seqLen: 8,
    slots: 2,
    optimizer: "adamw",
    precision: "f32",
  });
  assert.equal(plan.device[0].bytes, layout.totalSize * 4);
  assert.equal(plan.device[2].bytes, 2 * layout.totalSize * 4); // m, v
  using rt = await GpuRuntime.create();
  using model = new LlamaModel(rt, {
    config: TINY,
    layout,
    weights: initParams(layout, TINY, 1),
    microBatch: 3,
    seqLen: 8,
    slots: 2,
  });
  const saved = plan.device.find((i) => i.label.startsWith("activations saved"))!;
  assert.equal(saved.bytes, model.activationBytes);
  // With recomputation: one layer's set instead of L, the residuals unchanged.
  using recomputed = new LlamaModel(rt, {
    config: TINY,
    layout,
    weights: initParams(layout, TINY, 1),
    microBatch: 3,
    seqLen: 8,
    slots: 2,
    recompute: true,
  });
  const lean = planMemory({
    config: TINY,
    microBatch: 3,
    seqLen: 8,
    slots: 2,
    optimizer: "adamw",
    precision: "f32",
    recompute: true,
  }).device.find((i) => i.label.startsWith("activations saved"))!;
  assert.equal(lean.label, "activations saved (3×8 tokens, recomputed)");
  assert.equal(lean.bytes, recomputed.activationBytes);
  assert.ok(lean.bytes < saved.bytes);
  // bf16 (no device feature needed) saves 16-bit activations and adds the weight copies.
  const args = { config: TINY, microBatch: 3, seqLen: 8, slots: 2, optimizer: "adamw" } as const;
  const planBf16 = planMemory({ ...args, precision: "bf16" });
  using bf16 = new LlamaModel(rt, {
    ...args,
    layout,
    weights: initParams(layout, TINY, 1),
    precision: "bf16",
  });
  const savedBf16 = planBf16.device.find((i) => i.label.startsWith("activations saved"))!;
  assert.equal(savedBf16.bytes, bf16.activationBytes);
  assert.ok(planBf16.device.some((i) => i.label === "bf16 copies of the matmul weights"));
});

Deno.test("a tied model holds one [V, C] matrix, and its f16 head copy is the embedding's", () => {
  const base = { microBatch: 1, seqLen: 8, slots: 1, optimizer: "adamw" } as const;
  const tied = { ...TINY, tieWordEmbeddings: true };
  const vc = TINY.vocabSize * TINY.hiddenSize;
  const untiedPlan = planMemory({ ...base, config: TINY, precision: "f16" });
  const tiedPlan = planMemory({ ...base, config: tied, precision: "f16" });
  assert.equal(tiedPlan.parameterBuffer.bytes, llamaParamLayout(tied).totalSize * 4);
  assert.equal(untiedPlan.parameterBuffer.bytes - tiedPlan.parameterBuffer.bytes, vc * 4);
  // Mixed precision copies every matmul weight, the head's included, tied or not.
  const copies = (p: typeof tiedPlan) =>
    p.device.find((i) => i.label.startsWith("f16 copies"))!.bytes;
  assert.equal(copies(tiedPlan), copies(untiedPlan));
});

Deno.test("DisTrO holds momentum with error feedback and the saved parameters", () => {
  const base = { config: TINY, microBatch: 1, seqLen: 8, slots: 1, precision: "f32" } as const;
  const adamw = planMemory({ ...base, optimizer: "adamw" });
  const distro = planMemory({ ...base, optimizer: "distro" });
  const P = adamw.parameterBuffer.bytes;
  assert.deepEqual(distro.device.slice(2, 4).map((i) => i.bytes), [P, P]);
  assert.ok(distro.deviceBytes > adamw.deviceBytes);
});

Deno.test("packed rows add each slot's positions and document spans, 12 bytes a token", () => {
  const base = {
    config: TINY,
    microBatch: 2,
    seqLen: 8,
    slots: 3,
    precision: "f32",
    optimizer: "adamw",
  } as const;
  const plain = planMemory(base);
  const packed = planMemory({ ...base, packedRows: true });
  const item = packed.device.find((i) => i.label === "token positions and documents");
  assert.equal(item?.bytes, 12 * 2 * 8 * 3);
  assert.equal(packed.deviceBytes - plain.deviceBytes, item!.bytes);
  assert.ok(!plain.device.some((i) => i.label === "token positions and documents"));
});

Deno.test("DisTrO's DCT scratch holds one binding of a tensor larger than a binding", () => {
  const base = {
    config: LLAMA_1B,
    microBatch: 1,
    seqLen: 8,
    slots: 1,
    precision: "f32",
    optimizer: "distro",
  } as const;
  const scratch = (p: ReturnType<typeof planMemory>) =>
    p.device.find((i) => i.label === "DisTrO top-k and DCT scratch")!.bytes;
  const whole = scratch(planMemory(base));
  const blocked = scratch(planMemory({ ...base, maxBindingBytes: 128 * MiB }));
  // Two buffers of the 1002 MiB embedding, or of one 128 MiB binding, and a row maximum for
  // every 64 of their floats.
  assert.equal(whole - blocked, (2 + 1 / 64) * (128256 * 2048 * 4 - 128 * MiB));
  // The verdict plans with the adapter's binding limit.
  const lines = formatMemoryPlan(base, LAVAPIPE, FLAGS).lines.join("\n");
  assert.match(lines, new RegExp(`DisTrO top-k and DCT scratch\\s+${formatBytes(blocked)}`));
});

Deno.test("the GPU profile's split-K partials are counted at their budget; the CPU's hold none", () => {
  const base = {
    config: TINY,
    microBatch: 1,
    seqLen: 8,
    slots: 1,
    precision: "f32",
    optimizer: "adamw",
  } as const;
  const cpu = planMemory({ ...base, splitKScratchBytes: CPU_PROFILE.splitK.scratchBytes });
  const gpu = planMemory({ ...base, splitKScratchBytes: GPU_PROFILE.splitK.scratchBytes });
  assert.equal(CPU_PROFILE.splitK.scratchBytes, 0);
  assert.ok(!cpu.device.some((i) => i.label.startsWith("split-K")));
  assert.deepEqual(gpu.device.filter((i) => i.label.startsWith("split-K")), [
    { label: "split-K partials (at most)", bytes: 2 * GPU_PROFILE.splitK.scratchBytes },
  ]);
  assert.equal(gpu.deviceBytes - cpu.deviceBytes, 2 * GPU_PROFILE.splitK.scratchBytes);
});

Deno.test("a plan that fits passes; activations grow with micro-batch × sequence", () => {
  const input = {
    config: TINY,
    microBatch: 2,
    seqLen: 16,
    slots: 1,
    optimizer: "adamw",
    precision: "f32",
  } as const;
  const v = checkMemoryPlan(input, LAVAPIPE);
  assert.deepEqual(v.problems, []);
  assert.ok(v.fits);
  const act = (b: number, t: number) =>
    planMemory({ ...input, microBatch: b, seqLen: t }).device[3].bytes;
  assert.equal(act(4, 16), 2 * act(2, 16));
  assert.equal(act(2, 32), 2 * act(2, 16));
  const out = formatMemoryPlan(input, LAVAPIPE, FLAGS);
  assert.equal(out.refusal, null);
  assert.match(
    out.lines[0],
    /^memory plan: 18.1K parameters, adamw, f32, micro-batch 2 × 16 tokens/,
  );
});

Deno.test("too large a micro-batch is refused, naming the micro-batch that fits", () => {
  const input = {
    config: TINY,
    microBatch: 64,
    seqLen: 64,
    slots: 1,
    optimizer: "adamw",
    precision: "f32",
  } as const;
  // [N, F] = 64·64·48·4 bytes = 768 KiB; a 200 KiB binding holds N ≤ 1066, so B ≤ 16.
  const limits = { ...LAVAPIPE, maxStorageBufferBindingSize: 200 * 1024 };
  const v = checkMemoryPlan(input, limits);
  assert.equal(v.fits, false);
  assert.deepEqual(v.problems.map((p) => p.fix), [{ kind: "microBatch", value: 16 }]);
  const out = formatMemoryPlan(input, limits, FLAGS);
  assert.equal(
    out.refusal,
    "the model does not fit: the [N, F] activation (N = 4096) takes 768 KiB, over the " +
      "adapter's maxStorageBufferBindingSize of 200 KiB; --micro-batch 16 would fit",
  );
  // At micro-batch 1 only a shorter sequence helps.
  const long = { ...input, microBatch: 1, seqLen: 4096 };
  assert.deepEqual(checkMemoryPlan(long, limits).problems.map((p) => p.fix), [
    { kind: "seqLen", value: 1024 },
  ]);
});

Deno.test("a peak over the machine's memory is refused; over what is available, a warning", () => {
  const input = {
    config: TINY,
    microBatch: 8,
    seqLen: 64,
    slots: 1,
    optimizer: "distro",
    precision: "f32",
  } as const;
  const peak = checkMemoryPlan(input, LAVAPIPE).peakBytes;
  const small = { ...LAVAPIPE, systemTotal: peak - 1, systemAvailable: peak - 1 };
  const v = checkMemoryPlan(input, small);
  assert.equal(v.fits, false);
  assert.match(v.problems[0].message, /the peak of .* is over this machine's .* of memory/);
  // Recomputation keeps the batch shape, so it is named first; once on, a smaller micro-batch.
  assert.deepEqual(v.problems[0].fix, { kind: "recompute" });
  assert.match(
    formatMemoryPlan(input, small, FLAGS).refusal!,
    /of memory; --recompute would fit \(the same training, about a third more compute/,
  );
  const recomputing = checkMemoryPlan({ ...input, recompute: true }, {
    ...small,
    systemTotal: checkMemoryPlan({ ...input, recompute: true }, LAVAPIPE).peakBytes - 1,
  });
  assert.equal(recomputing.problems[0].fix?.kind, "microBatch");
  const tight = checkMemoryPlan(input, { ...LAVAPIPE, systemAvailable: peak - 1 });
  assert.ok(tight.fits);
  assert.match(tight.warnings[0], /available now/);
  // Discrete GPUs: device buffers are not host memory.
  const discrete = { ...small, unified: false };
  assert.ok(checkMemoryPlan(input, discrete).fits);
});

Deno.test("Llama-3.2-1B's parameters split into three 2 GiB buffers on lavapipe", () => {
  const input = {
    config: LLAMA_1B,
    microBatch: 1,
    seqLen: 128,
    slots: 1,
    optimizer: "distro",
    precision: "f32",
  } as const;
  const plan = planMemory(input);
  assert.equal(plan.parameters, 1_235_814_400);
  // Tied: one [V, C] matrix; padded to 64 floats per tensor.
  assert.ok(plan.parameterBuffer.bytes >= 4 * 1_235_814_400);
  assert.ok(plan.parameterBuffer.bytes < 4 * 1_235_814_400 + 4 * 64 * 200);
  // The embedding is the largest buffer that cannot be split.
  assert.deepEqual(plan.largestBuffer, {
    label: "tensor model.embed_tokens.weight",
    bytes: 4 * 128256 * 2048,
  });
  // 4.60 GiB over 2 GiB buffers: three segments; the machine's memory is what refuses it here.
  const out = formatMemoryPlan(input, LAVAPIPE, FLAGS);
  assert.equal(out.verdict.parameterSegments, 3);
  assert.equal(out.verdict.fits, false);
  assert.doesNotMatch(out.refusal!, /maxBufferSize/);
  assert.match(out.refusal!, /the peak of 2\d\.\d GiB is over this machine's 24\.0 GiB of memory/);
  const text = out.lines.join("\n");
  assert.match(text, /parameter buffers \(so gradients, each state\)\s+3 of at most 2\.00 GiB/);
  assert.match(text, /DisTrO momentum \+ error feedback \(δ\)\s+4\.60 GiB/);
  // 4 × 4.60 GiB of parameters, gradients, δ and saved weights; DCT scratch of one 128 MiB binding.
  assert.match(text, /device total\s+19\.0 GiB/);
  assert.equal(formatBytes(1536 * MiB), "1.50 GiB");
  assert.equal(formatBytes(1002 * MiB), "1002 MiB");
  assert.match(
    text,
    /largest buffer: tensor model\.embed_tokens\.weight\s+1002 MiB of maxBufferSize/,
  );
  // With the memory (a 64 GiB machine) the plan is accepted.
  const roomy = { ...LAVAPIPE, systemTotal: 64 * GiB, systemAvailable: 60 * GiB };
  const fits = formatMemoryPlan(input, roomy, FLAGS);
  assert.equal(fits.refusal, null);
  assert.equal(fits.verdict.parameterSegments, 3);
  assert.equal(fits.verdict.halfCopySegments, null, "f32 precision has no 16-bit copies");
  // The 16-bit weight copies (2.30 GiB) are split like the parameters: two 2 GiB buffers.
  for (const precision of ["f16", "bf16"] as const) {
    const half = formatMemoryPlan({ ...input, precision }, roomy, FLAGS);
    assert.equal(half.refusal, null, precision);
    assert.equal(half.verdict.halfCopySegments, 2, precision);
    const lines = half.lines.join("\n");
    assert.match(lines, new RegExp(`${precision} copies of the matmul weights\\s+2\\.30 GiB`));
    assert.match(lines, new RegExp(`${precision} weight copy buffers\\s+2 of at most 2\\.00 GiB`));
  }
});

Deno.test("a streamed seeded start holds one chunk on the host: the 1B with AdamW fits lavapipe", () => {
  const input = {
    config: LLAMA_1B,
    microBatch: 1,
    seqLen: 128,
    slots: 1,
    optimizer: "adamw",
    precision: "f32",
  } as const;
  const machine = { ...LAVAPIPE, systemTotal: 23.5 * GiB, systemAvailable: 22.5 * GiB };
  // Built whole on the host (the client's seeded init) or loaded: the model twice more.
  const whole = planMemory(input);
  assert.deepEqual(whole.host.map((i) => [i.label, i.bytes]), [
    ["f32 weights in host memory", whole.parameterBuffer.bytes],
    ["upload staging (one parameter copy)", whole.parameterBuffer.bytes],
  ]);
  // Loaded: read and converted a tensor at a time, so the largest tensor (the embedding's
  // 1002 MiB), not the 2.5 GiB file, is held besides the weights.
  const loaded = planMemory({ ...input, loadFileBytes: 2.5 * GiB });
  assert.equal(loaded.host[1].label, "largest tensor while converting");
  const embedding = 4 * LLAMA_1B.vocabSize * LLAMA_1B.hiddenSize;
  assert.equal(loaded.hostBytes, 2 * whole.parameterBuffer.bytes + embedding);
  assert.match(
    formatMemoryPlan(input, machine, FLAGS).refusal!,
    /the peak of 2\d\.\d GiB is over this machine's 23\.5 GiB of memory/,
  );
  // Streamed: one 16 MiB chunk and its staging copy, whatever the model's size.
  const streamed = planMemory({ ...input, seededStream: true });
  assert.deepEqual(streamed.host.map((i) => [i.label, i.bytes]), [
    ["seeded init, one chunk at a time", 16 * MiB],
    ["upload staging (one chunk)", 16 * MiB],
  ]);
  assert.deepEqual(streamed.device, whole.device);
  const out = formatMemoryPlan({ ...input, seededStream: true }, machine, FLAGS);
  assert.equal(out.refusal, null);
  assert.ok(out.verdict.peakBytes < 19 * GiB, formatBytes(out.verdict.peakBytes));
  assert.match(out.lines.join("\n"), /host: seeded init, one chunk at a time\s+16\.0 MiB/);
  // Made on 7 workers: a chunk each.
  const parallel = planMemory({ ...input, seededStream: true, seededWorkers: 7 });
  assert.deepEqual(parallel.host[0], {
    label: "seeded init, 7 chunks at a time (one per worker)",
    bytes: 7 * 16 * MiB,
  });
  // A model smaller than a chunk holds its largest tensor, not a whole chunk.
  const tiny = planMemory({ ...input, config: TINY, seededStream: true });
  assert.equal(tiny.host[0].bytes, 4 * 48 * 32);
  // Saves stream the state off the device: one more chunk and its readback, not 3·4·P.
  const saving = planMemory({ ...input, seededStream: true, saves: true });
  assert.deepEqual(saving.host.slice(2).map((i) => [i.label, i.bytes]), [
    ["checkpoint save, one chunk at a time", 16 * MiB],
    ["save readback staging (one chunk)", 16 * MiB],
  ]);
  assert.equal(saving.hostBytes, streamed.hostBytes + 32 * MiB);
  assert.equal(planMemory({ ...input, config: TINY, saves: true }).host.at(-1)!.bytes, 4 * 48 * 32);
  // A resume from F32 weights streams them and the optimizer state in: one chunk, not 4·P + 4·P.
  const resumed = planMemory({ ...input, streamedResume: true, saves: true });
  assert.deepEqual(resumed.host.slice(0, 2).map((i) => [i.label, i.bytes]), [
    ["resume: weights and optimizer state, one chunk at a time", 16 * MiB],
    ["upload staging (one chunk)", 16 * MiB],
  ]);
  assert.equal(resumed.hostBytes, saving.hostBytes);
});

Deno.test("a tensor over maxBufferSize is refused by name; a model that fits is one segment", () => {
  const input = {
    config: TINY,
    microBatch: 1,
    seqLen: 16,
    slots: 1,
    optimizer: "adamw",
    precision: "f32",
  } as const;
  const ok = checkMemoryPlan(input, LAVAPIPE);
  assert.equal(ok.parameterSegments, 1);
  // TINY's largest tensor: gate/up/down [48, 32] = 1536 floats.
  const small = { ...LAVAPIPE, maxBufferSize: 1536 * 4 * 2 };
  const split = checkMemoryPlan(input, small);
  assert.ok(split.fits, split.problems.map((p) => p.message).join("; "));
  assert.ok(split.parameterSegments! > 2);
  const tooSmall = { ...LAVAPIPE, maxBufferSize: 1536 * 4 - 4 };
  const v = checkMemoryPlan(input, tooSmall);
  assert.equal(v.fits, false);
  assert.equal(v.parameterSegments, null);
  assert.match(
    v.problems[0].message,
    /the tensor model\.layers\.0\.mlp\.gate_proj\.weight takes 6\.00 KiB, over the adapter's maxBufferSize of 6\.00 KiB \(parameters are split into buffers between tensors, never inside one\)/,
  );
});

Deno.test("logits chunks hold as many 64-row blocks as the profile's bytes allow, up to B·T", () => {
  // 32 MiB of a 32000-wide vocabulary: 262 rows, so 256.
  assert.equal(logitsChunkRows(16384, 32000, 32 * 2 ** 20), 256);
  // 512 MiB (the GPU profile): 4194 rows, so 4160.
  assert.equal(logitsChunkRows(16384, 32000, 512 * 2 ** 20), 4160);
  // Never fewer than 64 rows, never more than the batch.
  assert.equal(logitsChunkRows(16384, 128256, 1), 64);
  assert.equal(logitsChunkRows(100, 32000, 512 * 2 ** 20), 100);
});

Deno.test("a run that fits only with recomputation and a smaller micro-batch names both", () => {
  // Deep and narrow: activations dominate, so recomputation saves most of the peak.
  const input = {
    config: { ...TINY, numLayers: 16 },
    microBatch: 8,
    seqLen: 64,
    slots: 1,
    optimizer: "adamw",
    precision: "f32",
  } as const;
  const at = (microBatch: number, recompute: boolean) =>
    checkMemoryPlan({ ...input, microBatch, recompute }, LAVAPIPE).peakBytes;
  // A machine just large enough for micro-batch 4 with recomputation; without it, not even 1.
  const total = at(4, true);
  assert.ok(at(1, false) > total && at(5, true) > total, `${at(1, false)} vs ${total}`);
  const limits = { ...LAVAPIPE, systemTotal: total, systemAvailable: total };
  assert.deepEqual(checkMemoryPlan(input, limits).problems[0].fix, {
    kind: "microBatch",
    value: 4,
    recompute: true,
  });
  assert.match(
    formatMemoryPlan(input, limits, FLAGS).refusal!,
    /; --recompute and --micro-batch 4 would fit$/,
  );
});

Deno.test("the CPU profile's matmul transpose scratch is reserved whole, as the plan counts it", async () => {
  // A head over one binding (cut into vocabulary blocks) and a whole one; f32 and bf16 copies.
  // After a training step the model holds exactly the two reserved buffers: none outgrown.
  const config = parseLlamaConfig({
    hidden_size: 32,
    intermediate_size: 48,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    vocab_size: 600,
    max_position_embeddings: 64,
  });
  const layout = llamaParamLayout(config);
  for (const maxBindingBytes of [undefined, 16384]) {
    for (const precision of ["f32", "bf16"] as const) {
      using rt = await GpuRuntime.create({ profile: CPU_PROFILE, maxBindingBytes });
      using model = new LlamaModel(rt, {
        config,
        layout,
        weights: initParams(layout, config, 1),
        microBatch: 2,
        seqLen: 8,
        slots: 1,
        precision,
      });
      model.writeTokens(0, Uint32Array.from({ length: 16 }, (_, i) => (i * 37) % 600));
      const step = rt.beginStep("transpose scratch");
      model.encodeZeroGrads(step);
      model.encodeForwardBackward(step, { slot: 0, lossScale: 1 });
      await step.submit();
      const scratch = rt.liveBuffers().filter((b) => b.label.startsWith("matmul transpose"));
      const what = `${precision}, binding ${maxBindingBytes ?? "whole"}`;
      assert.equal(scratch.length, 2, `${what}: ${JSON.stringify(scratch)}`);
      const plan = planMemory({
        config,
        microBatch: 2,
        seqLen: 8,
        slots: 1,
        optimizer: "adamw",
        precision,
        transposeScratch: true,
        maxBindingBytes: rt.limits.maxStorageBufferBindingSize,
      });
      const planned = plan.device.find((i) => i.label === "matmul transpose scratch");
      assert.equal(planned?.bytes, scratch.reduce((s, b) => s + b.size, 0), what);
    }
  }
});
