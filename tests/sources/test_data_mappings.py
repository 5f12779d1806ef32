"""Mappings that are data, not configs, found checking pytorch/torchtune and Lightning-AI/litgpt whole: a
tokenizer vocab.json (tokens to ids, "stage" and "dataset" among them: read as a LLaMA-Factory config, 58
GA001/GA002 errors and a GA104), a tokenizer_config.json (chat_template, eos_token, pad_token: a TRL config
whose 31-digit model_max_length was a GA001 error), a .devcontainer/devcontainer.json (JSONC: 15 GA001
comment warnings). Each is a hand-written stand-in of that form."""

from __future__ import annotations

import json
import string
from pathlib import Path

from advisor.pipeline.check import CheckOptions, run_check
from advisor.sources.classify import classify_mapping
from tests.conftest import git_project

VOCAB = {**{c: i for i, c in enumerate(string.printable)}, "stage": 2140, "dataset": 2209, "optim": 1968}
TOKENIZER_CONFIG = {
    "add_bos_token": True,
    "added_tokens_decoder": {"0": {"content": "<pad>", "special": True}},
    "bos_token": "<bos>",
    "chat_template": "{{ bos_token }}",
    "eos_token": "<eos>",
    "model_max_length": 1000000000000000019884624838656,
    "pad_token": "<pad>",
    "tokenizer_class": "GemmaTokenizer",
}
DEVCONTAINER = '{\n  // the image\n  "name": "litgpt",\n  "image": "python:3.11"\n}\n'
LLAMAFACTORY = {
    "model_name_or_path": "Qwen/Qwen2.5-7B",
    "stage": "sft",
    "do_train": True,
    "finetuning_type": "lora",
    "lora_target": "all",
    "dataset": "alpaca_en_demo",
    "template": "qwen",
    "cutoff_len": 2048,
    "output_dir": "saves/qwen",
    "per_device_train_batch_size": 1,
}


def test_data_mappings_are_not_training_configs():
    assert classify_mapping(VOCAB, "json") == "unknown"
    assert classify_mapping(TOKENIZER_CONFIG, "json") == "unknown"


def test_training_configs_still_are():
    assert classify_mapping(LLAMAFACTORY, "yaml") == "training_args"
    assert classify_mapping({"output_dir": "out", "learning_rate": 1e-5}, "yaml") == "training_args"


def test_none_of_them_is_reported(tmp_path, monkeypatch):
    files = {
        "tests/assets/vocab.json": json.dumps(VOCAB),
        "tests/assets/tokenizer_config.json": json.dumps(TOKENIZER_CONFIG),
        ".devcontainer/devcontainer.json": DEVCONTAINER,
    }
    git_project(tmp_path, files, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert not result.errors, result.errors
    assert [(f.rule, str(f.location.file)) for f in result.findings] == []


def test_a_deepspeed_json_with_a_comment_is_still_reported(tmp_path, monkeypatch):
    ds = '{\n  // ZeRO-2\n  "zero_optimization": {"stage": 2},\n  "train_batch_size": "auto"\n}\n'
    git_project(tmp_path, {"ds.json": ds}, monkeypatch)
    result = run_check([Path(".")], CheckOptions())
    assert ("GA001", "ds.json", 2) in [
        (f.rule, str(f.location.file), f.location.line) for f in result.findings
    ]
