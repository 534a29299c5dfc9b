#!/usr/bin/env python3
"""One Llama training step in plain eager PyTorch, timed: the baseline of `deno task bench-torch`.

Reads a Hugging Face Llama folder (config.json + model.safetensors or its shards with
model.safetensors.index.json, F32/BF16/F16 tensors) and a batch of token ids, trains for `--warmup + --steps` steps on that one batch (forward, mean
cross-entropy, backward, global gradient-norm clipping, AdamW) in fp32, and prints one JSON object:
the loss of every step, the gradient norm of the first step (global and per tensor, before
clipping), the step times of the timed steps and the process's peak RSS.

Memory is kept to what training needs (a 1B model: weights, gradients and AdamW's two moments,
about 20 GB): the model is built uninitialised and each tensor is read into its parameter a chunk
at a time, and the step-0 gradient norms are summed in f64 a chunk at a time.

The model is written out here from the HF Llama architecture (no `transformers`):

    x = embed[tokens]                                    [B, T, C]
    per layer:  h = rmsnorm(x) * w_in
                q, k, v = h Wq^T, h Wk^T, h Wv^T          [B, T, NH*HD], [B, T, NKV*HD] x2
                q, k = rope(q), rope(k)                   (rotate-half: pairs i and i + HD/2,
                                                           Llama 3's frequency scaling if asked)
                a = softmax(q k^T / sqrt(HD), causal) v   (query head h reads kv head h // (NH/NKV))
                x = x + a Wo^T
                h = rmsnorm(x) * w_post
                x = x + (silu(h Wg^T) * h Wu^T) Wd^T
    logits = (rmsnorm(x) * w_norm) Wlm^T                  (Wlm = embed when tie_word_embeddings)
    loss = mean over b and t < T-1 of cross_entropy(logits[b, t], tokens[b, t+1])

The optimizer is `torch.optim.AdamW` after `torch.nn.utils.clip_grad_norm_`, the same update the
Deno engine's AdamW applies (optimizer/adamw.ts). Matmuls stay in true fp32 (TF32 is switched off).

Usage:
    python3 bench/torch/llama_step.py --model DIR --tokens FILE --batch B --seq-len T \
        [--steps 5] [--warmup 2] [--lr 1e-3] [--device cpu|cuda] [--threads N]

FILE holds B*T token ids as little-endian uint32, sequence after sequence. Needs only Python 3.8+
and PyTorch 1.13 or later (numpy is not needed). Errors go to stderr with exit status 1 (bad
input) or 2 (bad command line).
"""

import argparse
import json
import math
import os
import statistics
import struct
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as _e:  # the Deno side reads this line to say what is missing
    sys.stderr.write(f"llama_step.py: PyTorch is not importable: {_e}\n")
    sys.exit(3)


class InputError(Exception):
    """A model folder, weights file or token file that cannot be used; the message says why."""


# ---------------------------------------------------------------------------------------------
# config.json

# Keys with one supported value: anything else would need maths this model does not implement.
_REQUIRED_VALUES = {
    "hidden_act": "silu",
    "attention_bias": False,
    "mlp_bias": False,
    "pretraining_tp": 1,
}

# RoPE: the types implemented here, and the keys each may have in rope_parameters/rope_scaling.
_ROPE_KEYS = {
    "default": {"rope_type", "type", "rope_theta", "partial_rotary_factor"},
    "llama3": {
        "rope_type",
        "type",
        "rope_theta",
        "partial_rotary_factor",
        "factor",
        "low_freq_factor",
        "high_freq_factor",
        "original_max_position_embeddings",
    },
}


def read_rope(raw, path):
    """(theta, scaling) of a config, read as transformers 5 reads it: `rope_scaling` (what
    transformers 4 writes) or else `rope_parameters` (transformers 5) gives the rope type, theta
    comes from either or from the top-level `rope_theta` (default 10000). scaling is None or the
    llama3 settings. Other rope types and settings that contradict each other are refused by key,
    as model/hf_config.ts refuses them."""

    def fail(key, detail):
        raise InputError(f'"{path}": key "{key}" {detail}')

    def number(obj, key, name, integer=False):
        v = obj.get(key)
        is_number = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if not is_number or not v > 0 or (integer and v != int(v)):
            kind = "a positive integer" if integer else "a positive number"
            fail(name, f"must be {kind}, found {json.dumps(v)}")
        return int(v) if integer else float(v)

    def read_object(key):
        obj = raw.get(key)
        if obj is None:
            return None
        if not isinstance(obj, dict):
            fail(key, f"must be an object or null, found {json.dumps(obj)}")
        type_keys = [k for k in ("rope_type", "type") if k in obj]
        for k in type_keys:
            if not isinstance(obj[k], str):
                fail(f"{key}.{k}", f"must be a string, found {json.dumps(obj[k])}")
        if len(type_keys) == 2 and obj["rope_type"] != obj["type"]:
            fail(
                f"{key}.type",
                f'is {json.dumps(obj["type"])} but "{key}.rope_type" is {json.dumps(obj["rope_type"])}',
            )
        rope_type = obj.get("rope_type", obj.get("type", "default"))
        if rope_type not in _ROPE_KEYS:
            fail(
                f"{key}.{type_keys[0]}",
                f"names rope type {json.dumps(rope_type)}, which is not supported "
                "(supported: default, llama3)",
            )
        for k in obj:
            if k not in _ROPE_KEYS[rope_type]:
                fail(f"{key}.{k}", f'is not a setting of rope type "{rope_type}"')
        partial = obj.get("partial_rotary_factor")
        if partial is not None and partial != 1:
            fail(f"{key}.partial_rotary_factor", f"has unsupported value {json.dumps(partial)}")
        for k in _ROPE_KEYS[rope_type] - {"rope_type", "type", "rope_theta", "partial_rotary_factor"}:
            if obj.get(k) is None:
                fail(f"{key}.{k}", f'is required for rope type "{rope_type}"')
        theta = None
        if obj.get("rope_theta") is not None:
            theta = number(obj, "rope_theta", f"{key}.rope_theta")
        if rope_type == "default":
            return theta, None
        scaling = {
            "factor": number(obj, "factor", f"{key}.factor"),
            "low_freq_factor": number(obj, "low_freq_factor", f"{key}.low_freq_factor"),
            "high_freq_factor": number(obj, "high_freq_factor", f"{key}.high_freq_factor"),
            "original_max_position_embeddings": number(
                obj,
                "original_max_position_embeddings",
                f"{key}.original_max_position_embeddings",
                integer=True,
            ),
        }
        if not scaling["high_freq_factor"] > scaling["low_freq_factor"]:
            fail(
                f"{key}.high_freq_factor",
                f"must be greater than low_freq_factor {scaling['low_freq_factor']}",
            )
        return theta, scaling

    params, legacy = read_object("rope_parameters"), read_object("rope_scaling")
    if params is not None and legacy is not None and params[1] != legacy[1]:
        fail(
            "rope_scaling",
            f'describes {json.dumps(legacy[1])} but "rope_parameters" describes '
            f"{json.dumps(params[1])} (null: rope type default)",
        )
    thetas = []
    if raw.get("rope_theta") is not None:
        thetas.append(("rope_theta", number(raw, "rope_theta", "rope_theta")))
    for key, given in (("rope_parameters", params), ("rope_scaling", legacy)):
        if given is not None and given[0] is not None:
            thetas.append((f"{key}.rope_theta", given[0]))
    for key, theta in thetas[1:]:
        if theta != thetas[0][1]:
            fail(key, f'is {theta} but "{thetas[0][0]}" is {thetas[0][1]}')
    chosen = legacy if legacy is not None else params
    return (thetas[0][1] if thetas else 10000.0), (chosen[1] if chosen is not None else None)


def read_config(path):
    """Parses config.json into a dict of the hyperparameters this model uses."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f'cannot read "{path}": {e}') from e
    if not isinstance(raw, dict):
        raise InputError(f'"{path}" must hold a JSON object')
    for key, want in _REQUIRED_VALUES.items():
        if key in raw and raw[key] != want:
            raise InputError(
                f'"{path}": key "{key}" is {json.dumps(raw[key])}, '
                f"only {json.dumps(want)} is supported"
            )

    def positive_int(key, default=None):
        v = raw.get(key, default)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise InputError(
                f'"{path}": key "{key}" must be a positive integer, found {json.dumps(v)}'
            )
        return v

    def positive_number(key, default):
        v = raw.get(key, default)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
            raise InputError(
                f'"{path}": key "{key}" must be a positive number, found {json.dumps(v)}'
            )
        return float(v)

    hidden = positive_int("hidden_size")
    heads = positive_int("num_attention_heads")
    kv_heads = positive_int("num_key_value_heads", heads)
    if hidden % heads != 0:
        raise InputError(
            f'"{path}": num_attention_heads {heads} does not divide hidden_size {hidden}'
        )
    if heads % kv_heads != 0:
        raise InputError(
            f'"{path}": num_key_value_heads {kv_heads} does not divide num_attention_heads {heads}'
        )
    head_dim = raw.get("head_dim") or hidden // heads
    if head_dim * heads != hidden or head_dim % 2 != 0:
        raise InputError(f'"{path}": head_dim {head_dim} must be hidden_size / heads and even')
    tie = raw.get("tie_word_embeddings", False)
    if not isinstance(tie, bool):
        raise InputError(f'"{path}": key "tie_word_embeddings" must be true or false')
    theta, rope_scaling = read_rope(raw, path)
    return {
        "hidden": hidden,
        "intermediate": positive_int("intermediate_size"),
        "layers": positive_int("num_hidden_layers"),
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab": positive_int("vocab_size"),
        "eps": positive_number("rms_norm_eps", 1e-6),
        "theta": theta,
        "rope_scaling": rope_scaling,
        "tie": tie,
    }


# ---------------------------------------------------------------------------------------------
# safetensors: an 8-byte little-endian header length, a JSON header, then the raw tensor bytes.
# Only headers are read whole; tensor data is copied a chunk at a time straight into the model's
# parameters, so a load holds no second copy of the weights (4.9 GB for a 1B model).

_DTYPES = {"F32": (torch.float32, 4), "BF16": (torch.bfloat16, 2), "F16": (torch.float16, 2)}
# Bytes read at a time while loading (the engine's SAVE_CHUNK_FLOATS f32 values).
CHUNK_BYTES = 16 << 20
# A header is JSON for a few hundred tensors: anything near this size is not one.
_MAX_HEADER_BYTES = 100 << 20


class StoredTensor:
    """Where one tensor's bytes lie in a safetensors file (its header checked)."""

    def __init__(self, path, name, dtype, shape, file_offset):
        self.path, self.name, self.dtype = path, name, dtype
        self.shape, self.file_offset = shape, file_offset


def read_safetensors_header(path):
    """Returns {name: StoredTensor} of a safetensors file from its header alone; every range and
    size is checked against the file's size before any tensor byte is read."""
    if sys.byteorder != "little":
        raise InputError("safetensors data is little-endian; this reader needs such a host")
    try:
        with open(path, "rb") as f:
            file_size = os.fstat(f.fileno()).st_size
            head = f.read(8)
            if len(head) < 8:
                raise InputError(
                    f'"{path}": {len(head)} bytes, too short for the 8-byte header length'
                )
            (header_len,) = struct.unpack("<Q", head)
            if header_len > file_size - 8 or header_len > _MAX_HEADER_BYTES:
                raise InputError(
                    f'"{path}": header length {header_len} runs past the end of the file '
                    f"({file_size} bytes)"
                )
            raw = f.read(header_len)
    except OSError as e:
        raise InputError(f'cannot read "{path}": {e}') from e
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise InputError(f'"{path}": header is not valid JSON: {e}') from e
    if not isinstance(header, dict):
        raise InputError(f'"{path}": header must be a JSON object')
    data_start = 8 + header_len
    body = file_size - data_start
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info.get("dtype") if isinstance(info, dict) else None
        if dtype not in _DTYPES:
            raise InputError(
                f'"{path}": tensor "{name}" has dtype {json.dumps(dtype)}, '
                "expected one of F32, BF16, F16"
            )
        size = _DTYPES[dtype][1]
        shape, offsets = info.get("shape"), info.get("data_offsets")
        if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
            raise InputError(f'"{path}": tensor "{name}" has shape {json.dumps(shape)}')
        if not (isinstance(offsets, list) and len(offsets) == 2 and 0 <= offsets[0] <= offsets[1]):
            raise InputError(f'"{path}": tensor "{name}" has data_offsets {json.dumps(offsets)}')
        begin, end = offsets
        want = math.prod(shape) * size
        if end > body or end - begin != want:
            raise InputError(
                f'"{path}": tensor "{name}" covers bytes [{begin}, {end}) '
                f"of a {body}-byte body, "
                f"expected {want} bytes for shape {shape} {dtype}"
            )
        tensors[name] = StoredTensor(path, name, dtype, shape, data_start + begin)
    return tensors


def read_model_headers(folder):
    """{name: StoredTensor} of `folder`'s weights: model.safetensors, else the shards that
    model.safetensors.index.json lists (as HF's from_pretrained looks for them)."""
    single = os.path.join(folder, "model.safetensors")
    index_path = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(single) or not os.path.exists(index_path):
        return single, read_safetensors_header(single)
    try:
        with open(index_path, "r", encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f'cannot read "{index_path}": {e}') from e
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(v, str) and "/" not in v for v in weight_map.values()
    ):
        raise InputError(f'"{index_path}": "weight_map" must map tensor names to file names')
    tensors = {}
    for shard in sorted(set(weight_map.values())):
        for name, t in read_safetensors_header(os.path.join(folder, shard)).items():
            if weight_map.get(name) != shard:
                raise InputError(
                    f'"{t.path}": tensor "{name}" is not in {index_path} under this file'
                )
            tensors[name] = t
    for name, shard in weight_map.items():
        if name not in tensors:
            raise InputError(f'"{index_path}": tensor "{name}" is not in "{shard}"')
    return index_path, tensors


def copy_stored(f, stored, dst):
    """Copies `stored`'s values into `dst` (a contiguous parameter of its shape) CHUNK_BYTES at a
    time, converting BF16/F16 to f32 exactly."""
    torch_dtype, size = _DTYPES[stored.dtype]
    flat = dst.view(-1)
    n = flat.numel()
    per = max(1, CHUNK_BYTES // size)
    buf = bytearray(min(per, max(n, 1)) * size)
    view = memoryview(buf)
    f.seek(stored.file_offset)
    for start in range(0, n, per):
        count = min(per, n - start)
        got = f.readinto(view[: count * size])
        if got != count * size:
            raise InputError(f'"{stored.path}": it ended inside tensor "{stored.name}"')
        flat[start : start + count].copy_(torch.frombuffer(buf, dtype=torch_dtype, count=count))


# ---------------------------------------------------------------------------------------------
# The model. Module names follow HF's LlamaForCausalLM, so state_dict keys are the file's names.


class RMSNorm(nn.Module):
    def __init__(self, width, eps, device=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width, device=device))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c, device=None):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c["heads"], c["kv_heads"], c["head_dim"]
        q, kv = c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"]
        self.q_proj = nn.Linear(c["hidden"], q, bias=False, device=device)
        self.k_proj = nn.Linear(c["hidden"], kv, bias=False, device=device)
        self.v_proj = nn.Linear(c["hidden"], kv, bias=False, device=device)
        self.o_proj = nn.Linear(q, c["hidden"], bias=False, device=device)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        d = self.head_dim
        q = self.q_proj(x).view(b, t, self.heads, d).transpose(1, 2)  # [B, NH, T, HD]
        k = self.k_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)  # [B, NKV, T, HD]
        v = self.v_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = self.heads // self.kv_heads
        if group > 1:  # query head h reads kv head h // group
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d) + mask  # [B, NH, T, T]
        a = torch.softmax(scores, dim=-1) @ v  # [B, NH, T, HD]
        return self.o_proj(a.transpose(1, 2).reshape(b, t, self.heads * d))


class Mlp(nn.Module):
    def __init__(self, c, device=None):
        super().__init__()
        self.gate_proj = nn.Linear(c["hidden"], c["intermediate"], bias=False, device=device)
        self.up_proj = nn.Linear(c["hidden"], c["intermediate"], bias=False, device=device)
        self.down_proj = nn.Linear(c["intermediate"], c["hidden"], bias=False, device=device)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, c, device=None):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden"], c["eps"], device)
        self.self_attn = Attention(c, device)
        self.post_attention_layernorm = RMSNorm(c["hidden"], c["eps"], device)
        self.mlp = Mlp(c, device)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(nn.Module):
    def __init__(self, c, device=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"], device=device)
        self.layers = nn.ModuleList(Block(c, device) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"], c["eps"], device)


def llama3_inv_freq(inv_freq, s):
    """Llama 3's scaling of the f32 inverse frequencies f (transformers' "llama3" rope type), in
    f32 with the operations in transformers' order: with the wavelength 2π/f and the pre-training
    context L, f is kept below L/high_freq_factor, divided by factor above L/low_freq_factor, and
    blended in between by s = (L/wavelength - low_freq_factor) / (high - low)."""
    old, factor = s["original_max_position_embeddings"], s["factor"]
    low, high = s["low_freq_factor"], s["high_freq_factor"]
    wavelength = 2 * math.pi / inv_freq
    blend = (old / wavelength - low) / (high - low)
    blended = (1 - blend) * inv_freq / factor + blend * inv_freq
    scaled = torch.where(wavelength > old / low, inv_freq / factor, blended)
    return torch.where(wavelength < old / high, inv_freq, scaled)


class LlamaForCausalLM(nn.Module):
    """HF's Llama maths, eager; `forward(tokens)` returns the mean next-token cross-entropy."""

    def __init__(self, c, device=None):
        super().__init__()
        self.config = c
        self.model = Backbone(c, device)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False, device=device)
        self.tie()

    def tie(self):
        """Makes the head the embedding matrix when the config ties them (again after
        `to_empty`, which gives each module its own new parameter)."""
        if self.config["tie"]:
            self.lm_head.weight = self.model.embed_tokens.weight

    def rope_tables(self, t, device):
        """cos, sin `[T, HD]` of the angles `pos * theta^(-2i/HD)`, halves repeated, in f32 as
        HF's LlamaRotaryEmbedding computes them (inverse frequencies, llama3-scaled if the config
        says so, angles, cos and sin)."""
        d = self.config["head_dim"]
        exponents = torch.arange(0, d, 2, dtype=torch.int64).to(torch.float32) / d
        inv_freq = 1.0 / (self.config["theta"] ** exponents)
        if self.config["rope_scaling"] is not None:
            inv_freq = llama3_inv_freq(inv_freq, self.config["rope_scaling"])
        angles = torch.outer(torch.arange(t, dtype=torch.float32), inv_freq)
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos().to(device), emb.sin().to(device)

    def forward(self, tokens, tables):
        cos, sin, mask = tables
        x = self.model.embed_tokens(tokens)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        logits = self.lm_head(self.model.norm(x))  # [B, T, V]
        v = logits.shape[-1]
        return F.cross_entropy(logits[:, :-1].reshape(-1, v), tokens[:, 1:].reshape(-1))


def load_model(folder, device):
    """Builds the model of `folder/config.json` with the weights of `folder` (model.safetensors or
    its shards). The parameters are made uninitialised (no random init to overwrite) and each
    tensor is copied in from its file a chunk at a time: no second copy of the weights."""
    c = read_config(os.path.join(folder, "config.json"))
    weights_path, stored = read_model_headers(folder)
    if c["tie"]:
        stored.pop("lm_head.weight", None)  # the head is the embedding
    for name in [n for n in stored if n.endswith("self_attn.rotary_emb.inv_freq")]:
        del stored[name]  # a buffer older HF checkpoints carry, not a parameter
    model = LlamaForCausalLM(c, device="meta")  # shapes only, no memory
    expected = {n: tuple(p.shape) for n, p in model.named_parameters()}
    for name, shape in expected.items():
        if name not in stored:
            raise InputError(f'"{weights_path}": tensor "{name}" is missing')
        if tuple(stored[name].shape) != shape:
            raise InputError(
                f'"{weights_path}": tensor "{name}" has shape {list(stored[name].shape)}, '
                f"expected {list(shape)}"
            )
    for name in stored:
        if name not in expected:
            raise InputError(
                f'"{weights_path}": unexpected tensor "{name}" (not part of this config)'
            )
    model = model.to_empty(device=device)
    model.tie()
    files = {}
    try:
        with torch.no_grad():
            for name, p in model.named_parameters():
                s = stored[name]
                if s.path not in files:
                    files[s.path] = open(s.path, "rb")
                copy_stored(files[s.path], s, p.data)
    except OSError as e:
        raise InputError(f"cannot read the weights: {e}") from e
    finally:
        for f in files.values():
            f.close()
    return model, c


def read_tokens(path, batch, seq_len, vocab):
    """`[B, T]` int64 token ids from a little-endian uint32 file of exactly B*T ids."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f'cannot read "{path}": {e}') from e
    want = batch * seq_len * 4
    if len(data) != want:
        raise InputError(
            f'"{path}": {len(data)} bytes, expected {want} ({batch} x {seq_len} uint32 token ids)'
        )
    ids = struct.unpack(f"<{batch * seq_len}I", data)
    for i, t in enumerate(ids):
        if t >= vocab:
            raise InputError(
                f'"{path}": token {t} at position {i} (byte offset {4 * i}) '
                f"is outside the vocabulary ({vocab})"
            )
    return torch.tensor(ids, dtype=torch.int64).view(batch, seq_len)


def sum_squares_f64(t):
    """Sum of the squares of `t`'s values in f64, CHUNK_BYTES of f32 at a time: no f64 copy of
    the tensor (2.1 GB for a 1B model's embedding gradient)."""
    flat = t.detach().reshape(-1)
    per = CHUNK_BYTES // 4
    total = 0.0
    for start in range(0, flat.numel(), per):
        part = flat[start : start + per].double()
        total += torch.dot(part, part).item()
    return total


def peak_rss_bytes():
    """This process's peak resident set (Linux reports ru_maxrss in KiB), or None."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except (ImportError, OSError):
        return None


def loaded_blas():
    """Paths of the BLAS/LAPACK libraries mapped into this process (Linux), for the report."""
    try:
        with open("/proc/self/maps", "r", encoding="utf-8") as f:
            paths = {line.split()[-1] for line in f if "blas" in line or "mkl" in line}
        return sorted(p for p in paths if p.startswith("/"))
    except OSError:
        return []


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="HF folder: config.json + model.safetensors")
    p.add_argument("--tokens", required=True, help="B*T little-endian uint32 token ids")
    p.add_argument("--batch", type=int, required=True, help="B: sequences per step")
    p.add_argument("--seq-len", type=int, required=True, help="T: tokens per sequence (>= 2)")
    p.add_argument("--steps", type=int, default=5, help="timed steps (default 5)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first (default 2)")
    p.add_argument("--lr", type=float, default=1e-3, help="constant learning rate (default 1e-3)")
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.95)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="0 disables clipping")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--threads", type=int, default=0, help="CPU threads (default: every core)")
    a = p.parse_args(argv)
    for name in ("batch", "steps"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be >= 1, found {getattr(a, name)}")
    if a.seq_len < 2:
        p.error(f"--seq-len must be >= 2, found {a.seq_len}")
    if a.warmup < 1:
        p.error(f"--warmup must be >= 1 (step 0 gives the gradient norms), found {a.warmup}")
    return a


def main(argv):
    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise InputError(f"--device cuda: this PyTorch {torch.__version__} sees no CUDA device")
    if args.device == "cpu":
        torch.set_num_threads(args.threads or os.cpu_count() or 1)
    # True fp32 everywhere: TF32 would change the maths being compared.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    model, c = load_model(args.model, device)
    tokens = read_tokens(args.tokens, args.batch, args.seq_len, c["vocab"]).to(device)
    cos, sin = model.rope_tables(args.seq_len, device)
    causal = torch.full((args.seq_len, args.seq_len), float("-inf"), device=device).triu(1)
    tables = (cos, sin, causal)
    params = list(model.parameters())
    opt = torch.optim.AdamW(
        params,
        lr=args.lr,
        betas=(args.beta1, args.beta2),
        eps=args.eps,
        weight_decay=args.weight_decay,
    )
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    losses, times_ms = [], []
    grad_norm0, grad_norms0 = None, None
    for step in range(args.warmup + args.steps):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, tables)
        loss.backward()
        if step == 0:
            # Per-tensor norms before clipping, summed in f64 a chunk at a time: PyTorch 1.13's
            # f32 norm of an 8M-element tensor can be off by 2e-4, more than the differences
            # being measured. Untimed (step 0 is a warm-up step).
            grad_norms0 = {
                n: math.sqrt(sum_squares_f64(p.grad)) for n, p in model.named_parameters()
            }
            grad_norm0 = math.sqrt(sum(v * v for v in grad_norms0.values()))
        if args.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(params, args.max_grad_norm)
        opt.step()
        loss_value = loss.item()  # waits for the step, like the engine's stats readback
        sync()
        elapsed = (time.perf_counter() - t0) * 1000
        if not math.isfinite(loss_value):
            raise InputError(f"step {step}: loss is {loss_value}")
        losses.append(loss_value)
        if step >= args.warmup:
            times_ms.append(elapsed)

    report = {
        "engine": "pytorch-eager",
        "version": torch.__version__,
        "device": args.device,
        "deviceName": torch.cuda.get_device_name(device) if args.device == "cuda" else "cpu",
        "threads": torch.get_num_threads(),
        "blas": loaded_blas(),
        "params": sum(p.numel() for p in params),
        "batch": args.batch,
        "seqLen": args.seq_len,
        "losses": losses,
        "gradNorm0": grad_norm0,
        "gradNorms0": grad_norms0,
        "stepMs": times_ms,
        "medianStepMs": statistics.median(times_ms),
    }
    peak = peak_rss_bytes()
    if peak:
        report["peakRssBytes"] = peak
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except InputError as e:
        sys.stderr.write(f"llama_step.py: {e}\n")
        sys.exit(1)
