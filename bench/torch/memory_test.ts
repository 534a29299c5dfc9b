import assert from "node:assert/strict";
import {
  ENGINE_PROCESS_BYTES,
  enginePlan,
  formatSidePlan,
  memoryRefusal,
  TORCH_PROCESS_BYTES,
  torchPlan,
} from "./memory.ts";
import { countParameters, readLlamaConfig } from "../../model/mod.ts";

const GiB = 2 ** 30;
const LLAMA_1B = await readLlamaConfig(
  new URL("../../config/models/llama-1b/config.json", import.meta.url).pathname,
);
const SHAPE = { batch: 1, seqLen: 128 };

Deno.test("enginePlan: a 1B step on a CPU adapter peaks near deno task train's measured 19.2 GiB", () => {
  const plan = enginePlan(LLAMA_1B, SHAPE, true);
  // Four parameter-sized arrays (4.6 GiB each) and little else at 1 x 128.
  assert.ok(plan.items[0].bytes >= 16 * countParameters(LLAMA_1B));
  assert.ok(plan.peakBytes > 18.5 * GiB && plan.peakBytes < 20 * GiB, `${plan.peakBytes / GiB}`);
  // On a discrete GPU only the host's chunks and the process count.
  const discrete = enginePlan(LLAMA_1B, SHAPE, false);
  assert.ok(discrete.peakBytes < ENGINE_PROCESS_BYTES + 64 * 2 ** 20);
  assert.ok(!discrete.items.some((i) => i.label.startsWith("parameters")));
});

Deno.test("torchPlan: PyTorch's four arrays, AdamW's two temporaries of the largest tensor", () => {
  const P = countParameters(LLAMA_1B);
  const embedding = LLAMA_1B.vocabSize * LLAMA_1B.hiddenSize;
  const plan = torchPlan(LLAMA_1B, SHAPE, "cpu");
  assert.equal(plan.items[0].bytes, 16 * P);
  assert.equal(plan.items[1].bytes, 8 * embedding);
  assert.ok(plan.peakBytes > 16 * P + 8 * embedding + TORCH_PROCESS_BYTES);
  assert.ok(plan.peakBytes < 16 * P + 8 * embedding + TORCH_PROCESS_BYTES + GiB);
  // Longer sequences keep more activations.
  assert.ok(torchPlan(LLAMA_1B, { batch: 1, seqLen: 1024 }, "cpu").peakBytes > plan.peakBytes);
  // On CUDA the arrays are device memory.
  assert.ok(torchPlan(LLAMA_1B, SHAPE, "cuda").peakBytes < TORCH_PROCESS_BYTES + 64 * 2 ** 20);
});

Deno.test("memoryRefusal names the peak and MemAvailable; formatSidePlan lists the parts", () => {
  const plan = { side: "PyTorch", items: [{ label: "a", bytes: 3 * GiB }], peakBytes: 3 * GiB };
  assert.equal(memoryRefusal(plan, 3 * GiB), null);
  assert.equal(memoryRefusal(plan, null), null);
  assert.match(
    memoryRefusal(plan, 2 * GiB)!,
    /^PyTorch would need about 3\.00 GiB at its peak, but MemAvailable is 2\.00 GiB: /,
  );
  assert.equal(
    formatSidePlan(plan, 5 * GiB),
    "memory, PyTorch: expected peak 3.00 GiB (a 3.00 GiB); MemAvailable 5.00 GiB",
  );
  assert.match(formatSidePlan(plan, null), /MemAvailable unknown$/);
});
