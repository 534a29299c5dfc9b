/**
 * The attention's row kernels against its tiled kernels (shaders/attention_tiled.ts), for real
 * GPUs: `deno run -A bench/attention_gpu.ts [--shape 20m|1b|B,T,H,KVH,D]... [--reps 10]
 * [--tiles ROWSxSTAGED[xQUERIES][,ra] | tiled,ra] [--documents LEN]`.
 * Prints the adapter, then per shape and kernel family the time of one forward and of one backward
 * (GPU timestamps when the adapter has them, else wall-clock per submit; mean over `reps` calls
 * in one submit, after a warm-up), the ratio rows ÷ tiled, the tile each tiled pass ran with
 * (shrunk to the device's workgroup memory), and whether the two families gave the same bits for
 * every output (they do on lavapipe; on a GPU the driver compiles both, so this checks it there).
 * `20m`: config/models/llama-20m at 16 x 1024 (H = KVH = 8, D = 32); `1b`: llama-1b's heads
 * (H = 32, KVH = 8, D = 64) at 4 x 2048. `--documents LEN` packs each row into documents of LEN
 * tokens (the last one ragged); `QUERIES` sets the tiled forward and dQ's query rows per
 * invocation (default 1), and `,ra` stages each row in a workgroup array of its own (one bounds
 * clamp per row read, not per vec4). The tiled family runs at every head size, past the GPU profile's
 * `maxHeadDim`. Both families run the GPU profile's workgroup size and lockstep.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { randomF32 } from "../shaders/testing/kernels.ts";
import {
  Attention,
  type AttentionDims,
  attentionTiles,
  type AttentionTiling,
  GPU_PROFILE,
  GpuRuntime,
  parseAttentionTiling,
} from "../shaders/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    shape: { type: "string", multiple: true },
    reps: { type: "string", default: "10" },
    tiles: { type: "string" },
    documents: { type: "string" },
  },
});

const NAMED: Record<string, AttentionDims> = {
  "20m": { b: 16, t: 1024, h: 8, kvh: 8, d: 32 },
  "1b": { b: 4, t: 2048, h: 32, kvh: 8, d: 64 },
};

/** A named shape or `B,T,H,KVH,D`. */
function parseShape(text: string): AttentionDims {
  if (NAMED[text]) return NAMED[text];
  const n = text.split(",").map(Number);
  if (n.length !== 5 || n.some((x) => !Number.isInteger(x) || x < 1)) {
    throw new RangeError(`--shape must be 20m, 1b or B,T,H,KVH,D, got "${text}"`);
  }
  return { b: n[0], t: n[1], h: n[2], kvh: n[3], d: n[4] };
}

const reps = Number(values.reps);
if (!Number.isInteger(reps) || reps < 1) throw new RangeError(`--reps: got ${values.reps}`);
// The GPU profile's tiles at every head size (past its maxHeadDim): the comparison is the point.
const tiled: AttentionTiling = parseAttentionTiling(values.tiles ?? "tiled");
if (tiled.strategy !== "tiled") throw new RangeError(`--tiles: got ${values.tiles}, not tiles`);
const ROWS: AttentionTiling = { strategy: "rows", rows: 0, staged: 0 };
const docLength = values.documents === undefined ? 0 : Number(values.documents);

/** `[B, T, 2]` u32: documents of `len` tokens, the last of each row ragged. */
function documentSpans(b: number, t: number, len: number): Uint32Array {
  const out = new Uint32Array(b * t * 2);
  for (let bb = 0; bb < b; bb++) {
    for (let i = 0; i < t; i++) {
      const start = i - (i % len);
      out.set([start, Math.min(start + len, t)], (bb * t + i) * 2);
    }
  }
  return out;
}

using rt = await GpuRuntime.create({ profile: GPU_PROFILE });
console.log(
  `adapter: ${rt.adapterName}, timestamps: ${rt.hasTimestamps}, ` +
    `maxComputeWorkgroupStorageSize: ${rt.limits.maxComputeWorkgroupStorageSize}`,
);

for (const dims of (values.shape?.length ? values.shape : ["20m", "1b"]).map(parseShape)) {
  const { b, t, h, kvh, d } = dims;
  const nq = b * t * h * d, nk = b * t * kvh * d, rows = b * h * t;
  const q = rt.buffer("q", randomF32(1, nq, -2, 2)), k = rt.buffer("k", randomF32(2, nk, -2, 2));
  const v = rt.buffer("v", randomF32(3, nk)), dOut = rt.buffer("dOut", randomF32(4, nq));
  const docs = docLength > 0
    ? { documents: rt.buffer("documents", documentSpans(b, t, docLength)) }
    : {};
  const packed = docLength > 0;
  console.log(
    `shape B ${b}, T ${t}, H ${h}, KVH ${kvh}, D ${d}` +
      (packed ? `, documents of ${docLength}` : "") + `:`,
  );
  const results = new Map<string, Record<string, Uint32Array>>();
  const times = new Map<string, { forward: number; backward: number }>();
  for (const [name, tiling] of [["rows", ROWS], ["tiled", tiled]] as const) {
    const attn = new Attention(rt, { tiling });
    const out = rt.buffer("out", nq * 4), lse = rt.buffer("lse", rows * 4);
    const delta = rt.buffer("delta", rows * 4);
    const dq = rt.buffer("dq", nq * 4), dk = rt.buffer("dk", nk * 4), dv = rt.buffer("dv", nk * 4);
    const fwd = { ...dims, q, k, v, out, lse, ...docs };
    const bwd = { ...fwd, dOut, dq, dk, dv, delta };
    /** Mean ms per call of `reps` forwards and of `reps` backwards, one submit each. */
    const measure = async () => {
      const ms: Record<string, number> = {};
      for (
        const [section, encode] of [
          ["forward", (p: GPUComputePassEncoder) => attn.forward(p, fwd)],
          ["backward", (p: GPUComputePassEncoder) => attn.backward(p, bwd)],
        ] as const
      ) {
        const step = rt.beginStep(`attention ${name} ${section}`);
        const pass = step.timed(section);
        for (let i = 0; i < reps; i++) encode(pass);
        const start = performance.now();
        await step.submit();
        const wall = performance.now() - start;
        ms[section] = (step.timings[0]?.ms ?? wall) / reps;
      }
      return ms as { forward: number; backward: number };
    };
    await measure(); // warm-up: pipelines compiled, buffers resident
    const ms = await measure();
    times.set(name, ms);
    const tileNote = tiling.strategy === "tiled"
      ? " (" + (["forward", "dq", "dkv"] as const).map((pass) => {
        const tile = attentionTiles(tiling, pass, d, packed, rt.limits);
        return `${pass} ${tile.rows}x${tile.staged}` +
          (tile.queries > 1 ? `x${tile.queries}` : "") + (tile.rowArrays ? ",ra" : "");
      }).join(", ") + ")"
      : "";
    console.log(
      `  ${name}${tileNote}: forward ${ms.forward.toFixed(3)} ms, ` +
        `backward ${ms.backward.toFixed(3)} ms`,
    );
    const bits = async (x: GPUBuffer) => new Uint32Array((await rt.read(x)).buffer);
    results.set(name, {
      out: await bits(out),
      lse: await bits(lse),
      dq: await bits(dq),
      dk: await bits(dk),
      dv: await bits(dv),
    });
    for (const x of [out, lse, delta, dq, dk, dv]) x.destroy();
  }
  const r = times.get("rows")!, tt = times.get("tiled")!;
  console.log(
    `  rows / tiled: forward ${(r.forward / tt.forward).toFixed(2)}x, ` +
      `backward ${(r.backward / tt.backward).toFixed(2)}x`,
  );
  const a = results.get("rows")!, c = results.get("tiled")!;
  const differ = Object.keys(a).map((key) => {
    const n = a[key].reduce((s, x, i) => s + (x === c[key][i] ? 0 : 1), 0);
    return n === 0 ? "" : `${key}: ${n} of ${a[key].length} differ`;
  }).filter((s) => s !== "");
  console.log(`  bits: ${differ.length === 0 ? "identical" : differ.join(", ")}`);
  for (const x of [q, k, v, dOut]) x.destroy();
}
