"""The held-out set (benchmarks/data/heldout/, issue 21): rows from sources the estimator was never calibrated
on, run by `benchmarks/calibration.py --set heldout` the same way as the calibration rows and kept out of the
default headline. Every row is a folder of user configs with its measurement, its source and the table cell it
comes from; the per-source table groups rows by their publication.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "calibration.py"
DATA = ROOT / "benchmarks" / "data"
SOURCE = re.compile(r"^([\w.-]+/[\w.-]+:[^@\s]+@[0-9a-f]{40}|https?://\S+)$")


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("calibration_bench_heldout", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


CAL = _load()
HELDOUT = CAL.load_rows(DATA, None, CAL.SETS["heldout"])
BY_ID = {row.id: row for row in HELDOUT}


def test_the_heldout_set_is_apart_from_the_calibration_set() -> None:
    calibration = {r.id for r in CAL.load_rows(DATA, None, CAL.SETS["calibration"])}
    assert HELDOUT and not calibration & set(BY_ID)
    assert all(r.folder.parent.name == "heldout" for r in HELDOUT)
    sources = {CAL.source_of(r.meta) for r in HELDOUT}
    assert len(sources) >= 6
    assert sum(1 for r in HELDOUT if r.meta.get("memory")) >= 30
    assert sum(1 for r in HELDOUT if r.meta.get("time")) >= 20


@pytest.mark.parametrize("row_id", sorted(BY_ID))
def test_every_heldout_row_is_user_configs_with_measurement_source_and_quote(row_id: str) -> None:
    row = BY_ID[row_id]
    meta = row.meta
    assert (row.folder / "launch.sh").is_file() and (row.folder / "train.yaml").is_file()
    assert (row.folder / row.hardware).is_file()
    if "accelerate" in (row.folder / "launch.sh").read_text():
        assert (row.folder / "accelerate.yaml").is_file()
    assert meta["grade"][0] in "ABC" and meta["outcome"] in {"fits", "oom", "unknown"}
    assert SOURCE.match(meta["source"]), meta["source"]
    assert meta.get("source_set") and meta.get("quote")
    assert meta.get("memory") or meta.get("time") or meta["outcome"] == "oom"
    if meta.get("time"):
        assert meta["time"].get("grade", meta["grade"])[0] in "ABC"
    json.dumps(meta)


def test_the_set_flag_runs_only_the_heldout_rows_and_prints_them_per_source(tmp_path: Path, capsys) -> None:
    row = tmp_path / "heldout" / "X01"
    row.mkdir(parents=True)
    (row / "launch.sh").write_text("#!/usr/bin/env bash\npython train.py train.yaml\n")
    (row / "train.yaml").write_text("model_name_or_path: nobody/no-such-model\nmax_length: 512\n")
    (row / "hw.yaml").write_text("name: 1xA100\ngpus: {model: A100-SXM-80GB, count: 1}\nnvlink: []\n")
    meta = {
        "id": "X01",
        "source_set": "a paper",
        "grade": "C",
        "outcome": "fits",
        "source": "https://example.org/x",
        "quote": "| x | 1000 |",
        "time": {"metric": "tokens_per_s", "value": 1000, "scope": "global", "grade": "B"},
    }
    (row / "meta.json").write_text(json.dumps(meta))
    (tmp_path / "memory").mkdir()
    out = tmp_path / "out.json"
    assert CAL.main(["--set", "heldout", "--data", str(tmp_path), "--in-process", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "set: heldout (1 rows)" in printed and "per source" in printed and "a paper" in printed
    doc = json.loads(out.read_text())
    assert doc["set"] == "heldout" and doc["headline"]["per_source"]["a paper"]["rows"] == 1
    assert doc["headline"]["per_source"]["a paper"]["throughput_unanswered"] == "1/1"
    assert doc["rows"][0]["time_grade"] == "B"
    assert CAL.main(["--data", str(tmp_path), "--in-process"]) == 0  # the default set does not read heldout/
    assert "set: calibration (0 rows)" in capsys.readouterr().out


def test_a_row_without_source_set_is_grouped_by_its_source_without_the_commit() -> None:
    assert CAL.source_of({"source": "owner/repo:README.md@" + "0" * 40}) == "owner/repo:README.md"
    assert CAL.source_of({"source_set": "litgpt config_hub", "source": "x"}) == "litgpt config_hub"
    run = "huggingface/peft:method_comparison/MetaMathQA/results/lora--llama-3.2-3B-rank32.json@" + "1" * 40
    assert CAL.source_of({"source": run}) == "huggingface/peft:method_comparison/MetaMathQA/results"


def test_unanswered_rows_are_grouped_by_cause_with_the_names_folded() -> None:
    def res(rid: str, reason: str) -> object:
        return CAL.Result(id=rid, grade="B", expressible=True, translated=False, reason=reason)

    causes = CAL.unanswered_by_cause(
        [
            res("A", "model 'x/a' not found offline"),
            res("B", "optimizer 'galore_adamw' has no memory profile"),
            res("C", "model 'y/b' not found offline"),
        ]
    )
    assert causes == {
        "model '...' not found offline": ["A", "C"],
        "optimizer '...' has no memory profile": ["B"],
    }
