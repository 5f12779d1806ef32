"""The base revision's policy on a pull request (issue 17, "Policy from the pull request"), played with
real git: an upstream repository, a clone, a branch whose commit is the pull request, and the CLI as the
workflow runs it (`gpu-advise check --base origin/main`).

main: a config tuned on one GPU, launched on one. Every pull request here launches it on four GPUs (GA101,
a warning that fails the gate) and tries to silence that through a file it controls. Each attempt must be
reported at the file and line that makes it (GA801-GA804, errors), and under --policy-from-base the base's
policy must govern, so GA101 is reported again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_files
from tests.gate.conftest import git, needs_git

pytestmark = needs_git

RULE = """code: GA950
name: max-two-gpus
severity: error
summary: at most two GPUs per job on the shared cluster
when: batch.world_size is not None and batch.world_size > 2
at: batch.world_size
message: "{batch.world_size} processes: the shared cluster allows at most 2 per job"
docs: |
  Cluster policy.
"""

MAIN = {
    "pyproject.toml": (
        '[project]\nname = "recipes"\nversion = "0.1"\n\n[tool.gpu-advise]\nextend-rules = ["policy"]\n'
    ),
    "policy/GA950-max-two-gpus.yaml": RULE,
    "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 1 train.py configs/sft.yaml\n",
    "train.py": "print('train')\n",
    "configs/sft.yaml": (
        "# tuned on a single GPU\n"
        "output_dir: out\n"
        "per_device_train_batch_size: 2\n"
        "gradient_accumulation_steps: 8\n"
        "learning_rate: 2.0e-4\n"
    ),
}
FOUR_GPUS = MAIN["launch.sh"].replace("--num_processes 1", "--num_processes 4")


def _pull_request(tmp_path: Path, change: dict[str, str]) -> Path:
    """A clone of upstream main with one commit on a branch: four GPUs, plus `change`."""
    upstream = tmp_path / "upstream"
    write_files(upstream, MAIN)
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "tuned on one GPU")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(upstream), str(work))
    git(work, "checkout", "-q", "-b", "pr")
    write_files(work, {"launch.sh": FOUR_GPUS, **change})
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "four GPUs")
    return work


def _check(work: Path, *extra: str) -> tuple[int, list[dict], str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "check", "--base", "origin/main", "--format", "json", *extra],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    findings = json.loads(proc.stdout)["findings"] if proc.stdout.strip() else []
    return proc.returncode, findings, proc.stderr


def _at(findings: list[dict], rule: str) -> list[tuple[str, int, int]]:
    return [(f["file"], f["line"], f["column"]) for f in findings if f["rule"] == rule]


def _pyproject(extra: str) -> dict[str, str]:
    return {"pyproject.toml": MAIN["pyproject.toml"] + extra}


def test_an_unchanged_policy_reports_no_relaxation_and_the_gate_fails_on_ga101(tmp_path: Path) -> None:
    work = _pull_request(tmp_path, {})
    code, findings, _ = _check(work)
    assert code == 1
    assert _at(findings, "GA101") == [("configs/sft.yaml", 3, 30)]
    assert not [f for f in findings if f["rule"].startswith("GA8")]


def test_ignore_in_the_pull_request_is_reported_at_its_line_and_the_base_governs_with_policy_from_base(
    tmp_path: Path,
) -> None:
    # the pull request also ignores GA8 and GA950: its own settings cannot silence the policy findings
    work = _pull_request(tmp_path, _pyproject('ignore = ["GA101", "GA8", "GA950"]\n'))
    code, findings, _ = _check(work)
    assert code == 1
    assert _at(findings, "GA101") == []  # the pull request's ignore still applies without the option
    assert ("pyproject.toml", 7, 11) in _at(findings, "GA801")
    assert ("pyproject.toml", 7, 27) in _at(findings, "GA801")  # GA950; "GA8" drops no rule it can
    message = next(f["message"] for f in findings if f["rule"] == "GA801" and f["column"] == 11)
    assert "GA101" in message and "origin/main" in message
    assert all(f["severity"] == "error" for f in findings if f["rule"] == "GA801")

    code, findings, _ = _check(work, "--policy-from-base")
    assert code == 1
    assert _at(findings, "GA101") == [("configs/sft.yaml", 3, 30)]
    assert _at(findings, "GA950") == [("launch.sh", 2, 35)]
    assert ("pyproject.toml", 7, 11) in _at(findings, "GA801")  # still reported for the reviewer


def test_a_lowered_severity_fail_on_and_allowed_roots_are_each_reported(tmp_path: Path) -> None:
    change = _pyproject(
        'fail-on = "error"\nallowed-roots = ["/"]\n\n[tool.gpu-advise.severity]\nGA101 = "info"\n'
    )
    work = _pull_request(tmp_path, change)
    code, findings, _ = _check(work)
    assert code == 1  # GA801 is an error: fail-on = "error" in the pull request does not pass the gate
    assert sorted(_at(findings, "GA801")) == [
        ("pyproject.toml", 7, 1),
        ("pyproject.toml", 8, 18),
        ("pyproject.toml", 11, 1),
    ]
    assert [f["severity"] for f in findings if f["rule"] == "GA101"] == ["info"]

    _, findings, _ = _check(work, "--policy-from-base")
    assert [f["severity"] for f in findings if f["rule"] == "GA101"] == ["warning"]


def test_an_inline_suppression_the_base_lacks_is_reported_and_suppresses_nothing_under_the_base(
    tmp_path: Path,
) -> None:
    config = MAIN["configs/sft.yaml"] + "# gpu-advise: ignore-file[GA1]\n"
    work = _pull_request(tmp_path, {"configs/sft.yaml": config})
    _, findings, _ = _check(work)
    assert _at(findings, "GA803") == [("configs/sft.yaml", 6, 1)]
    assert _at(findings, "GA101") == []

    _, findings, _ = _check(work, "--policy-from-base")
    assert _at(findings, "GA101") == [("configs/sft.yaml", 3, 30)]

    _, findings, _ = _check(work, "--no-inline-ignores")  # no directive applies: nothing relaxed
    assert _at(findings, "GA803") == []


def test_a_hand_written_baseline_entry_is_reported_and_the_base_baseline_governs(tmp_path: Path) -> None:
    work = _pull_request(tmp_path, {})
    _, findings, _ = _check(work)
    fingerprint = next(f["fingerprint"] for f in findings if f["rule"] == "GA101")  # anyone can compute it
    entry = {"rule": "GA101", "file": "configs/sft.yaml", "key": None, "fingerprint": fingerprint}
    baseline = json.dumps({"version": 1, "tool": "gpu-advise", "entries": [entry]}, indent=2) + "\n"
    write_files(
        work,
        {".gpu-advise-baseline.json": baseline, **_pyproject('baseline = ".gpu-advise-baseline.json"\n')},
    )
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "accept the finding")

    code, findings, _ = _check(work)
    assert _at(findings, "GA101") == []
    assert ("pyproject.toml", 7, 1) in _at(findings, "GA801")  # a baseline the base does not use
    entries = [f for f in findings if f["rule"] == "GA804"]
    assert entries and all(f["file"] == ".gpu-advise-baseline.json" for f in entries)
    assert any("GA101" in f["message"] for f in entries)
    lines = (work / ".gpu-advise-baseline.json").read_text(encoding="utf-8").splitlines()
    assert all('"fingerprint"' in lines[f["line"] - 1] for f in entries)
    assert code == 1

    _, findings, _ = _check(work, "--policy-from-base")
    assert _at(findings, "GA101") == [("configs/sft.yaml", 3, 30)]


def test_a_rule_of_the_project_turned_off_is_reported_and_the_base_rule_runs(tmp_path: Path) -> None:
    weakened = RULE.replace("when: batch.world_size is not None and batch.world_size > 2", 'when: "False"')
    work = _pull_request(tmp_path, {"policy/GA950-max-two-gpus.yaml": weakened})
    _, findings, _ = _check(work)
    assert _at(findings, "GA950") == []
    assert _at(findings, "GA802") == [("policy/GA950-max-two-gpus.yaml", 5, 1)]

    _, findings, _ = _check(work, "--policy-from-base")
    assert _at(findings, "GA950") == [("launch.sh", 2, 35)]


def test_a_dropped_rule_folder_is_reported(tmp_path: Path) -> None:
    work = _pull_request(tmp_path, {"pyproject.toml": MAIN["pyproject.toml"].replace('["policy"]', "[]")})
    _, findings, _ = _check(work)
    assert _at(findings, "GA801") == [("pyproject.toml", 6, 1)]
    assert "GA950" in next(f["message"] for f in findings if f["rule"] == "GA801")


def test_the_base_can_ignore_the_policy_rules_and_the_option_needs_a_base(tmp_path: Path) -> None:
    work = _pull_request(tmp_path, _pyproject('ignore = ["GA101"]\n'))
    _, findings, _ = _check(work, "--ignore", "GA801")
    assert _at(findings, "GA801") == []

    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "check", "--policy-from-base"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2
    assert "--policy-from-base needs --base" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_sub_folder_settings_file_that_ignores_rules_is_reported(tmp_path: Path) -> None:
    work = _pull_request(tmp_path, {"configs/.gpu-advise.toml": 'ignore = ["GA1"]\n'})
    _, findings, _ = _check(work)
    assert ("configs/.gpu-advise.toml", 1, 11) in _at(findings, "GA801")


def test_recorded_measurements_the_base_lacks_are_reported_and_not_read_under_policy_from_base(
    tmp_path: Path, monkeypatch
) -> None:
    # A measured effective batch equal to the base's (16) refutes GA101; the digest is computed from the
    # run's own files, so the pull request can write an entry that applies.
    from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings
    from advisor.pipeline.probe.spec import run_digest

    work = _pull_request(tmp_path, {})
    monkeypatch.chdir(work)
    options = CheckOptions()
    plans, _ = build_plans([Path(".")], options, resolve_settings([Path(".")], options))
    run = next(p for p in plans if p.name == "launch.sh")
    entry = {
        "name": "launch.sh",
        "status": "ok",
        "measured": {"world_size": 4, "effective_batch": 16},
        "digest": run_digest(run),
    }
    (work / ".gpu-advise-verify.json").write_text(
        json.dumps({"version": 1, "runs": [entry]}, indent=1) + "\n", encoding="utf-8"
    )
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "measured")

    code, findings, _ = _check(work)
    assert code == 1
    assert _at(findings, "GA101") == []  # the pull request's measurement refutes it
    (hit,) = [f for f in findings if f["rule"] == "GA805"]
    assert (hit["file"], hit["line"], hit["severity"]) == (".gpu-advise-verify.json", 11, "error")
    assert "launch.sh" in hit["message"] and "origin/main" in hit["message"]

    code, findings, _ = _check(work, "--policy-from-base")
    assert _at(findings, "GA101") == [("configs/sft.yaml", 3, 30)]
    assert [f["rule"] for f in findings if f["rule"] == "GA805"] == ["GA805"]


def test_an_exclude_the_base_lacks_is_a_relaxation(tmp_path: Path) -> None:
    # extend-exclude hides the config the GA101 is located in; the base reads it
    work = _pull_request(tmp_path, _pyproject('extend-exclude = ["configs/"]\nforce-exclude = true\n'))
    code, findings, _ = _check(work)
    assert code == 1
    assert sorted(_at(findings, "GA801")) == [("pyproject.toml", 7, 19), ("pyproject.toml", 8, 1)]
    messages = [f["message"] for f in findings if f["rule"] == "GA801"]
    assert any("'configs/'" in m and "extend-exclude" in m for m in messages), messages
    _, findings, _ = _check(work, "--policy-from-base")
    assert _at(findings, "GA101") == [("configs/sft.yaml", 3, 30)]
