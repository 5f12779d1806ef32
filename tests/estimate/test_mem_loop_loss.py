"""A training loop of its own computing the cross-entropy itself on the model's 16-bit logits holds no fp32
copy of them (advisor/facts/loop_loss.py): the loss chain is the logits, their flattened copy, log_softmax's
output and the loss backward's gradients, in the logits' dtype. Referee (fake CPU tensors, bf16 logits 4096 x
32000, the CE below): backward peak 6.28 B per token x vocab (8.28 with Gemma 2's tanh softcapping), against
the 6 (8) counted; HF's loss with its fp32 upcast is 12 (14). The model called with labels= keeps HF's loss,
and transformers <= 4.44 hands back fp32 logits (logits.float() in the causal-LM forward)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from tests.conftest import write_files

runner = CliRunner()

_LOOP = """import sys

import torch
import yaml
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def main(cfg):
    model = AutoModelForCausalLM.from_pretrained(cfg["model_name_or_path"], torch_dtype=torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    criterion = torch.nn.CrossEntropyLoss(ignore_index=-100)
    for batch in train_dataloader:
        logits = model({call}).logits
        loss = criterion(logits[:, :-1, :].reshape(-1, logits.size(-1)), batch["labels"][:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


with open(sys.argv[1]) as f:
    main(yaml.safe_load(f))
"""
_RECIPE = "model_name_or_path: meta-llama/Llama-3.1-8B\nper_device_train_batch_size: 1\nmax_length: 4096\n"


def _logits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, pins: str = "") -> dict:
    files = {
        "launch.sh": "#!/bin/bash\npython train.py sft.yaml\n",
        "sft.yaml": _RECIPE,
        "train.py": _LOOP.replace("{call}", call),
    }
    if pins:
        files["requirements.txt"] = pins
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", "launch.sh", "-H", "1xH100", "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    return next(b for b in run["breakdown"] if b["name"] == "logits + loss") | {
        "assumptions": run["assumptions"]
    }


def test_the_loops_own_cross_entropy_on_bf16_logits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = _logits(tmp_path / "own", monkeypatch, 'input_ids=batch["input_ids"]')
    hf = _logits(tmp_path / "hf", monkeypatch, 'input_ids=batch["input_ids"], labels=batch["labels"]')
    tokens_vocab = 4096 * 128256 / 2**30
    assert own["gib"] == pytest.approx(6 * tokens_vocab, rel=0.01)
    assert "the loop's own cross-entropy: 6 B" in own["note"]
    assert any("computes the cross-entropy itself" in a for a in own["assumptions"])
    assert hf["gib"] == pytest.approx(12 * tokens_vocab, rel=0.01)  # labels passed: HF's fp32-upcast loss


def test_fp32_logits_before_transformers_4_45(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _logits(tmp_path, monkeypatch, 'input_ids=batch["input_ids"]', pins="transformers==4.44.2\n")
    assert "the loop's own cross-entropy: 12 B" in old["note"]  # 4-byte logits x 3
