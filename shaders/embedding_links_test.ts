import assert from "node:assert/strict";
import { Embedding } from "./embedding.ts";
import { embeddingLinks } from "./embedding_links.ts";
import { GpuRuntime } from "./gpu.ts";
import { randomF32, randomInts } from "./testing/kernels.ts";

Deno.test("host links: next position of the same token, and first-occurrence flags", () => {
  const links = embeddingLinks(Uint32Array.from([4, 0, 4, 2, 0, 4]), { vocab: 5 });
  assert.deepEqual([...links.subarray(0, 6)], [2, 4, 5, 6, 6, 6]);
  assert.deepEqual([...links.subarray(6)], [1, 1, 0, 1, 0, 0]);
  assert.deepEqual([...embeddingLinks(Uint32Array.of(3), { vocab: 4 })], [1, 1]);
  assert.deepEqual([...embeddingLinks(new Uint32Array(0), { vocab: 4 })], []);
  const same = embeddingLinks(new Uint32Array(4).fill(9), { vocab: 10 });
  assert.deepEqual([...same], [1, 2, 3, 4, 1, 0, 0, 0]);
});

Deno.test("host links refuse ids outside the vocabulary and a bad vocabulary", () => {
  assert.throws(
    () => embeddingLinks(Uint32Array.from([1, 5, 2]), { vocab: 5 }),
    /token 5 at position 1 is outside the vocabulary \(5\)/,
  );
  assert.throws(() => embeddingLinks(Uint32Array.of(0), { vocab: 0 }), /vocab must be a positive/);
});

/** Token arrays the two computations must agree on: repeats, extremes, one token. */
function cases(vocab: number): [string, Uint32Array][] {
  const distinct = Uint32Array.from({ length: 300 }, (_, i) => (i * 7919) % vocab);
  const clustered = randomInts(3, 513, 6);
  clustered[0] = vocab - 1;
  clustered[512] = vocab - 1;
  return [
    ["one token", Uint32Array.of(vocab - 1)],
    ["two equal", Uint32Array.of(0, 0)],
    ["random, many repeats", randomInts(1, 1000, 40)],
    ["random over the vocabulary", randomInts(2, 777, vocab)],
    ["all the same", new Uint32Array(257).fill(17)],
    ["all distinct", distinct],
    ["few ids and the last one", clustered],
  ];
}

Deno.test("host links equal the GPU links pass and give the gradient's bits", async () => {
  using rt = await GpuRuntime.create();
  const vocab = 1009, c = 5;
  const emb = new Embedding(rt, 64, 4);
  for (const [name, tokens] of cases(vocab)) {
    const n = tokens.length;
    const host = embeddingLinks(tokens, { vocab });
    const dOut = randomF32(n, n * c), init = randomF32(n + 1, vocab * c);
    const gTokens = rt.buffer("tokens", tokens), gdOut = rt.buffer("dOut", dOut);
    const gpuLinks = rt.buffer("gpu links", Embedding.linksLength(n) * 4);
    const hostLinks = rt.buffer("host links", host);
    const viaGpu = rt.buffer("dTable via gpu links", init);
    const viaHost = rt.buffer("dTable via host links", init);
    const step = rt.beginStep(name);
    const dims = { tokens: gTokens, dOut: gdOut, n, c, vocab };
    emb.backward(step.pass, { ...dims, dTable: viaGpu, links: gpuLinks });
    emb.backward(step.pass, { ...dims, dTable: viaHost, links: hostLinks, computeLinks: false });
    await step.submit();
    const bits = async (b: GPUBuffer) => new Uint32Array((await rt.read(b)).buffer);
    // Small buffers are padded to 16 bytes.
    assert.deepEqual((await bits(gpuLinks)).subarray(0, 2 * n), host, `${name}: links`);
    assert.deepEqual(await bits(viaHost), await bits(viaGpu), `${name}: gradient`);
    // Not vacuous: the gradient moved wherever a token is.
    assert.notDeepEqual(await bits(viaHost), new Uint32Array(init.buffer), `${name}: moved`);
    for (const b of [gTokens, gdOut, gpuLinks, hostLinks, viaGpu, viaHost]) b.destroy();
  }
});

Deno.test("row blocks reading the host links equal one call computing its own, bit for bit", async () => {
  using rt = await GpuRuntime.create();
  const n = 200, c = 12, vocab = 77;
  const emb = new Embedding(rt, 64, 4);
  const tokens = randomInts(21, n, 9).map((t, i) => i % 3 === 0 ? t * 8 : t); // repeats, all blocks
  const dOut = randomF32(22, n * c), init = randomF32(23, vocab * c);
  const gTokens = rt.buffer("tokens", tokens), gdOut = rt.buffer("dOut", dOut);
  const gpuLinks = rt.buffer("gpu links", Embedding.linksLength(n) * 4);
  const hostLinks = rt.buffer("host links", embeddingLinks(tokens, { vocab }));
  const whole = rt.buffer("dTable whole", init), split = rt.buffer("dTable split", init);
  const dims = { tokens: gTokens, dOut: gdOut, n, c, vocab };
  const step = rt.beginStep("blocks");
  emb.backward(step.pass, { ...dims, dTable: whole, links: gpuLinks });
  // Blocks of 16 rows (768 bytes, a multiple of the 256-byte alignment) and a ragged 13.
  for (const start of [0, 16, 32, 48, 64]) {
    const rows = Math.min(16, vocab - start);
    emb.backward(step.pass, {
      ...dims,
      dTable: { buffer: split, offset: start * c * 4, size: rows * c * 4 },
      tableStart: start,
      tableRows: rows,
      links: hostLinks,
      computeLinks: false,
    });
  }
  await step.submit();
  const bits = async (b: GPUBuffer) => new Uint32Array((await rt.read(b)).buffer);
  assert.deepEqual(await bits(split), await bits(whole));
  assert.notDeepEqual(await bits(whole), new Uint32Array(init.buffer));
});
