import assert from "node:assert/strict";
import { GpuRuntime } from "./gpu.ts";
import { ropeInvFreqRef, ropeRef } from "./reference/rope.ts";
import {
  type Llama3RopeScaling,
  Rope,
  type RopeFrequencies,
  ropeInvFreq,
  ropeTable,
} from "./rope.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

/** Llama 3.2's scaling (config.json of Llama-3.2-1B). */
const LLAMA_3_2: Llama3RopeScaling = {
  ropeType: "llama3",
  factor: 32,
  lowFreqFactor: 1,
  highFreqFactor: 4,
  originalMaxPositionEmbeddings: 8192,
};

/**
 * The bound on |f32 inverse frequency − f64| in units of `u · f` (f the unscaled frequency):
 * 1 for plain RoPE; with llama3 the blend's `s` carries the rounding of `L/λ` (about 5 u
 * relative, λ ≤ L/high in the band) amplified by high/(high − low). 12·(1 + high/(high − low))
 * holds with margin: 8.8 is the worst of 20000 random scalings, 4 the worst for Llama 3.2's.
 */
function invFreqUlps(scaling: Llama3RopeScaling | null): number {
  if (scaling === null) return 2;
  const { lowFreqFactor: low, highFreqFactor: high } = scaling;
  return 12 * (1 + high / (high - low));
}

Deno.test("rope forward and backward match the f64 reference and invert each other", async () => {
  using rt = await GpuRuntime.create();
  const rope = new Rope(rt);
  // The llama3 case at D = 8, θ = 10000 (frequencies 1, 0.1, 0.01, 0.001; wavelengths 6.3,
  // 63, 628, 6283) against a context of 1024: two pairs kept, one blended, one divided.
  const small = { ...LLAMA_3_2, factor: 8, originalMaxPositionEmbeddings: 1024 };
  const cases: [number, number, number, number, RopeFrequencies][] = [
    [1, 1, 1, 2, { theta: 10000, scaling: null }],
    [3, 7, 5, 8, { theta: 10000, scaling: null }],
    [2, 33, 2, 64, { theta: 500000, scaling: null }],
    [2, 9, 3, 8, { theta: 10000, scaling: small }],
    [1, 33, 2, 64, { theta: 500000, scaling: LLAMA_3_2 }],
  ];
  for (const [b, t, heads, d, frequencies] of cases) {
    const n = b * t;
    const x = randomF32(t * d + heads, n * heads * d);
    const table = rt.buffer("table", ropeTable(t, d, frequencies));
    const fwd = rt.buffer("x", x), bwd = rt.buffer("dx", x), both = rt.buffer("both", x);
    const step = rt.beginStep("rope");
    rope.forward(step.pass, { x: fwd, table, n, t, heads, d });
    rope.backward(step.pass, { dx: bwd, table, n, t, heads, d });
    rope.forward(step.pass, { x: both, table, n, t, heads, d });
    rope.backward(step.pass, { dx: both, table, n, t, heads, d });
    await step.submit();
    // The table's angles are t·inv_freq with inv_freq (≤ 1) within k·u of the f64 one and the
    // product rounded to f32: angle error ≤ (k + 1)·t·u, so each output is within
    // ((k + 1)·T + 4)·u·(|x_i| + |x_partner|).
    const k = invFreqUlps(frequencies.scaling);
    const half = d / 2;
    const tol = (i: number) => {
      const partner = i % d < half ? i + half : i - half;
      return ((k + 1) * t + 4) * F32_EPS * (Math.abs(x[i]) + Math.abs(x[partner]));
    };
    const dims = { n, t, heads, d, rope: frequencies };
    const label = `t=${t} d=${d} ${frequencies.scaling ? "llama3" : "plain"}`;
    assertClose(await rt.read(fwd), ropeRef(x, dims), tol, `forward ${label}`);
    assertClose(await rt.read(bwd), ropeRef(x, { ...dims, direction: -1 }), tol, "backward");
    assertClose(await rt.read(both), x, (i) => 2 * tol(i), "backward undoes forward");
  }
});

Deno.test("rope by given positions (documents restarting at 0) matches the f64 reference", async () => {
  using rt = await GpuRuntime.create();
  const rope = new Rope(rt);
  const b = 2, t = 9, heads = 3, d = 8, n = b * t;
  const frequencies: RopeFrequencies = { theta: 10000, scaling: null };
  // Row 0: documents of 4, 3 and 2 tokens; row 1: one of 2, then one of 7.
  const positions = Uint32Array.from([0, 1, 2, 3, 0, 1, 2, 0, 1, 0, 1, 0, 1, 2, 3, 4, 5, 6]);
  const x = randomF32(17, n * heads * d);
  const table = rt.buffer("table", ropeTable(t, d, frequencies));
  const pos = rt.buffer("positions", positions);
  const plainPos = rt.buffer("plain positions", Uint32Array.from({ length: n }, (_, i) => i % t));
  const fwd = rt.buffer("x", x), bwd = rt.buffer("dx", x);
  const plain = rt.buffer("plain", x), byPlainPos = rt.buffer("by plain positions", x);
  const step = rt.beginStep("rope positions");
  rope.forward(step.pass, { x: fwd, table, n, t, heads, d, positions: pos });
  rope.backward(step.pass, { dx: bwd, table, n, t, heads, d, positions: pos });
  rope.forward(step.pass, { x: plain, table, n, t, heads, d });
  rope.forward(step.pass, { x: byPlainPos, table, n, t, heads, d, positions: plainPos });
  await step.submit();
  const half = d / 2;
  const tol = (i: number) => {
    const partner = i % d < half ? i + half : i - half;
    return (3 * t + 4) * F32_EPS * (Math.abs(x[i]) + Math.abs(x[partner]));
  };
  const dims = { n, t, heads, d, rope: frequencies, positions };
  assertClose(await rt.read(fwd), ropeRef(x, dims), tol, "forward by positions");
  assertClose(await rt.read(bwd), ropeRef(x, { ...dims, direction: -1 }), tol, "backward");
  // The reference really moved: token 4 (position 0) is not rotated at all.
  const moved = ropeRef(x, dims);
  for (let i = 4 * heads * d; i < 5 * heads * d; i++) assert.equal(moved[i], x[i]);
  // Positions n mod T are the default: the same bits.
  assert.deepEqual(await rt.read(byPlainPos), await rt.read(plain));
  assert.throws(
    () => {
      const s = rt.beginStep("bad positions");
      rope.forward(s.pass, { x: fwd, table, n, t, heads, d, positions: rt.buffer("short", 4) });
    },
    /positions/,
  );
});

Deno.test("rope table follows HF's rotate_half frequencies", () => {
  const table = ropeTable(3, 4, { theta: 10000, scaling: null });
  // position 2, pair 1: angle 2 · 10000^(-2/4) = 0.02
  assert.ok(Math.abs(table[(2 * 2 + 1) * 2] - Math.cos(0.02)) < 1e-7);
  assert.ok(Math.abs(table[(2 * 2 + 1) * 2 + 1] - Math.sin(0.02)) < 1e-7);
  assert.throws(() => ropeTable(3, 5, { theta: 10000, scaling: null }), /even/);
});

/** transformers' llama3 formula in f64, written out here apart from rope.ts and its reference. */
function llama3F64(d: number, theta: number, s: Llama3RopeScaling): number[] {
  const out = [];
  for (let i = 0; i < d / 2; i++) {
    const f = 1 / theta ** ((2 * i) / d);
    const wavelen = 2 * Math.PI / f;
    const lowFreqWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const highFreqWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    if (wavelen < highFreqWavelen) out.push(f);
    else if (wavelen > lowFreqWavelen) out.push(f / s.factor);
    else {
      const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) /
        (s.highFreqFactor - s.lowFreqFactor);
      out.push((1 - smooth) * f / s.factor + smooth * f);
    }
  }
  return out;
}

Deno.test("llama3 inverse frequencies follow transformers' formula", () => {
  const scalings: [number, number, Llama3RopeScaling][] = [
    [64, 500000, LLAMA_3_2],
    [128, 500000, { ...LLAMA_3_2, factor: 8 }], // Llama 3.1
    [16, 1000, { ...LLAMA_3_2, factor: 4, originalMaxPositionEmbeddings: 64 }],
    [32, 10000, { ...LLAMA_3_2, factor: 3, lowFreqFactor: 2, highFreqFactor: 5 }],
  ];
  for (const [d, theta, scaling] of scalings) {
    const want = llama3F64(d, theta, scaling);
    const rope = { theta, scaling };
    const got = ropeInvFreq(d, rope), ref = ropeInvFreqRef(d, rope);
    const bands = new Set<string>();
    for (let i = 0; i < d / 2; i++) {
      const f = 1 / theta ** ((2 * i) / d);
      bands.add(want[i] === f ? "kept" : want[i] === f / scaling.factor ? "divided" : "blended");
      const tol = invFreqUlps(scaling) * F32_EPS * f;
      const label = `d=${d} θ=${theta} factor ${scaling.factor} i=${i}`;
      assert.ok(Math.abs(got[i] - want[i]) <= tol, `${label}: f32 ${got[i]}, f64 ${want[i]}`);
      assert.ok(Math.abs(ref[i] - want[i]) <= 1e-14 * f, `${label}: reference ${ref[i]}`);
    }
    assert.equal(bands.size, 3, `d=${d} θ=${theta}: every band is tested (${[...bands]})`);
  }
  // Llama 3.2 (D = 64, θ = 500000, wavelengths 2048 and 8192 bound the band) by hand:
  const got = ropeInvFreq(64, { theta: 500000, scaling: LLAMA_3_2 });
  const plain = ropeInvFreq(64, { theta: 500000, scaling: null });
  // i = 0: f = 1, wavelength 2π < 2048: kept.
  assert.equal(got[0], 1);
  // i = 14: f = 500000^(-7/16) = 0.0032114, wavelength 1956.5 < 2048: kept, bit for bit.
  assert.equal(got[14], plain[14]);
  // i = 16: f = 500000^(-1/2) = 0.0014142136, wavelength 1000π√2 = 4442.88, in the band:
  // s = (8192/4442.88 − 1)/3 = 0.2812826, f' = f·((1 − s)/32 + s) = 0.000429556797.
  assert.ok(Math.abs(got[16] / 0.000429556797 - 1) < 1e-6, `${got[16]}`);
  // i = 31: f = 500000^(-31/32) = 3.0138582e-6, wavelength 2.08e6 > 8192: divided by 32.
  assert.equal(got[31], Math.fround(plain[31] / 32));
  assert.ok(Math.abs(got[31] / 9.41830673e-8 - 1) < 1e-6, `${got[31]}`);
  // A factor of 1 changes nothing (here bit for bit).
  assert.deepEqual(ropeInvFreq(64, { theta: 500000, scaling: { ...LLAMA_3_2, factor: 1 } }), plain);
  assert.throws(
    () => ropeInvFreq(8, { theta: 1e4, scaling: { ...LLAMA_3_2, highFreqFactor: 1 } }),
    /high_freq_factor > low_freq_factor/,
  );
});

Deno.test("rope of queries and keys in one dispatch has the bits of two and the reference's values", async () => {
  using rt = await GpuRuntime.create();
  const b = 2, t = 9, heads = 4, kvHeads = 2, d = 8, n = b * t;
  const frequencies: RopeFrequencies = { theta: 10000, scaling: null };
  const positions = Uint32Array.from([0, 1, 2, 3, 0, 1, 2, 0, 1, 0, 1, 0, 1, 2, 3, 4, 5, 6]);
  const q = randomF32(23, n * heads * d), k = randomF32(29, n * kvHeads * d);
  const table = rt.buffer("table", ropeTable(t, d, frequencies));
  const pos = rt.buffer("positions", positions);
  // Items per invocation 1 and 3 (3 does not divide the pairs: the tail is bounds-checked).
  for (const items of [1, 3]) {
    const rope = new Rope(rt, 16, items);
    for (const withPositions of [false, true]) {
      const extra = withPositions ? { positions: pos } : {};
      const gq = rt.buffer("q", q), gk = rt.buffer("k", k);
      const oneQ = rt.buffer("q alone", q), oneK = rt.buffer("k alone", k);
      const dq = rt.buffer("dq", q), dk = rt.buffer("dk", k);
      const step = rt.beginStep("rope paired");
      const dims = { table, n, t, d, ...extra };
      rope.forward(step.pass, { ...dims, x: gq, heads, second: { x: gk, heads: kvHeads } });
      rope.forward(step.pass, { ...dims, x: oneQ, heads });
      rope.forward(step.pass, { ...dims, x: oneK, heads: kvHeads });
      rope.backward(step.pass, { ...dims, dx: dq, heads, second: { x: dk, heads: kvHeads } });
      await step.submit();
      const what = `items ${items}${withPositions ? ", positions" : ""}`;
      const [pq, pk, sq, sk] = await Promise.all([gq, gk, oneQ, oneK].map((v) => rt.read(v)));
      assert.deepEqual(pq.subarray(0, q.length), sq.subarray(0, q.length), `q ${what}`);
      assert.deepEqual(pk.subarray(0, k.length), sk.subarray(0, k.length), `k ${what}`);
      const ref = { n, t, d, rope: frequencies, ...(withPositions ? { positions } : {}) };
      const tol = (x: Float32Array) => (i: number) => {
        const partner = i % d < d / 2 ? i + d / 2 : i - d / 2;
        return (3 * t + 4) * F32_EPS * (Math.abs(x[i]) + Math.abs(x[partner]));
      };
      assertClose(pk, ropeRef(k, { ...ref, heads: kvHeads }), tol(k), `k ref ${what}`);
      assertClose(await rt.read(dq), ropeRef(q, { ...ref, heads, direction: -1 }), tol(q), what);
      assertClose(
        await rt.read(dk),
        ropeRef(k, { ...ref, heads: kvHeads, direction: -1 }),
        tol(k),
        `dk ${what}`,
      );
    }
  }
});
