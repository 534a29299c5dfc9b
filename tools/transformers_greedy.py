#!/usr/bin/env python3
"""Greedy tokens of Hugging Face `transformers` on a checkpoint folder: the expectation that
`deno task generate`'s greedy output is held to (generate/transformers_parity_test.ts).

Loads DIR (config.json + model.safetensors, as `deno task train` and
generate/testing/parity_checkpoint.ts write it) with `LlamaForCausalLM` in float32 on the CPU,
generates `--max-new-tokens` tokens greedily after `--prompt-ids` with `model.generate`
(do_sample=False, num_beams=1, the KV cache on), checks them against a plain argmax loop that
re-reads the whole sequence for every token, and writes one JSON object:

    {"produced_by": "tools/transformers_greedy.py", "versions": {...},
     "files": {"config.json": SHA256, "model.safetensors": SHA256},
     "prompt_ids": [...], "max_new_tokens": N, "generated_ids": [...],
     "min_top2_margin": X}

`min_top2_margin` is the smallest gap between the best and second-best logit over the steps: a
gap near float32 rounding would make any comparison of greedy tokens luck, so below 1e-3 the
script refuses (exit 1) rather than store a fragile expectation.

Usage (the expectation committed with this project is produced this way):

    deno run -A generate/testing/parity_checkpoint.ts /tmp/psyche-parity
    python3 tools/transformers_greedy.py --model /tmp/psyche-parity \\
        --prompt-ids 10,10,84,104,101 --max-new-tokens 24 \\
        --out generate/testdata/transformers_greedy.json

Needs Python 3.8+, PyTorch and transformers (any version with Llama and `head_dim`; 4.45 or
later). Exit status: 0 written, 1 the tokens cannot be trusted (the two greedy loops disagree,
or a margin is too small), 2 bad command line, 3 torch or transformers missing.
"""

import argparse
import hashlib
import json
import os
import sys

try:
    import torch
    import transformers
    from transformers import LlamaForCausalLM
except ImportError as _e:
    sys.stderr.write(f"transformers_greedy.py: {_e} (pip install torch transformers)\n")
    sys.exit(3)

# Weights are f32; keep every matmul in true f32 (no TF32 on GPUs, which this runs without).
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

MIN_MARGIN = 1e-3


def sha256_file(path):
    """SHA-256 of a file, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def parse_ids(text):
    """'10,10,84' -> [10, 10, 84]."""
    try:
        ids = [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"--prompt-ids: {e}") from e
    if not ids or any(i < 0 for i in ids):
        raise argparse.ArgumentTypeError("--prompt-ids must list token ids >= 0, comma-separated")
    return ids


def greedy_without_cache(model, prompt_ids, n):
    """Argmax of the last position's logits, re-reading the whole sequence each step."""
    seq = list(prompt_ids)
    margins = []
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([seq])).logits[0, -1].double()
            top = torch.topk(logits, 2)
            margins.append(float(top.values[0] - top.values[1]))
            seq.append(int(top.indices[0]))
    return seq[len(prompt_ids):], margins


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="checkpoint folder")
    parser.add_argument("--prompt-ids", required=True, type=parse_ids, help="e.g. 10,10,84")
    parser.add_argument("--max-new-tokens", required=True, type=int)
    parser.add_argument("--out", help="JSON file to write (default: stdout)")
    args = parser.parse_args()
    if args.max_new_tokens < 1:
        parser.error("--max-new-tokens must be >= 1")

    model = LlamaForCausalLM.from_pretrained(args.model, torch_dtype=torch.float32)
    model.eval()
    vocab = model.config.vocab_size
    if any(i >= vocab for i in args.prompt_ids):
        parser.error(f"--prompt-ids holds an id >= vocab_size {vocab}")

    prompt = torch.tensor([args.prompt_ids])
    with torch.no_grad():
        out = model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            do_sample=False,
            num_beams=1,
            max_new_tokens=args.max_new_tokens,
            pad_token_id=0,
            use_cache=True,
        )
    generated = [int(t) for t in out[0, prompt.shape[1]:]]

    plain, margins = greedy_without_cache(model, args.prompt_ids, len(generated))
    if plain != generated:
        sys.stderr.write(
            f"transformers_greedy.py: generate() gave {generated}, the plain argmax loop {plain}\n"
        )
        sys.exit(1)
    if len(generated) != args.max_new_tokens:
        sys.stderr.write(
            f"transformers_greedy.py: generate() stopped after {len(generated)} tokens "
            "(the checkpoint names an eos_token_id?)\n"
        )
        sys.exit(1)
    if min(margins) < MIN_MARGIN:
        sys.stderr.write(
            f"transformers_greedy.py: a top-2 logit gap of {min(margins):.2e} is too close to "
            "call; use another prompt or checkpoint\n"
        )
        sys.exit(1)

    files = {}
    for name in ("config.json", "model.safetensors"):
        path = os.path.join(args.model, name)
        if os.path.exists(path):
            files[name] = sha256_file(path)
    record = {
        "produced_by": "tools/transformers_greedy.py",
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "files": files,
        "prompt_ids": args.prompt_ids,
        "max_new_tokens": args.max_new_tokens,
        "generated_ids": generated,
        "min_top2_margin": min(margins),
    }
    text = json.dumps(record, indent=2) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
