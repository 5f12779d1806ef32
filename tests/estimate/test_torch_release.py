"""What the torch pin and the script's model head change in the estimate (advisor/facts/torch_release.py):
the HF performance guide's run (2022: torch 1.10, AutoModelForSequenceClassification) was estimated as a
causal LM on today's torch, with vocabulary logits it never computes, no gradients at the next step's backward
start (the Trainer's model.zero_grad() kept them before torch 2.0) and a lazily loaded CUDA context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.estimate import TrainingSetup, resolve_model
from advisor.estimate.timing import flops_per_token
from tests.conftest import write_files

runner = CliRunner()

_SCRIPT = """import sys

import yaml
from transformers import {cls}, Trainer, TrainingArguments

with open(sys.argv[1]) as f:
    settings = yaml.safe_load(f)
fields = TrainingArguments.__dataclass_fields__
args = TrainingArguments(**{{k: v for k, v in settings.items() if k in fields}})
model = {cls}.from_pretrained("bert-large-uncased").to("cuda")
Trainer(model=model, args=args, train_dataset=ds).train()
"""
_ARGS = (
    "model_name_or_path: google-bert/bert-large-uncased\ntorch_dtype: float32\n"
    "per_device_train_batch_size: 4\nmax_length: 512\noutput_dir: out\n"
)


def _run(root: Path, monkeypatch: pytest.MonkeyPatch, cls: str, pins: str | None) -> dict:
    files = {
        "launch.sh": "#!/bin/bash\npython train.py args.yaml\n",
        "args.yaml": _ARGS,
        "train.py": _SCRIPT.format(cls=cls),
    }
    if pins is not None:
        files["requirements.txt"] = pins
    write_files(root, files)
    monkeypatch.chdir(root)
    result = runner.invoke(app, ["estimate", "launch.sh", "-H", "1xT4", "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    return {b["name"]: b["gib"] for b in run["breakdown"]} | {"assumptions": " ".join(run["assumptions"])}


def test_a_classification_head_has_no_vocabulary_logits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = _run(tmp_path / "cls", monkeypatch, "AutoModelForSequenceClassification", None)
    mlm = _run(tmp_path / "mlm", monkeypatch, "AutoModelForMaskedLM", None)
    assert "a classification head (train.py:10 AutoModelForSequenceClassification" in head["assumptions"]
    assert head["logits + loss"] < 0.2 < mlm["logits + loss"]  # 4 x 512 tokens x 30522 fp32, upcast: ~0.7


def test_torch_below_2_keeps_the_gradients_and_below_1_13_loads_every_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = "AutoModelForSequenceClassification"
    old = _run(tmp_path / "old", monkeypatch, cls, "torch==1.10.1\n")
    mid = _run(tmp_path / "mid", monkeypatch, cls, "torch==1.13.1\n")
    new = _run(tmp_path / "new", monkeypatch, cls, "torch>=2.1\n")
    grads = 335_141_888 * 4 / 2**30
    assert old.get("gradients") == pytest.approx(grads, rel=0.01)  # live at the next backward start
    assert mid.get("gradients") == pytest.approx(grads, rel=0.01)
    assert "gradients" not in new  # set_to_none=True: freed after the step
    assert old["CUDA context"] == 1.0 and mid["CUDA context"] == new["CUDA context"] == 0.5
    assert "torch pinned below 2.0" in old["assumptions"] and "torch pinned below 1.13" in old["assumptions"]
    assert "torch pinned" not in new["assumptions"]


def test_an_encoder_attends_both_ways_whatever_its_head() -> None:
    bert = resolve_model("google-bert/bert-large-uncased")
    assert bert is not None
    pc = bert.count()
    causal = TrainingSetup(model=pc, method="full", micro_batch=1, seq_len=512, task="causal_lm")
    attention = 3 * 4 * pc.attention_layers * pc.q_dim * 512  # forward + backward, both directions
    both = flops_per_token(causal)
    assert both - flops_per_token(causal, attention_span=0) == pytest.approx(attention, rel=1e-6)
