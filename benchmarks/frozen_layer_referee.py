"""Referee for advisor.estimate.memory.activations.frozen_layer_bytes: what a frozen Hugging Face decoder
layer keeps for backward when its input requires grad and nothing is checkpointed (the frozen layers above
the lowest trainable one under LLaMA-Factory's checkpointing, or BAdam's inactive blocks).

Builds the model from a config.json (random bf16 weights, CPU, SDPA, no autocast), freezes every parameter,
runs one decoder layer on an input that requires grad under torch.autograd.graph.saved_tensors_hooks, and
counts each saved storage once (parameters, the rotary cos/sin and the input itself excluded); then prints
the estimator's figure for the same shapes. Needs torch and transformers.

    python3 benchmarks/frozen_layer_referee.py path/to/config.json [--tokens 256]

torch 2.13 CPU, transformers 5.25: a Llama config (h 512, i 1408, 8 heads, 4 kv heads), 256 tokens: 15,656 B
per token measured, 15,648 estimated; Llama-3-8B's layer shapes (h 4096, i 14336, 32 heads, 8 kv heads), 128
tokens: 139,400 measured, 139,392 estimated.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def measured(config: str, tokens: int) -> float:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.from_pretrained(config)
    cfg._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(cfg).to(torch.bfloat16)
    model.requires_grad_(False)
    x = torch.randn(1, tokens, cfg.hidden_size, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(tokens)[None]
    emb = model.model.rotary_emb(x, pos)
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model.model.layers[min(1, cfg.num_hidden_layers - 1)](x, position_embeddings=emb, position_ids=pos)
    skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
    skip |= {t.untyped_storage().data_ptr() for t in emb} | {x.untyped_storage().data_ptr()}
    return sum(n for ptr, n in seen.items() if ptr not in skip) / tokens


def estimated(config: str, tokens: int) -> float:
    from advisor.estimate import resolve_model
    from advisor.estimate.memory import TrainingSetup
    from advisor.estimate.memory.activations import frozen_layer_bytes
    from advisor.estimate.memory.resolve import resolve_setup

    pc = resolve_model(config).count()
    s = TrainingSetup(
        model=pc,
        micro_batch=1,
        seq_len=tokens,
        storage_dtype="bf16",
        autocast="off",
        attn_implementation="sdpa",
        gradient_checkpointing=False,
    )
    return frozen_layer_bytes(resolve_setup(s))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--tokens", type=int, default=256)
    args = ap.parse_args()
    print(f"measured  {measured(args.config, args.tokens):,.0f} B per token")
    print(f"estimated {estimated(args.config, args.tokens):,.0f} B per token")


if __name__ == "__main__":
    main()
