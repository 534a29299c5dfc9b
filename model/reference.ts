/**
 * A plain-TypeScript Llama forward and backward pass in f64: the ground truth the GPU model is
 * tested against, and small enough to check by finite differences. Slow; tests only.
 *
 * Maths (HF `LlamaForCausalLM`, no dropout, no biases):
 * ```
 * x = embed[tokens]                                   [B, T, C]
 * per layer:  h = rmsnorm(x) * w_in
 *             q, k, v = h Wq^T, h Wk^T, h Wv^T         [B, T, NH·HD], [B, T, NKV·HD] ×2
 *             q, k = rope(q), rope(k)                  (rotate-half pairs i, i + HD/2, llama3
 *                                                      frequency scaling if the config has it;
 *                                                      angle of token t: position_ids[t], default t)
 *             a = softmax(q k^T / sqrt(HD), causal) v  (query head n reads kv head n / (NH/NKV);
 *                                                      with sequence_lengths a token sees only
 *                                                      its own packed document)
 *             x = x + a Wo^T
 *             h = rmsnorm(x) * w_post
 *             x = x + (silu(h Wg^T) ⊙ h Wu^T) Wd^T
 * logits = (rmsnorm(x) * w_norm) Wlm^T                 [B, T, V]  (Wlm = embed when tied)
 * loss = mean over b and t < T-1 with labels[b, t+1] ≠ -100 of
 *        cross-entropy(logits[b, t], labels[b, t+1])   (labels default to tokens; 0 if none)
 * ```
 *
 * @module
 */
import type { LlamaConfig } from "./hf_config.ts";
import {
  type LayerTensor,
  layerTensorName,
  lmHeadWeightName,
  paramEntry,
  type ParamLayout,
} from "./params.ts";

/** Result of {@link referenceLossAndGrad}. */
export interface ReferenceResult {
  /** Mean cross-entropy over the predictions (B·(T-1) without labels; 0 when there are none). */
  loss: number;
  /** How many predictions the loss averages. */
  predictions: number;
  /** d loss / d params, in the same flat layout as the parameters (padding stays zero). */
  grads: Float64Array;
  /** Logits `[B, T, V]`. */
  logits: Float64Array;
}

/** y[n, o] = Σ_i x[n, i] W[o, i] for x `[N, I]`, W `[O, I]`. */
function linear(x: Float64Array, w: Float64Array, n: number, i: number, o: number): Float64Array {
  const y = new Float64Array(n * o);
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < o; c++) {
      let s = 0;
      for (let k = 0; k < i; k++) s += x[r * i + k] * w[c * i + k];
      y[r * o + c] = s;
    }
  }
  return y;
}

/** Backward of {@link linear}: returns dx and accumulates into dW. */
function linearBack(
  dy: Float64Array,
  x: Float64Array,
  w: Float64Array,
  dw: Float64Array,
  dims: [number, number, number],
): Float64Array {
  const [n, i, o] = dims;
  const dx = new Float64Array(n * i);
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < o; c++) {
      const g = dy[r * o + c];
      if (g === 0) continue;
      for (let k = 0; k < i; k++) {
        dx[r * i + k] += g * w[c * i + k];
        dw[c * i + k] += g * x[r * i + k];
      }
    }
  }
  return dx;
}

/** Row-wise RMSNorm of x `[N, C]` with gain w; also returns 1/rms per row for the backward. */
function rmsnorm(x: Float64Array, w: Float64Array, n: number, c: number, eps: number) {
  const y = new Float64Array(n * c);
  const rstd = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    let ss = 0;
    for (let k = 0; k < c; k++) ss += x[r * c + k] ** 2;
    const s = 1 / Math.sqrt(ss / c + eps);
    rstd[r] = s;
    for (let k = 0; k < c; k++) y[r * c + k] = x[r * c + k] * s * w[k];
  }
  return { y, rstd };
}

function rmsnormBack(
  dy: Float64Array,
  x: Float64Array,
  w: Float64Array,
  rstd: Float64Array,
  dw: Float64Array,
  n: number,
  c: number,
): Float64Array {
  const dx = new Float64Array(n * c);
  for (let r = 0; r < n; r++) {
    const s = rstd[r];
    let dot = 0;
    for (let k = 0; k < c; k++) {
      dot += dy[r * c + k] * w[k] * x[r * c + k];
      dw[k] += dy[r * c + k] * x[r * c + k] * s;
    }
    for (let k = 0; k < c; k++) {
      dx[r * c + k] = s * dy[r * c + k] * w[k] - (x[r * c + k] * s * s * s * dot) / c;
    }
  }
  return dx;
}

/**
 * The RoPE inverse frequencies `[HD/2]`: `theta^(-2i/HD)`, then Llama 3's scaling as
 * transformers' `_compute_llama3_parameters` writes it, in f64: with wavelength `λ = 2π/f` and
 * pre-training context L, keep f where `λ < L/high_freq_factor`, divide it by `factor` where
 * `λ > L/low_freq_factor`, and in between blend the two with
 * `s = (L/λ − low_freq_factor) / (high_freq_factor − low_freq_factor)`.
 */
function ropeFrequencies(config: LlamaConfig): Float64Array {
  const hd = config.headDim, sc = config.ropeScaling;
  return Float64Array.from({ length: hd / 2 }, (_, i) => {
    const f = Math.pow(config.ropeTheta, (-2 * i) / hd);
    if (sc === null) return f;
    const l = sc.originalMaxPositionEmbeddings, wavelen = (2 * Math.PI) / f;
    if (wavelen < l / sc.highFreqFactor) return f;
    if (wavelen > l / sc.lowFreqFactor) return f / sc.factor;
    const s = (l / wavelen - sc.lowFreqFactor) / (sc.highFreqFactor - sc.lowFreqFactor);
    return (1 - s) * (f / sc.factor) + s * f;
  });
}

/**
 * Rotates x `[B, T, H, HD]` in place by the RoPE angles `t · invFreq[i]`; `sign` -1 applies the
 * inverse rotation (which is also the backward pass, rotations being orthogonal).
 */
function rope(
  x: Float64Array,
  dims: [number, number, number, number],
  invFreq: Float64Array,
  sign: number,
  positionIds: ArrayLike<number> | null,
) {
  const [b, t, h, hd] = dims;
  const half = hd / 2;
  for (let bi = 0; bi < b; bi++) {
    for (let ti = 0; ti < t; ti++) {
      for (let hi = 0; hi < h; hi++) {
        const base = ((bi * t + ti) * h + hi) * hd;
        for (let i = 0; i < half; i++) {
          const angle = (positionIds === null ? ti : positionIds[bi * t + ti]) * invFreq[i];
          const cos = Math.cos(angle), sin = sign * Math.sin(angle);
          const a = x[base + i], bb = x[base + i + half];
          x[base + i] = a * cos - bb * sin;
          x[base + i + half] = bb * cos + a * sin;
        }
      }
    }
  }
}

interface AttnDims {
  b: number;
  t: number;
  nh: number;
  nkv: number;
  hd: number;
  /** Packed document number of each token `[B·T]` (all 0: one document per row). */
  doc: Int32Array;
}

/** Causal grouped-query attention; returns the output `[B, T, NH·HD]` and the probabilities. */
function attention(q: Float64Array, k: Float64Array, v: Float64Array, d: AttnDims) {
  const { b, t, nh, nkv, hd } = d;
  const group = nh / nkv;
  const scale = 1 / Math.sqrt(hd);
  const out = new Float64Array(b * t * nh * hd);
  const probs = new Float64Array(b * nh * t * t);
  for (let bi = 0; bi < b; bi++) {
    for (let h = 0; h < nh; h++) {
      const kh = Math.floor(h / group);
      for (let i = 0; i < t; i++) {
        const qo = ((bi * t + i) * nh + h) * hd;
        const p = probs.subarray(((bi * nh + h) * t + i) * t, ((bi * nh + h) * t + i + 1) * t);
        let max = -Infinity;
        const seen = (j: number) => d.doc[bi * t + j] === d.doc[bi * t + i];
        for (let j = 0; j <= i; j++) {
          if (!seen(j)) continue;
          const ko = ((bi * t + j) * nkv + kh) * hd;
          let s = 0;
          for (let e = 0; e < hd; e++) s += q[qo + e] * k[ko + e];
          p[j] = s * scale;
          max = Math.max(max, p[j]);
        }
        let sum = 0;
        for (let j = 0; j <= i; j++) sum += p[j] = seen(j) ? Math.exp(p[j] - max) : 0;
        for (let j = 0; j <= i; j++) {
          p[j] /= sum;
          const vo = ((bi * t + j) * nkv + kh) * hd;
          for (let e = 0; e < hd; e++) out[qo + e] += p[j] * v[vo + e];
        }
      }
    }
  }
  return { out, probs };
}

function attentionBack(
  dout: Float64Array,
  q: Float64Array,
  k: Float64Array,
  v: Float64Array,
  probs: Float64Array,
  d: AttnDims,
) {
  const { b, t, nh, nkv, hd } = d;
  const group = nh / nkv;
  const scale = 1 / Math.sqrt(hd);
  const dq = new Float64Array(q.length), dk = new Float64Array(k.length);
  const dv = new Float64Array(v.length);
  const dp = new Float64Array(t);
  for (let bi = 0; bi < b; bi++) {
    for (let h = 0; h < nh; h++) {
      const kh = Math.floor(h / group);
      for (let i = 0; i < t; i++) {
        const qo = ((bi * t + i) * nh + h) * hd;
        const p = probs.subarray(((bi * nh + h) * t + i) * t, ((bi * nh + h) * t + i + 1) * t);
        let dot = 0;
        for (let j = 0; j <= i; j++) {
          const vo = ((bi * t + j) * nkv + kh) * hd;
          let s = 0;
          for (let e = 0; e < hd; e++) {
            s += dout[qo + e] * v[vo + e];
            dv[vo + e] += p[j] * dout[qo + e];
          }
          dp[j] = s;
          dot += p[j] * s;
        }
        for (let j = 0; j <= i; j++) {
          const ds = p[j] * (dp[j] - dot) * scale;
          const ko = ((bi * t + j) * nkv + kh) * hd;
          for (let e = 0; e < hd; e++) {
            dq[qo + e] += ds * k[ko + e];
            dk[ko + e] += ds * q[qo + e];
          }
        }
      }
    }
  }
  return { dq, dk, dv };
}

/**
 * Loss, gradients and logits of the model with parameters `params` (flat, laid out by `layout`)
 * on `tokens` `[batch, seqLen]`.
 */
export function referenceLossAndGrad(
  config: LlamaConfig,
  layout: ParamLayout,
  params: Float32Array | Float64Array,
  batch: {
    tokens: Uint32Array;
    count: number;
    seqLen: number;
    /** `[count, seqLen]`, -100 where masked; default: the tokens. */
    labels?: Int32Array | null;
    /** `[count, seqLen]` RoPE positions; default: `0..seqLen−1` in every row. */
    positionIds?: Int32Array | null;
    /** `[count][documents]` lengths of the documents packed in each row; default: one. */
    sequenceLengths?: readonly (readonly number[])[] | null;
  },
): ReferenceResult {
  const { hiddenSize: c, intermediateSize: f, vocabSize: vocab, headDim: hd } = config;
  const nh = config.numHeads, nkv = config.numKvHeads;
  const { count: b, seqLen: t, tokens } = batch;
  const n = b * t;
  if (tokens.length !== n) throw new RangeError(`expected ${n} tokens, found ${tokens.length}`);
  if (t < 2) throw new RangeError(`sequence length must be at least 2, found ${t}`);
  const p64 = Float64Array.from(params);
  const grads = new Float64Array(layout.totalSize);
  const w = (name: string) => {
    const e = paramEntry(layout, name);
    return p64.subarray(e.offset, e.offset + e.size);
  };
  const g = (name: string) => {
    const e = paramEntry(layout, name);
    return grads.subarray(e.offset, e.offset + e.size);
  };
  const lw = (l: number, s: LayerTensor) => w(layerTensorName(l, s));
  const lg = (l: number, s: LayerTensor) => g(layerTensorName(l, s));
  const eps = config.rmsNormEps;
  const kvw = nkv * hd;
  const doc = new Int32Array(n);
  batch.sequenceLengths?.forEach((lengths, bi) => {
    let at = bi * t;
    lengths.forEach((len, di) => doc.fill(di, at, at += len));
  });
  const ad: AttnDims = { b, t, nh, nkv, hd, doc };
  const positionIds = batch.positionIds ?? null;
  const labels = batch.labels ?? tokens;
  const invFreq = ropeFrequencies(config);

  // ---- forward, keeping what the backward needs ----
  const embed = w("model.embed_tokens.weight");
  let x: Float64Array = new Float64Array(n * c);
  for (let r = 0; r < n; r++) {
    const id = tokens[r];
    if (id >= vocab) throw new RangeError(`token ${id} at position ${r} is >= vocab ${vocab}`);
    x.set(embed.subarray(id * c, (id + 1) * c), r * c);
  }
  const saved = [];
  for (let l = 0; l < config.numLayers; l++) {
    const x0 = x;
    const n1 = rmsnorm(x0, lw(l, "input_layernorm.weight"), n, c, eps);
    const q = linear(n1.y, lw(l, "self_attn.q_proj.weight"), n, c, c);
    const k = linear(n1.y, lw(l, "self_attn.k_proj.weight"), n, c, kvw);
    const v = linear(n1.y, lw(l, "self_attn.v_proj.weight"), n, c, kvw);
    rope(q, [b, t, nh, hd], invFreq, 1, positionIds);
    rope(k, [b, t, nkv, hd], invFreq, 1, positionIds);
    const att = attention(q, k, v, ad);
    const o = linear(att.out, lw(l, "self_attn.o_proj.weight"), n, c, c);
    const x1 = x0.map((xv, i) => xv + o[i]);
    const n2 = rmsnorm(x1, lw(l, "post_attention_layernorm.weight"), n, c, eps);
    const gate = linear(n2.y, lw(l, "mlp.gate_proj.weight"), n, c, f);
    const up = linear(n2.y, lw(l, "mlp.up_proj.weight"), n, c, f);
    const act = gate.map((gv, i) => (gv / (1 + Math.exp(-gv))) * up[i]);
    const down = linear(act, lw(l, "mlp.down_proj.weight"), n, f, c);
    x = x1.map((xv, i) => xv + down[i]);
    saved.push({ x0, n1, q, k, v, att, x1, n2, gate, up, act });
  }
  const nf = rmsnorm(x, w("model.norm.weight"), n, c, eps);
  // A tied head (tie_word_embeddings) multiplies by the embedding matrix.
  const head = lmHeadWeightName(config);
  const logits = linear(nf.y, w(head), n, c, vocab);

  // ---- loss and its gradient w.r.t. logits ----
  let predictions = 0;
  for (let bi = 0; bi < b; bi++) {
    for (let ti = 1; ti < t; ti++) if (labels[bi * t + ti] !== -100) predictions++;
  }
  const dlogits = new Float64Array(n * vocab);
  let loss = 0;
  for (let bi = 0; bi < b; bi++) {
    for (let ti = 0; ti < t - 1; ti++) {
      const r = bi * t + ti;
      const row = logits.subarray(r * vocab, (r + 1) * vocab);
      const target = labels[r + 1];
      if (target === -100) continue;
      let max = -Infinity;
      for (const z of row) max = Math.max(max, z);
      let sum = 0;
      for (const z of row) sum += Math.exp(z - max);
      const lse = max + Math.log(sum);
      loss += lse - row[target];
      for (let j = 0; j < vocab; j++) {
        dlogits[r * vocab + j] = (Math.exp(row[j] - lse) - (j === target ? 1 : 0)) / predictions;
      }
    }
  }
  if (predictions > 0) loss /= predictions;

  // ---- backward ----
  // Tied: the head's weight gradient goes into the embedding's, before the lookup's below.
  const dnf = linearBack(dlogits, nf.y, w(head), g(head), [n, c, vocab]);
  let dx: Float64Array = rmsnormBack(
    dnf,
    x,
    w("model.norm.weight"),
    nf.rstd,
    g("model.norm.weight"),
    n,
    c,
  );
  for (let l = config.numLayers - 1; l >= 0; l--) {
    const s = saved[l];
    /** Backward of `y = x·Wᵀ` for layer l's tensor `name` (W `[outDim, inDim]`): returns dx. */
    const back = (
      name: LayerTensor,
      dy: Float64Array,
      xIn: Float64Array,
      inDim: number,
      outDim: number,
    ) => linearBack(dy, xIn, lw(l, name), lg(l, name), [n, inDim, outDim]);
    const sum = (a: Float64Array, bb: Float64Array) => a.map((v, i) => v + bb[i]);
    // MLP: x = x1 + down(silu(gate)·up); dx reaches x1 directly and through the MLP.
    const dact = back("mlp.down_proj.weight", dx, s.act, f, c);
    const dgate = new Float64Array(n * f), dup = new Float64Array(n * f);
    for (let i = 0; i < n * f; i++) {
      const gv = s.gate[i];
      const sig = 1 / (1 + Math.exp(-gv));
      dup[i] = dact[i] * gv * sig;
      dgate[i] = dact[i] * s.up[i] * sig * (1 + gv * (1 - sig));
    }
    const dn2 = sum(
      back("mlp.gate_proj.weight", dgate, s.n2.y, c, f),
      back("mlp.up_proj.weight", dup, s.n2.y, c, f),
    );
    const postNorm = "post_attention_layernorm.weight";
    const dx1 = sum(dx, rmsnormBack(dn2, s.x1, lw(l, postNorm), s.n2.rstd, lg(l, postNorm), n, c));
    // Attention: x1 = x0 + o(attention(rope(q), rope(k), v)).
    const datt = back("self_attn.o_proj.weight", dx1, s.att.out, c, c);
    const { dq, dk, dv } = attentionBack(datt, s.q, s.k, s.v, s.att.probs, ad);
    rope(dq, [b, t, nh, hd], invFreq, -1, positionIds);
    rope(dk, [b, t, nkv, hd], invFreq, -1, positionIds);
    const dn1 = sum(
      sum(
        back("self_attn.q_proj.weight", dq, s.n1.y, c, c),
        back("self_attn.k_proj.weight", dk, s.n1.y, c, kvw),
      ),
      back("self_attn.v_proj.weight", dv, s.n1.y, c, kvw),
    );
    const inNorm = "input_layernorm.weight";
    dx = sum(dx1, rmsnormBack(dn1, s.x0, lw(l, inNorm), s.n1.rstd, lg(l, inNorm), n, c));
  }
  const dembed = g("model.embed_tokens.weight");
  for (let r = 0; r < n; r++) {
    const id = tokens[r];
    for (let k = 0; k < c; k++) dembed[id * c + k] += dx[r * c + k];
  }
  return { loss, predictions, grads, logits };
}
