import assert from "node:assert/strict";
import { Embedding } from "./embedding.ts";
import { GpuRuntime } from "./gpu.ts";
import { embeddingBackwardRef, embeddingForwardRef } from "./reference/embedding.ts";
import { assertClose, F32_EPS, randomF32, randomInts } from "./testing/kernels.ts";

Deno.test("embedding forward and deterministic backward match the reference", async () => {
  using rt = await GpuRuntime.create();
  const cases = [[1, 1, 1, 1], [37, 5, 11, 16], [130, 24, 7, 7], [64, 3, 1000, 1]];
  for (const [n, c, vocab, items] of cases) {
    const emb = new Embedding(rt, 64, items);
    const tokens = randomInts(n, n, vocab);
    if (n > 1) tokens[n - 1] = vocab + 3; // out of range: NaN row forward, skipped backward
    const table = randomF32(n + 1, vocab * c);
    const dOut = randomF32(n + 2, n * c);
    const init = randomF32(n + 3, vocab * c);
    const gTokens = rt.buffer("tokens", tokens), gTable = rt.buffer("table", table);
    const out = rt.buffer("out", n * c * 4), gdOut = rt.buffer("dOut", dOut);
    const dTable = rt.buffer("dTable", init);
    const links = rt.buffer("links", Embedding.linksLength(n) * 4);
    const step = rt.beginStep("embedding");
    emb.forward(step.pass, { tokens: gTokens, table: gTable, out, n, c, vocab });
    emb.backward(step.pass, { tokens: gTokens, dTable, dOut: gdOut, links, n, c, vocab });
    await step.submit();
    const want = embeddingForwardRef(tokens, table, c, vocab);
    const got = await rt.read(out);
    for (let i = 0; i < n * c; i++) {
      assert.ok(Object.is(got[i], want[i]) || got[i] === want[i], `forward element ${i}`);
    }
    // Backward: each row sums k ≤ n terms onto init in f32: error ≤ (n + 1)·u·Σ|terms|.
    const wantGrad = embeddingBackwardRef(tokens, dOut, init, c, vocab);
    const mag = embeddingBackwardRef(tokens, dOut.map(Math.abs), init.map(Math.abs), c, vocab);
    const gotGrad = await rt.read(dTable);
    assertClose(gotGrad, wantGrad, (i) => (n + 1) * F32_EPS * mag[i], `backward n=${n}`);
    // Determinism: a second backward onto the same init gives the same bits.
    rt.write(dTable, init);
    const again = rt.beginStep("again");
    emb.backward(again.pass, { tokens: gTokens, dTable, dOut: gdOut, links, n, c, vocab });
    await again.submit();
    assert.deepEqual(await rt.read(dTable), gotGrad);
  }
});

Deno.test("embedding rejects a short table", async () => {
  using rt = await GpuRuntime.create();
  const emb = new Embedding(rt);
  const step = rt.beginStep("bad");
  const tokens = rt.buffer("t", 16), small = rt.buffer("small", 16), out = rt.buffer("o", 64);
  assert.throws(
    () => emb.forward(step.pass, { tokens, table: small, out, n: 4, c: 4, vocab: 10 }),
    /binding "table" holds 4 elements, needs \[V, C\] = 40/,
  );
  await step.submit();
});

Deno.test("embedding over row blocks of the table equals one call, bit for bit", async () => {
  using rt = await GpuRuntime.create();
  const n = 50, c = 12, vocab = 77;
  const emb = new Embedding(rt, 64, 4);
  const tokens = randomInts(9, n, vocab);
  tokens[3] = vocab + 1; // out of range: NaN row written once (by the last block)
  const table = randomF32(10, vocab * c), dOut = randomF32(11, n * c);
  const init = randomF32(12, vocab * c);
  const gTokens = rt.buffer("tokens", tokens), gdOut = rt.buffer("dOut", dOut);
  const links = rt.buffer("links", Embedding.linksLength(n) * 4);
  const whole = { out: rt.buffer("out", n * c * 4), dTable: rt.buffer("dTable", init) };
  const split = { out: rt.buffer("out split", n * c * 4), dTable: rt.buffer("dTable split", init) };
  const gTable = rt.buffer("table", table);
  // Blocks of 16 rows (768 bytes, a multiple of the 256-byte alignment) and a ragged 13.
  const blocks = [[0, 16], [16, 16], [32, 16], [48, 16], [64, 13]];
  const step = rt.beginStep("blocks");
  const dims = { tokens: gTokens, n, c, vocab };
  emb.forward(step.pass, { ...dims, table: gTable, out: whole.out });
  emb.backward(step.pass, { ...dims, dTable: whole.dTable, dOut: gdOut, links });
  for (const [i, [start, rows]] of blocks.entries()) {
    const view = (buffer: GPUBuffer) => ({ buffer, offset: start * c * 4, size: rows * c * 4 });
    const block = { ...dims, tableStart: start, tableRows: rows };
    emb.forward(step.pass, { ...block, table: view(gTable), out: split.out });
    emb.backward(step.pass, {
      ...block,
      dTable: view(split.dTable),
      dOut: gdOut,
      links,
      computeLinks: i === 0,
    });
  }
  await step.submit();
  const bits = async (b: GPUBuffer) => new Uint32Array((await rt.read(b)).buffer);
  assert.deepEqual(await bits(split.out), await bits(whole.out));
  assert.deepEqual(await bits(split.dTable), await bits(whole.dTable));
  assert.ok(Number.isNaN((await rt.read(split.out))[3 * c]), "out-of-range token gives NaN");
});

Deno.test("embedding refuses a row block past the vocabulary", async () => {
  using rt = await GpuRuntime.create();
  const emb = new Embedding(rt);
  using step = rt.beginStep("bad block");
  const tokens = rt.buffer("t", 16), table = rt.buffer("table", 400), out = rt.buffer("o", 64);
  assert.throws(
    () =>
      emb.forward(step.pass, {
        tokens,
        table,
        out,
        n: 4,
        c: 4,
        vocab: 10,
        tableStart: 8,
        tableRows: 4,
      }),
    /embedding forward: table rows \[8, 12\) go past the vocabulary \(10\)/,
  );
});
