"""Cases from a field trial on repositories in no corpus (Firefly, SimPO): each config below is a
hand-written copy of the upstream form, not the upstream file."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project


def _findings(codes: set[str]) -> list[tuple[str, str, int]]:
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    return sorted((f.rule, str(f.location.file), f.location.line) for f in result.findings if f.rule in codes)


# Firefly's train_args/*.json set `"optim": "adamw_hf"` and pin transformers==4.34: OptimizerNames has
# ADAMW_HF through 4.49.0 (training_args.py:148) and not in 4.50.0, so it is a removed value, judged
# by the pinned release, never a type error.
ADAMW_HF = '{\n  "output_dir": "out",\n  "optim": "adamw_hf",\n  "learning_rate": 1e-5\n}\n'


@pytest.mark.parametrize("pin", ["transformers==4.34\n", "transformers==4.49.0\n"])
def test_adamw_hf_accepted_by_a_release_before_4_50(tmp_path, monkeypatch, pin):
    git_project(tmp_path, {"requirements.txt": pin, "args.json": ADAMW_HF}, monkeypatch)
    assert _findings({"GA001", "GA005"}) == []


@pytest.mark.parametrize("pin", ["transformers==4.50.0\n", "transformers==4.57.1\n", None])
def test_adamw_hf_removed_from_4_50_is_a_warning(tmp_path, monkeypatch, pin):
    files = {"args.json": ADAMW_HF} | ({"requirements.txt": pin} if pin else {})
    git_project(tmp_path, files, monkeypatch)
    assert _findings({"GA001", "GA005"}) == [("GA005", "args.json", 3)]
