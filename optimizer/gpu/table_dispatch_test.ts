/**
 * Table dispatches (distro_wgsl.ts `tableSpecWgsl`) against one dispatch per parameter: the same
 * bytes out, for parameters laid out in one flat buffer and grouped by pipeline.
 *
 * @module
 */
import assert from "node:assert/strict";
import { randomF32 } from "../../shaders/testing/kernels.ts";
import { aggregateFixed } from "../exact.ts";
import { type ChunkLayout, chunkLayout } from "../layout.ts";
import { BasisTables, DistroKernels, type TableRow } from "./kernels.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import { rowMaxKeys } from "./testing/row_max.ts";

// Parameters that share pipelines (same chunk sizes) and ones that do not.
const SHAPES: [number[], number, number][] = [
  [[96, 80], 16, 5],
  [[32, 48], 16, 3],
  [[64, 64], 64, 8],
  [[128, 64], 64, 4],
  [[100], 26, 4],
  [[50], 26, 2],
  [[30, 35], 8, 3],
  [[6, 12], 4, 2],
];

/** The layouts placed at 64-float boundaries of one flat buffer, with their entries. */
function setup(rt: GpuRuntime) {
  const layouts = SHAPES.map(([shape, chunk, topk], n) =>
    chunkLayout(`p${n}`, shape, { chunk, topk })
  );
  const basis = new BasisTables(rt, layouts.flatMap((l) => [l.n1, l.n2]), "test");
  const kernels = new DistroKernels(rt, basis);
  let entry = 0, offset = 0;
  const params = layouts.map((layout, index) => {
    const p = { layout, entry, index, offset };
    entry += layout.chunks * layout.k;
    offset += Math.ceil(layout.size / 64) * 64;
    return p;
  });
  return { basis, kernels, params, entries: entry, size: offset };
}

/** `items` split by `key`, in order of first appearance. */
function byKey<T>(items: readonly T[], key: (item: T) => string): T[][] {
  const out = new Map<string, T[]>();
  for (const item of items) out.set(key(item), [...out.get(key(item)) ?? [], item]);
  return [...out.values()];
}

Deno.test("a top-k table dispatch over several parameters writes each one's bits", async () => {
  using rt = await GpuRuntime.create();
  const { basis, kernels, params, entries, size } = setup(rt);
  using _ = basis;
  const y = new Float32Array(size);
  for (const p of params) y.set(randomF32(40 + p.index, p.layout.size, -1, 1), p.offset);
  const yb = rt.buffer("y", y);
  for (const skip of [false, true]) {
    const chosen = params.filter((p) => !skip || kernels.hasRowMax(kernels.spec(p)));
    // Row maxima one parameter after another, as a wave lays them out.
    let words = 0;
    const rowAt = chosen.map((p) => {
      const at = words;
      words += p.layout.chunks * p.layout.n1;
      return at;
    });
    const maxima = new Uint32Array(Math.max(1, words));
    chosen.forEach((p, n) => {
      maxima.set(rowMaxKeys(p.layout, y.subarray(p.offset, p.offset + p.layout.size)), rowAt[n]);
    });
    const rowMax = skip ? rt.buffer("row max", maxima) : undefined;
    const out = () => ({ idx: rt.buffer("idx", entries * 4), val: rt.buffer("val", entries * 4) });
    const one = out(), table = out();
    const step = rt.beginStep("topk");
    for (const p of chosen) {
      const own = y.subarray(p.offset, p.offset + p.layout.size);
      kernels.encodeTopk(step.pass, kernels.spec(p), {
        y: { buffer: yb, offset: p.offset * 4, size: p.layout.size * 4 },
        ...one,
        rowMax: skip ? rt.buffer("own row max", rowMaxKeys(p.layout, own)) : undefined,
      });
    }
    const groups = byKey(chosen, (p) => kernels.topkPlan(kernels.spec(p), skip));
    assert.ok(groups.length < chosen.length, "some parameters share a dispatch");
    for (const group of groups) {
      const rows: TableRow[] = group.map((p) => ({
        spec: kernels.spec(p),
        offset: p.offset,
        rowMax: rowAt[chosen.indexOf(p)],
      }));
      kernels.encodeTopkTable(step.pass, rows, { y: yb, ...table, rowMax });
    }
    await step.submit();
    assert.deepEqual(await rt.readU32(table.idx), await rt.readU32(one.idx), `indices ${skip}`);
    assert.deepEqual(await rt.readBytes(table.val), await rt.readBytes(one.val), `values ${skip}`);
  }
});

/** An aggregate of `peers` random ±1 results of `layout` (fixed point, as peers send them). */
function randomAggregate(layout: ChunkLayout, seed: number, peers: number) {
  const results = Array.from({ length: peers }, (_, p) => {
    const r = randomF32(seed + p, 2 * layout.chunks * layout.k, 0, 1);
    const indices = new Uint32Array(layout.chunks * layout.k);
    const values = new Float32Array(layout.chunks * layout.k);
    for (let e = 0; e < indices.length; e++) {
      indices[e] = (e % layout.k) * Math.floor(layout.totalk / layout.k) +
        Math.floor(r[2 * e] * Math.floor(layout.totalk / layout.k));
      values[e] = r[2 * e + 1] < 0.5 ? -1 : 1;
    }
    return { indices, values };
  });
  return aggregateFixed(layout, results);
}

Deno.test("an apply table dispatch over several parameters gives each one's bits", async () => {
  using rt = await GpuRuntime.create();
  const { basis, kernels, params, size } = setup(rt);
  using _ = basis;
  const aggs = params.map((p) => randomAggregate(p.layout, 70 + 10 * p.index, 3));
  const theta0 = randomF32(9, size, -0.1, 0.1);
  const one = rt.buffer("theta one by one", theta0);
  const table = rt.buffer("theta by tables", theta0);
  const hyper = rt.buffer("hyper", new Float32Array([0.0123, 0, 0, 0]));
  // The tables' upload: every parameter's offsets and entries one after another; its metadata
  // says where they start (its offsets count from its entries' start).
  let offsetWords = 0, entryWords = 0;
  const meta = new Uint32Array(4 * params.length);
  for (const [n, a] of aggs.entries()) {
    meta.set([offsetWords, entryWords], 4 * n);
    offsetWords += a.offsets.length;
    entryWords += a.indices.length;
  }
  const cat = <T extends Uint32Array | Int32Array>(parts: T[], make: (n: number) => T) => {
    const out = make(parts.reduce((a, p) => a + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  };
  const step = rt.beginStep("apply");
  const zeroMeta = rt.buffer("zero meta", new Uint32Array(4 * params.length));
  for (const [n, p] of params.entries()) {
    kernels.encodeApply(step.pass, kernels.spec(p), {
      hyper,
      meta: zeroMeta,
      params: { buffer: one, offset: p.offset * 4, size: p.layout.size * 4 },
      idx: rt.buffer("idx", aggs[n].indices),
      q: rt.buffer("q", aggs[n].coeffs),
      offsets: rt.buffer("offsets", aggs[n].offsets),
    });
  }
  const views = {
    hyper,
    meta: rt.buffer("meta", meta),
    params: table,
    idx: rt.buffer("all idx", cat(aggs.map((a) => a.indices), (n) => new Uint32Array(n))),
    q: rt.buffer("all q", cat(aggs.map((a) => a.coeffs), (n) => new Int32Array(n))),
    offsets: rt.buffer("all offsets", cat(aggs.map((a) => a.offsets), (n) => new Uint32Array(n))),
  };
  const groups = byKey(params, (p) => kernels.applyPlan(kernels.spec(p)).key);
  assert.ok(groups.length < params.length, "some parameters share a dispatch");
  for (const group of groups) {
    const rows = group.map((p) => ({ spec: kernels.spec(p), offset: p.offset }));
    kernels.encodeApplyTable(step.pass, rows, views);
  }
  await step.submit();
  const want = await rt.readBytes(one);
  assert.notDeepEqual(want, new Uint8Array(theta0.buffer), "the apply moved θ");
  assert.deepEqual(await rt.readBytes(table), want);
});

Deno.test("a table dispatch refuses rows of different pipelines, or row maxima some lack", async () => {
  using rt = await GpuRuntime.create();
  const { basis, kernels, params, entries, size } = setup(rt);
  using _ = basis;
  const views = {
    y: rt.buffer("y", size * 4),
    idx: rt.buffer("idx", entries * 4),
    val: rt.buffer("val", entries * 4),
  };
  const row = (n: number) => ({ spec: kernels.spec(params[n]), offset: params[n].offset });
  const step = rt.beginStep("refused");
  // 64×64 chunks with row maxima and 1-D chunks (width 1) without.
  assert.ok(kernels.hasRowMax(row(2).spec) && !kernels.hasRowMax(row(4).spec));
  assert.throws(
    () => kernels.encodeTopkTable(step.pass, [row(2), row(4)], views),
    RangeError,
  );
  assert.throws(
    () => kernels.encodeTopkTable(step.pass, [row(4)], { ...views, rowMax: rt.buffer("max", 64) }),
    RangeError,
  );
  assert.throws(() => kernels.encodeTopkTable(step.pass, [], views), RangeError);
  await step.submit();
});
