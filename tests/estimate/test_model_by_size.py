"""Issue 21, model resolution offline: a model whose family no listed model has, named with a plain size
(``katanemo/Plano-Orchestrator-4B``), is estimated with the listed dense decoder nearest that size as a
stand-in, stated as an assumption; before, such runs got no estimate at all ("not found offline")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.estimate.models import _stand_ins, resolve_model
from advisor.estimate.size_match import match_size, size_in_params

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "stand_in"),
    [
        ("katanemo/Plano-Orchestrator-4B", "Qwen/Qwen3-4B"),
        ("acme/Nova-4.5B", "Qwen/Qwen3-4B"),  # 4.5B is within a name's rounding of 4.02B
        ("XiaomiMiMo/MiMo-7B-RL", "Qwen/Qwen2.5-7B"),  # a recent vocabulary, not Mistral-7B's 32k
        # within the rounding, the stand-in that shares the name's family tokens: not Devstral-Small
        ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistralai/Mistral-Small-24B-Base-2501"),
    ],
)
def test_an_unlisted_family_is_estimated_from_its_size(name: str, stand_in: str) -> None:
    info = resolve_model(name, from_name=True)
    assert info is not None and info.shapes_from == "size" and info.hub_id is None
    assert info.assumption is not None and info.assumption.startswith(f"assumed {stand_in}'s shapes")
    assert "--online" in info.assumption  # how to get the model's own shapes
    assert resolve_model(name) is None  # only a caller that states the assumption gets it


def test_a_size_far_from_the_stand_in_scales_its_depth() -> None:
    info = resolve_model("acme/Nova-5B", from_name=True)
    assert info is not None and info.shapes_from == "size"
    total = info.count().total
    assert abs(total / 5e9 - 1) < 0.05, total  # the weights follow the name's size
    assert "layers instead of its" in (info.assumption or "")


@pytest.mark.parametrize(
    "name",
    [
        "acme/Nova-30B-A3B",  # mixture of experts: total and active do not say the expert split
        "acme/Nova-8x7B",
        "acme/Nova-17B-16E",
        "acme/Nova-5000B",  # far beyond any listed model: not extrapolated
        "acme/Nova",  # no size
        "facebook/opt-2.7b",  # a listed family: its own shapes or nothing, never another family's
    ],
)
def test_what_a_size_cannot_stand_for_stays_unknown(name: str) -> None:
    assert resolve_model(name, from_name=True) is None


def test_sizes_and_stand_ins() -> None:
    assert size_in_params("4.5b") == 4_500_000_000 and size_in_params("135m") == 135_000_000
    assert size_in_params("30b-a3b") is None and size_in_params("8x7b") is None
    assert size_in_params(None) is None
    assert match_size(10**15, _stand_ins()) is None
    stand_ins = _stand_ins()
    assert stand_ins and all(not c[2].get("num_local_experts") for c in stand_ins)
    assert all(c[2]["vocab_size"] >= 100_000 for c in stand_ins)


def _check(root: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO), "HF_HUB_CACHE": str(root / ".hf")}
    env.pop("GITHUB_ACTIONS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "check", ".", "-H", "1xRTX4090", "--format", "json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_a_stand_in_that_does_not_fit_is_a_warning_not_an_error(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "sft.yaml").write_text(
        "model_name_or_path: acme/Nova-32B\nbf16: true\nper_device_train_batch_size: 1\nmax_length: 2048\n",
        encoding="utf-8",
    )
    report = _check(tmp_path)
    found = [f for f in report["findings"] if f["rule"] == "GA401"]
    assert len(found) == 1 and found[0]["severity"] == "warning", found
    assert "is likely to run out of memory" in found[0]["message"]
    notes = " ".join(report["runs"][0]["notes"])
    assert "assumed Qwen/" in notes and "32B" in notes
