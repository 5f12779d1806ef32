"""Files passed one by one (as pre-commit passes them) are seeds: their whole runs are checked."""

from __future__ import annotations

from pathlib import Path

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files

PROJECT = {
    "pyproject.toml": '[project]\nname = "p"\n\n[tool.gpu-advise]\n[[tool.gpu-advise.runs]]\n'
    'path = "scripts/launch.sh"\neffective-batch = 16\n',
    "scripts/launch.sh": "#!/bin/bash\naccelerate launch --config_file configs/acc.yaml --num_processes 4 "
    "train.py configs/train.yaml\n",
    "scripts/other.sh": "#!/bin/bash\necho 'nothing to do with configs/train.yaml'\npython other.py\n",
    "train.py": "print('t')\n",
    "configs/acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 4\n",
    "configs/train.yaml": "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n"
    "deepspeed: configs/ds.json\n",
    "configs/ds.json": '{\n  "train_micro_batch_size_per_gpu": "auto",\n'
    '  "zero_optimization": {"stage": 2}\n}\n',
    "configs/unrelated.yaml": "output_dir: other\nper_device_train_batch_size: 1\n",
}


def _runs(root: Path, monkeypatch, *paths: str) -> tuple[list[str], list[str], list[str]]:
    monkeypatch.chdir(root)
    result = run_check([Path(p) for p in paths], CheckOptions(select=["GA101"]))
    assert not result.errors, result.errors
    docs = sorted(Path(d.path).as_posix() for d in result.documents)
    return [r.name for r in result.runs], [f.rule for f in result.findings], docs


def test_a_config_file_alone_is_checked_with_its_launch_script(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, PROJECT)
    runs, rules, docs = _runs(tmp_path, monkeypatch, "configs/train.yaml")
    assert runs == ["scripts/launch.sh"]
    assert rules == ["GA101"]  # 2 x 8 x 4 processes = 64, tuned for 16: needs the launch script
    assert "scripts/other.sh" not in docs  # it names the file in text only: not part of any run


def test_a_nested_config_reaches_the_launch_script_transitively(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, PROJECT)
    assert _runs(tmp_path, monkeypatch, "configs/ds.json")[0] == ["scripts/launch.sh"]
    assert _runs(tmp_path, monkeypatch, "configs/acc.yaml")[0] == ["scripts/launch.sh"]


def test_same_result_whatever_the_slicing(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, PROJECT)
    together = _runs(tmp_path, monkeypatch, "configs/train.yaml", "configs/ds.json", "scripts/launch.sh")
    assert together[0] == ["scripts/launch.sh"] and together[1] == ["GA101"]
    assert _runs(tmp_path, monkeypatch, "configs/ds.json")[1] == ["GA101"]


def test_a_config_no_script_names_stays_its_own_run(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, PROJECT)
    runs, _, docs = _runs(tmp_path, monkeypatch, "configs/unrelated.yaml")
    assert runs == ["configs/unrelated.yaml"]
    assert docs == ["configs/unrelated.yaml"]


def test_running_from_a_subfolder_searches_the_project_root(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, PROJECT)
    runs, rules, _ = _runs(tmp_path / "configs", monkeypatch, "train.yaml")
    assert runs == ["../scripts/launch.sh"] and rules == ["GA101"]
