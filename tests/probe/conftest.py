from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import write_files

# Llama-style, tiny: hidden 64, 2 layers, vocab 256 (grouped-query attention: 4 heads, 2 KV heads)
TINY_CONFIG = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 128,
    "tie_word_embeddings": False,
    "rms_norm_eps": 1e-6,
}
SEQ = 32

needs_torch = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "transformers", "accelerate", "peft")),
    reason="the verify extra (torch, transformers, accelerate, peft) is not installed",
)


def tiny_project(root: Path, launch: str, train: str, extra: dict[str, str] | None = None) -> Path:
    files = {
        "tiny/config.json": json.dumps(TINY_CONFIG),
        "launch.sh": f"#!/bin/bash\n{launch}\n",
        "train.yaml": train,
        "train.py": "print('the user script: never run by the probe')\n",
        **(extra or {}),
    }
    write_files(root, files)
    return root
