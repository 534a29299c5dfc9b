/**
 * Matmul throughput at the training shapes of a ~20M-parameter Llama (N = B·T = 1024 tokens,
 * C = 256, F = 1024, V = 32000), GPU kernels against the best plain-TypeScript matmul
 * (`matmulNtF32`: transposed B, four accumulators) in the same run. GFLOP/s = 2·m·n·k / time.
 *
 * Run: `deno bench -A shaders/matmul_bench.ts` (prints the adapter first).
 *
 * @module
 */

import { GpuRuntime } from "./gpu.ts";
import { Matmul, type MatmulLayout } from "./matmul.ts";
import { matmulNtF32 } from "./reference/matmul.ts";
import { randomF32 } from "./testing/kernels.ts";

const rt = await GpuRuntime.create();
const mm = new Matmul(rt);
console.log(`adapter: ${rt.adapterName}; matmul tiling ${JSON.stringify(mm.tiling)}`);

/** [name, m, n, k]: C[m, n] = A[m, k]·B[k, n]. */
const SHAPES: [string, number, number, number][] = [
  ["qkv/mlp-up  [1024,256]x[256,1024]", 1024, 1024, 256],
  ["mlp-down    [1024,1024]x[1024,256]", 1024, 256, 1024],
  ["lm-head     [1024,256]x[256,32000]", 1024, 32000, 256],
];

for (const [name, m, n, k] of SHAPES) {
  const big = m * n * k > 1e9;
  const a = rt.buffer("a", randomF32(1, m * k));
  const b = rt.buffer("b", randomF32(2, n * k));
  const c = rt.buffer("c", m * n * 4);
  const gflop = (2 * m * n * k) / 1e9;
  for (const layout of ["nt", "nn", "tn"] as MatmulLayout[]) {
    Deno.bench({
      name: `gpu ${layout} ${name} (${gflop.toFixed(2)} GFLOP)`,
      group: name,
      n: big ? 3 : 10,
      warmup: 1,
      async fn() {
        const step = rt.beginStep("bench");
        mm.encode(step.pass, { a, b, c, m, n, k, layout });
        await step.submit();
      },
    });
  }
  const ha = randomF32(1, m * k), hb = randomF32(2, n * k), hc = new Float32Array(m * n);
  Deno.bench({
    name: `js nt ${name}`,
    group: name,
    baseline: true,
    n: big ? 1 : 3,
    warmup: 0,
    fn() {
      matmulNtF32(ha, hb, hc, m, n, k);
    },
  });
}
