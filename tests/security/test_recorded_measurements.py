"""Issue 17 items 17 and 9: `.gpu-advise-verify.json` is data a pull request may have committed.

Before: an entry without a `digest` was never stale, so a committed file replaced the run's GA101 with
GA701 whatever the run's files said; a wrongly shaped file (`[1]`, a list for `measured`, a string for
`world_size`, an unhashable name) ended in an internal error (exit 3). Now an entry applies only with
the digest of the run's files, and a file of the wrong shape is one line naming file:line:col (exit 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings
from advisor.pipeline.probe.spec import run_digest
from tests.conftest import REPO
from tests.probe.conftest import tiny_project

RECORDED = ".gpu-advise-verify.json"
LAUNCH = "torchrun --nproc_per_node 2 train.py train.yaml"
TRAIN = (
    "model_name_or_path: ./tiny\noutput_dir: out\nper_device_train_batch_size: 2\n"
    "gradient_accumulation_steps: 2\n"
)
# the gate's baseline says 16 samples per step; the files say 2 x 2 x 2 = 8: GA101
SETTINGS = '[[runs]]\npath = "launch.sh"\neffective-batch = 16\n'
MEASURED = {"world_size": 4, "effective_batch": 16}  # what would refute that GA101


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    env.pop("GITHUB_ACTIONS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "advisor.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture
def project(tmp_path: Path) -> Path:
    tiny_project(tmp_path, LAUNCH, TRAIN, extra={".gpu-advise.toml": SETTINGS})
    (tmp_path / ".git").mkdir()
    return tmp_path


def _digest(root: Path) -> str:
    options = CheckOptions()
    plans, _ = build_plans([root], options, resolve_settings([root], options))
    return run_digest(plans[0])


def _record(root: Path, **entry: object) -> None:
    run = {"name": "launch.sh", "status": "ok", "measured": MEASURED, **entry}
    (root / RECORDED).write_text(json.dumps({"version": 1, "runs": [run]}), encoding="utf-8")


def _rules(proc: subprocess.CompletedProcess[str]) -> set[str]:
    return {f["rule"] for f in json.loads(proc.stdout)["findings"]}


def test_without_a_recorded_file_the_gate_reports_ga101(project: Path) -> None:
    assert "GA101" in _rules(_run(["check", "--format", "json", "."], project))


def test_an_entry_with_the_runs_digest_is_applied(project: Path) -> None:
    """The measurement does count when it was taken of these files: GA101 refuted by it."""
    _record(project, digest=_digest(project))
    proc = _run(["check", "--format", "json", "."], project)
    assert "GA101" not in _rules(proc)


@pytest.mark.parametrize(
    ("digest", "says"),
    [(None, "without a digest"), ("", "invalid digest"), (7, "invalid digest"), ("0" * 64, "invalid digest")],
    ids=["missing", "empty", "a-number", "wrong-length"],
)
def test_an_entry_without_a_valid_digest_is_stale(project: Path, digest: object, says: str) -> None:
    _record(project, **({} if digest is None else {"digest": digest}))
    proc = _run(["check", "--format", "json", "."], project)
    assert proc.returncode == 1
    assert _rules(proc) >= {"GA101"} and "GA701" not in _rules(proc)
    text = _run(["check", "."], project)
    assert "verify launch.sh: stale (recorded)" in text.stdout and says in text.stdout


def test_an_entry_recorded_before_the_files_changed_is_stale(project: Path) -> None:
    _record(project, digest=_digest(project))
    (project / "train.yaml").write_text(TRAIN + "learning_rate: 0.0001\n", encoding="utf-8")
    proc = _run(["check", "."], project)
    assert "GA101" in proc.stdout and "before the run's files changed" in proc.stdout


SHAPES = {
    "a-list": ("[1]", "1:1", "expected an object"),
    "runs-an-object": ('{"runs": {"a": 1}}', "1:10", "runs: expected a list"),
    "name-a-list": ('{"runs": [{"name": ["x"]}]}', "1:20", "runs[0].name: expected a string"),
    "measured-a-list": ('{"runs": [{"name": "launch.sh", "measured": [1, 2]}]}', "1:45", "runs[0].measured"),
    "world-size-a-string": (
        '{"runs": [\n {"name": "launch.sh", "measured": {"world_size": "abc"}}]}',
        "2:51",
        "runs[0].measured.world_size: expected a whole number",
    ),
    "world-size-5000-digits": (
        '{"runs": [{"name": "launch.sh", "measured": {"world_size": ' + "9" * 5000 + "}}]}",
        "1:60",
        "5000 digits",
    ),
    "seconds-negative": (
        '{"runs": [{"name": "launch.sh", "measured": {"seconds_per_step": -1}}]}',
        "1:66",
        "seconds_per_step: expected a number",
    ),
    "scaling-a-number": ('{"runs": [{"name": "launch.sh", "scaling": 5}]}', "1:44", "runs[0].scaling"),
    "single-a-list": (
        '{"runs": [{"name": "launch.sh", "scaling": {"single": []}}]}',
        "1:55",
        "runs[0].scaling.single: expected an object",
    ),
    "device-a-string": ('{"device": "gpu", "runs": []}', "1:12", "device: expected an object"),
    "devices-names": ('{"device": {"devices": [{"name": 3}]}}', "1:34", "device.devices[0].name"),
    "version": ('{"version": 2, "runs": []}', "1:13", "version 2 is not supported"),
    "not-json": ('{"runs": [', "1:11", "not valid recorded measurements"),
}


@pytest.mark.parametrize(("text", "where", "says"), list(SHAPES.values()), ids=list(SHAPES))
def test_a_wrongly_shaped_file_is_one_line_naming_file_and_line(
    project: Path, text: str, where: str, says: str
) -> None:
    (project / RECORDED).write_text(text, encoding="utf-8")
    proc = _run(["check", "."], project)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"gpu-advise: {RECORDED}:{where}: "), proc.stderr
    assert says in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("kind", ["folder", "dangling-link"])
def test_something_other_than_a_file_at_the_name_is_said(project: Path, kind: str) -> None:
    """It was silently taken for "nothing recorded"; the reader now names it."""
    if kind == "folder":
        (project / RECORDED).mkdir()
    else:
        (project / RECORDED).symlink_to(project / "missing.json")
    proc = _run(["check", "."], project)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"gpu-advise: {RECORDED}: cannot read recorded measurements"), proc.stderr
