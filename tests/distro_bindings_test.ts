/**
 * The tiny model trained with storage bindings capped below its largest tensors (GpuRuntime's
 * `maxBindingBytes`: the embedding and LM head no longer fit one binding, as the Llama-1B
 * embedding does not on lavapipe) and with buffers capped too (`maxBufferBytes`: parameters,
 * gradients and optimizer state in segments), has the bits of the uncapped run: DisTrO steps
 * with weight decay, quantized and not, a networked DisTrO round through the aggregate apply,
 * and AdamW.
 */
import assert from "node:assert/strict";
import type { DistroConfig, SparseParam } from "../optimizer/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import {
  DISTRO,
  type Kind,
  networkedDistroRounds,
  SEGMENT_CAP,
  TINY_LAYOUT,
  type TinyParts,
  tinyParts,
  trainSteps,
} from "./support/tiny_training.ts";

/** The largest per-layer tensor: every binding the model makes still fits, the head does not. */
const BINDING_CAP = Math.max(
  ...TINY_LAYOUT.entries.filter((e) => e.name.startsWith("model.layers.")).map((e) => e.size * 4),
);

/** Capped runtimes: bindings and buffers both below the embedding. */
function cappedRuntime(): Promise<GpuRuntime> {
  return GpuRuntime.create({ maxBindingBytes: BINDING_CAP, maxBufferBytes: SEGMENT_CAP });
}

type Arrays = Map<string, Float32Array | Uint32Array>;

/** Every typed array inside `value`, named by its path. */
function collect(value: unknown, path: string, out: Arrays = new Map()): Arrays {
  if (value instanceof Float32Array || value instanceof Uint32Array) out.set(path, value);
  else if (Array.isArray(value)) value.forEach((v, i) => collect(v, `${path}[${i}]`, out));
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) collect(v, `${path}.${k}`, out);
  } else out.set(path, new Float32Array([Number(value)]));
  return out;
}

/** Throws naming the first array and element whose bits differ (deepEqual diffs are slow). */
function assertSameBits(got: Arrays, want: Arrays): void {
  assert.deepEqual([...got.keys()], [...want.keys()]);
  for (const [what, w] of want) {
    const g = got.get(what)!;
    assert.equal(g.length, w.length, `${what}: length`);
    const gb = new Uint32Array(g.buffer, g.byteOffset, g.length);
    const wb = new Uint32Array(w.buffer, w.byteOffset, w.length);
    const i = gb.findIndex((x, j) => x !== wb[j]);
    assert.ok(i < 0, `${what}: element ${i} is ${g[i]}, uncapped ${w[i]}`);
  }
}

/** Three steps of `kind`: statistics, parameters, gradients and optimizer state. */
async function run(rt: GpuRuntime, kind: Kind, distro: DistroConfig) {
  const parts = tinyParts(rt, kind, { distro });
  using _model = parts.model;
  using _optimizer = parts.optimizer;
  const stats = await trainSteps(parts, 1, 3);
  return {
    segments: parts.model.params.buffers.length,
    arrays: collect({
      stats,
      params: await parts.model.readParams(),
      grads: await parts.model.readGrads(),
      state: await parts.optimizer.readState(),
    }, "run"),
  };
}

Deno.test("the test caps split the embedding and LM head into blocks and segments", async () => {
  using rt = await cappedRuntime();
  const largest = Math.max(...TINY_LAYOUT.entries.map((e) => e.size * 4));
  assert.ok(largest > BINDING_CAP, `largest tensor ${largest} bytes, cap ${BINDING_CAP}`);
  assert.equal(rt.limits.maxStorageBufferBindingSize, BINDING_CAP);
  const parts: TinyParts = tinyParts(rt, "distro");
  using _model = parts.model;
  using _optimizer = parts.optimizer;
  assert.ok(parts.model.params.buffers.length >= 3, "segments");
});

const RUNS: [string, Kind, DistroConfig][] = [
  ["DisTrO", "distro", DISTRO],
  ["DisTrO, 1-bit", "distro", { ...DISTRO, quantize1bit: true }],
  ["AdamW", "adamw", DISTRO],
];
for (const [name, kind, distro] of RUNS) {
  Deno.test(`${name} steps with capped bindings and buffers have the uncapped bits`, async () => {
    using wholeRt = await GpuRuntime.create();
    using cappedRt = await cappedRuntime();
    const whole = await run(wholeRt, kind, distro);
    const capped = await run(cappedRt, kind, distro);
    assert.equal(whole.segments, 1);
    assert.ok(capped.segments >= 3, `${capped.segments} segments`);
    assertSameBits(capped.arrays, whole.arrays);
  });
}

Deno.test("a networked DisTrO round (lookahead apart, aggregate apply) with capped bindings has the uncapped bits", async () => {
  // This client's result and a peer's (its signs, every third flipped).
  const peers = (own: SparseParam[]) => [
    own.map((s) => ({
      ...s,
      values: s.values.map((v, i) => (v > 0 ? 1 : -1) * (i % 3 === 0 ? -1 : 1)),
    })),
  ];
  const round = async (rt: GpuRuntime) => collect(await networkedDistroRounds(rt, peers), "round");
  using wholeRt = await GpuRuntime.create();
  using cappedRt = await cappedRuntime();
  assertSameBits(await round(cappedRt), await round(wholeRt));
});
