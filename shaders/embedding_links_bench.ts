/**
 * The host's embedding links (embedding_links.ts) at a training step's sizes: they sit on the
 * step's critical path, before it is encoded. N = 16384 is the H200's 16 × 1024 step (V = 32000,
 * the 20M model's vocabulary), N = 65536 with V = 128256 the 1B's at longer batches.
 * Run: `deno bench shaders/embedding_links_bench.ts`.
 *
 * @module
 */

import { embeddingLinks } from "./embedding_links.ts";
import { randomInts } from "./testing/kernels.ts";

for (const [n, vocab] of [[16384, 32000], [65536, 128256]]) {
  const tokens = randomInts(1, n, vocab);
  Deno.bench(`embedding links on the host, N = ${n}, V = ${vocab}`, () => {
    embeddingLinks(tokens, { vocab });
  });
}
