"""A YAML or JSON file whose top level is a list and that nothing names is no config (a dataset such as
alpaca_data.json's records, HF repos' docs/source/_toctree.yml, found in huggingface/trl): it used to be a
GA001 error (JSON) or warning (YAML). Named by a launch as a DeepSpeed or accelerate config, it is still
refused."""

from __future__ import annotations

from pathlib import Path

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project

DATASET = '[{"instruction": "Give three tips.", "input": "", "output": "1. Eat well."}]\n'
TOCTREE = "- sections:\n  - local: index\n    title: TRL\n  - local: installation\n    title: Installation\n"


def _findings() -> list[tuple[str, str, str]]:
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    return sorted((f.rule, str(f.location.file), f.message) for f in result.findings)


def test_unnamed_lists_are_not_configs(tmp_path, monkeypatch):
    git_project(
        tmp_path, {"data/alpaca_data.json": DATASET, "docs/source/_toctree.yml": TOCTREE}, monkeypatch
    )
    assert _findings() == []


def test_named_lists_are_refused(tmp_path, monkeypatch):
    git_project(
        tmp_path,
        {
            "ds.json": '[{"zero_optimization": {"stage": 3}}]\n',
            "acc.yaml": "- distributed_type: MULTI_GPU\n",
            "run.sh": "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py\n"
            "deepspeed --num_gpus 2 train.py --deepspeed ds.json\n",
            "train.py": "print('train')\n",
        },
        monkeypatch,
    )
    found = [f for f in _findings() if f[0] == "GA001"]
    assert found == [
        (
            "GA001",
            "acc.yaml",
            "named as an accelerate config, but its top level is a list, not a mapping; not judged",
        ),
        (
            "GA001",
            "ds.json",
            "named as a DeepSpeed config, but its top level is a list, not a mapping; not judged",
        ),
    ]
