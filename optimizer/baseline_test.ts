import assert from "node:assert/strict";
import { denseBf16Bytes, llamaShapes, psycheResultBytes } from "./baseline.ts";
import { chunkLayouts } from "./layout.ts";
import { payloadBytes } from "./wire.ts";

const within = (x: number, want: number, rel: number) =>
  assert.ok(Math.abs(x - want) <= want * rel, `${x} is not within ${rel * 100}% of ${want}`);

Deno.test("Psyche baseline: a 1.2B Llama sends 2.41 GB dense, 5.01 MB / 9.44 MB at k=8", () => {
  const shapes = llamaShapes({ hidden: 2048, intermediate: 8192, layers: 16, vocab: 32000 });
  const layouts = chunkLayouts(shapes, { chunk: 64, topk: 8 });
  within(denseBf16Bytes(layouts), 2.41e9, 0.01);
  within(psycheResultBytes(layouts, true), 5.01e6, 0.01);
  within(psycheResultBytes(layouts, false), 9.44e6, 0.01);
  within(psycheResultBytes(chunkLayouts(shapes, { chunk: 64, topk: 2 }), true), 1.25e6, 0.01);
});

Deno.test("our payload beats Psyche's at every topk, 1-bit and bf16, and is >= 250x at k=8", () => {
  for (const intermediate of [1024, 8192]) {
    const shapes = llamaShapes({ hidden: intermediate / 4, intermediate, layers: 4, vocab: 32000 });
    for (const topk of [2, 4, 8, 16]) {
      const layouts = chunkLayouts(shapes, { chunk: 64, topk });
      for (const oneBit of [true, false]) {
        assert.ok(payloadBytes(layouts, oneBit) < psycheResultBytes(layouts, oneBit));
      }
      if (topk === 8) assert.ok(denseBf16Bytes(layouts) / payloadBytes(layouts, true) >= 250);
    }
  }
});
