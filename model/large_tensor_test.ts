import assert from "node:assert/strict";
import { shaderKernels } from "./shader_kernels.ts";
import { GpuRuntime } from "../shaders/mod.ts";

// A 1B-shaped Llama's embedding, [32000, 2048] f32 = 262 MB: over lavapipe's 128 MiB storage
// binding, so the lookup and its gradient run one row block at a time. One pass, no training.
Deno.test("embedding lookup and gradient of a table over one storage binding", async () => {
  using rt = await GpuRuntime.create();
  const V = 32000, C = 2048, N = 32;
  const bytes = V * C * 4;
  const cap = rt.limits.maxStorageBufferBindingSize;
  if (bytes > rt.limits.maxBufferSize) {
    console.log(`skipped: ${bytes} bytes exceed maxBufferSize ${rt.limits.maxBufferSize}`);
    return;
  }
  // Row r of the table holds r + col/4096: every row is distinct and exact in f32.
  const table = new Float32Array(V * C);
  const row = Float32Array.from({ length: C }, (_, c) => c / 4096);
  for (let r = 0; r < V; r++) {
    const dst = table.subarray(r * C, (r + 1) * C);
    dst.set(row);
    for (let c = 0; c < C; c++) dst[c] += r;
  }
  const ids = Uint32Array.from({ length: N }, (_, i) => (i * 7919 + 13) % V);
  ids[0] = 0;
  ids[1] = V - 1;
  ids[2] = V - 1; // repeated: its gradient rows are summed
  const dOut = Float32Array.from({ length: N * C }, (_, i) => (i % 17) - 8);
  using k = shaderKernels(rt);
  const gTable = rt.buffer("big table", table);
  const dTable = rt.buffer("big table gradient", bytes);
  const out = rt.buffer("out", N * C * 4);
  const gIds = rt.buffer("ids", ids), gdOut = rt.buffer("dOut", dOut);
  const step = rt.beginStep("big embedding");
  k.embedding(step.pass, { ids: gIds, table: gTable, out, n: N, c: C, v: V });
  k.embeddingBackward(step.pass, { ids: gIds, dout: gdOut, dtable: dTable, n: N, c: C, v: V });
  await step.submit();
  const got = await rt.read(out);
  for (let i = 0; i < N; i++) {
    const want = table.subarray(ids[i] * C, (ids[i] + 1) * C);
    assert.deepEqual(got.subarray(i * C, (i + 1) * C), want, `row ${i} (token ${ids[i]})`);
  }
  for (const tok of [0, V - 1, ids[5]]) {
    const want = new Float32Array(C);
    for (let i = 0; i < N; i++) {
      if (ids[i] === tok) { for (let c = 0; c < C; c++) want[c] += dOut[i * C + c]; }
    }
    const grad = await rt.read({ buffer: dTable, offset: tok * C * 4, size: C * 4 });
    assert.deepEqual(grad, want, `gradient row ${tok}`);
  }
  console.log(`table ${bytes} bytes, storage binding cap ${cap} bytes`);
  if (bytes <= cap) console.log("(this adapter binds it whole: the split path was not needed)");
});
