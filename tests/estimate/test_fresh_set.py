"""The fresh referee set (benchmarks/data/fresh/, issue 21): published runs from sources that neither the
calibration set nor the held-out set used, collected after the held-out set had been looked at. Run by
`benchmarks/calibration.py --set fresh` like the other sets; nothing in the estimator is tuned on it, so these
tests check only that every row is a complete, sourced folder of user configs and that the set stays apart.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "calibration.py"
DATA = ROOT / "benchmarks" / "data"
SOURCE = re.compile(r"^([\w.-]+/[\w.-]+:[^@\s]+@[0-9a-f]{40}|https?://\S+)$")
METRICS = {"nvidia-smi", "reserved", "allocated", "active"}


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("calibration_bench_fresh", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


CAL = _load()
FRESH = CAL.load_rows(DATA, None, CAL.SETS["fresh"])
BY_ID = {row.id: row for row in FRESH}


def _publication(meta: dict) -> str:
    """repository:path (or URL) of a row's source, without the commit."""
    return str(meta.get("source", "")).split("@", 1)[0]


def test_the_fresh_set_is_apart_from_the_calibration_and_heldout_sets() -> None:
    others = [r for name in ("calibration", "heldout") for r in CAL.load_rows(DATA, None, CAL.SETS[name])]
    assert FRESH and not {r.id for r in others} & set(BY_ID)
    assert all(r.folder.parent.name == "fresh" for r in FRESH)
    used_sets = {CAL.source_of(r.meta) for r in others}
    used_publications = {_publication(r.meta) for r in others}
    fresh_sets = {CAL.source_of(r.meta) for r in FRESH}
    assert len(fresh_sets) >= 4 and not fresh_sets & used_sets
    assert not {_publication(r.meta) for r in FRESH} & used_publications
    assert len(FRESH) >= 30


@pytest.mark.parametrize("row_id", sorted(BY_ID))
def test_every_fresh_row_is_user_configs_with_measurement_source_and_quote(row_id: str) -> None:
    row = BY_ID[row_id]
    meta = row.meta
    launch = (row.folder / "launch.sh").read_text()
    assert (row.folder / "train.yaml").is_file() and (row.folder / row.hardware).is_file()
    train = yaml.safe_load((row.folder / "train.yaml").read_text())
    model = str(train.get("model_name_or_path") or train["base_model"])  # a TRL recipe or an axolotl config
    if model.startswith("./"):  # a model given by its config, as the source's own config file
        assert (row.folder / model / "config.json").is_file()
    if "accelerate" in launch:
        assert (row.folder / "accelerate.yaml").is_file()
        yaml.safe_load((row.folder / "accelerate.yaml").read_text())
    assert meta["grade"][0] in "ABC" and meta["outcome"] in {"fits", "oom", "unknown"}
    assert SOURCE.match(meta["source"]), meta["source"]
    assert meta.get("source_set") and meta.get("quote") and meta.get("translation")
    assert meta.get("memory") or meta.get("time") or meta["outcome"] == "oom"
    if meta.get("memory"):
        assert meta["memory"]["metric"] in METRICS and meta["memory"]["value_gib"] > 0
    if meta.get("time"):
        assert meta["time"].get("grade", meta["grade"])[0] in "ABC"
        assert CAL.measured_tokens_per_s(meta["time"], 1) > 0
    if meta.get("expressible") is False:  # the setting no config writes is named
        assert any("no HF" in s or "no config" in s for s in meta["translated_settings"])
    json.dumps(meta)


def test_the_set_flag_reads_only_the_fresh_folder(tmp_path: Path, capsys) -> None:
    for folder, rid in (("fresh", "F01"), ("heldout", "H01")):
        row = tmp_path / folder / rid
        row.mkdir(parents=True)
        (row / "launch.sh").write_text("#!/usr/bin/env bash\npython train.py train.yaml\n")
        (row / "train.yaml").write_text("model_name_or_path: nobody/no-such-model-7b\nmax_length: 512\n")
        (row / "hw.yaml").write_text("name: 1xA100\ngpus: {model: A100-SXM-80GB, count: 1}\nnvlink: []\n")
        meta = {
            "id": rid,
            "source_set": f"set of {rid}",
            "grade": "C",
            "outcome": "fits",
            "source": "https://example.org/x",
            "quote": "| x |",
            "memory": {"metric": "allocated", "value_gib": 10.0},
        }
        (row / "meta.json").write_text(json.dumps(meta))
    assert CAL.main(["--set", "fresh", "--data", str(tmp_path), "--in-process"]) == 0
    printed = capsys.readouterr().out
    assert "set: fresh (1 rows)" in printed and "set of F01" in printed and "set of H01" not in printed
