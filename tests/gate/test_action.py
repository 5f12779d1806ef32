"""The composite GitHub Action (action.yml) and its shell, scripts/action.sh, run locally.

The script gets the environment GitHub sets for a pull request (GITHUB_BASE_REF, GITHUB_WORKSPACE,
GITHUB_OUTPUT, GITHUB_ACTION_PATH) and the inputs as INPUT_* variables, in a temporary clone whose
origin has the base branch: a config tuned on one GPU, launched on four in the pull request.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, write_files
from tests.gate.conftest import assert_valid_sarif, git, needs_git

SCRIPT = REPO / "scripts" / "action.sh"
MAIN = {
    "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 1 train.py configs/sft.yaml\n",
    "train.py": "print('train')\n",
    "configs/sft.yaml": "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n",
}
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def _action() -> dict:
    return yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))


def _pull_request(tmp_path: Path) -> Path:
    upstream = tmp_path / "upstream"
    write_files(upstream, MAIN)
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "tuned on one GPU")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(upstream), str(work))
    git(work, "checkout", "-q", "-b", "four-gpus")
    launch = work / "launch.sh"
    launch.write_text(MAIN["launch.sh"].replace("--num_processes 1", "--num_processes 4"), encoding="utf-8")
    git(work, "commit", "-q", "-am", "launch on four GPUs")
    return work


def _run(step: str, tmp_path: Path, work: Path, **inputs: str) -> tuple[subprocess.CompletedProcess, dict]:
    outputs = tmp_path / "github_output"
    outputs.write_text("", encoding="utf-8")
    runner_temp = tmp_path / "runner-temp"  # as the runner's _temp, beside the workspace
    runner_temp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    env |= {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_BASE_REF": "main",
        "GITHUB_HEAD_REF": "four-gpus",
        "GITHUB_WORKSPACE": str(work),
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_ACTION_PATH": str(REPO),
        "RUNNER_TEMP": str(runner_temp),
        "PYTHON": sys.executable,
        "HF_HUB_OFFLINE": "1",
        **{f"INPUT_{k.upper()}": v for k, v in inputs.items()},
    }
    proc = subprocess.run(
        ["bash", str(SCRIPT), step], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    values = dict(line.split("=", 1) for line in outputs.read_text(encoding="utf-8").splitlines() if line)
    return proc, values


def test_action_declares_the_inputs_and_runs_the_script() -> None:
    action = _action()
    assert {"paths", "hardware", "base", "format", "fail-on", "policy-from-base"} <= set(action["inputs"])
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert all("scripts/action.sh" in r for r in runs)
    # inputs reach the shell as environment variables, never spliced into its text
    assert not [r for r in runs if "${{" in r]
    installs = [s for s in steps if "install" in s.get("run", "")]
    assert installs and installs[0]["env"]["GITHUB_ACTION_PATH"] == "${{ github.action_path }}"
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    assert len(uploads) == 1 and "always()" in uploads[0]["if"]
    assert steps[-1]["run"].endswith("finish") and "always()" in steps[-1]["if"]


@needs_git
@needs_bash
def test_action_fails_the_pull_request_that_launches_on_four_gpus(tmp_path: Path) -> None:
    work = _pull_request(tmp_path)
    proc, out = _run("check", tmp_path, work, paths=".", format="sarif", hardware="4xH100-NVL")
    assert proc.returncode == 0, proc.stderr  # the step itself passes, so the upload step runs
    assert out["exit-code"] == "1", proc.stdout + proc.stderr
    written = Path(out["sarif"])
    assert written.name == "gpu-advise.sarif" and written.parent.parent == tmp_path / "runner-temp"
    assert not (work / "gpu-advise.sarif").exists()  # nothing written into the checked repository
    sarif = json.loads(written.read_text(encoding="utf-8"))
    assert_valid_sarif(sarif)
    hits = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "GA101"]
    assert len(hits) == 1
    loc = hits[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "configs/sft.yaml" and loc["region"]["startLine"] == 2

    finish = subprocess.run(
        ["bash", str(SCRIPT), "finish"],
        env={**os.environ, "EXIT_CODE": out["exit-code"]},
        capture_output=True,
        text=True,
        check=False,
    )
    assert finish.returncode == 1


@needs_git
@needs_bash
def test_action_fetches_a_base_branch_the_shallow_checkout_lacks(tmp_path: Path) -> None:
    work = _pull_request(tmp_path)
    git(work, "update-ref", "-d", "refs/remotes/origin/main")  # as actions/checkout leaves it
    proc, out = _run("check", tmp_path, work, format="github", **{"fail_on": "error"})
    assert proc.returncode == 0, proc.stderr
    assert out["exit-code"] == "0", proc.stdout + proc.stderr  # GA101 is a warning; fail-on error
    assert out["sarif"] == ""
    assert re.search(r"^::warning file=configs/sft\.yaml,line=2,.*title=[^:]*GA101", proc.stdout, re.M), (
        proc.stdout
    )


@needs_git
@needs_bash
def test_action_with_an_unknown_base_reports_a_tool_error(tmp_path: Path) -> None:
    work = _pull_request(tmp_path)
    proc, out = _run("check", tmp_path, work, base="origin/no-such-branch")
    assert out["exit-code"] == "2", proc.stdout + proc.stderr
    assert out["sarif"] == ""  # nothing to upload


@needs_git
@needs_bash
def test_action_never_uploads_a_sarif_committed_in_the_pull_request(tmp_path: Path) -> None:
    """Issue 17 item 16: the pull request commits a forged `gpu-advise.sarif` (no alerts, or fake
    ones) and makes the check exit 2 (an unknown hardware name): the step must not offer the
    committed file for upload, and a check that does run writes a fresh file outside the workspace."""
    work = _pull_request(tmp_path)
    forged = '{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "gpu-advise"}}, "results": []}]}\n'
    (work / "gpu-advise.sarif").write_text(forged, encoding="utf-8")
    git(work, "add", "gpu-advise.sarif")
    git(work, "commit", "-q", "-m", "a clean report")
    failed, out = _run("check", tmp_path, work, format="sarif", hardware="9xNoSuchGPU")
    assert failed.returncode == 0, failed.stderr
    assert out["exit-code"] == "2", failed.stdout + failed.stderr
    assert out["sarif"] == ""  # nothing to upload: the upload step is skipped

    ran, out = _run("check", tmp_path, work, format="sarif", hardware="4xH100-NVL")
    assert out["exit-code"] == "1", ran.stdout + ran.stderr
    written = Path(out["sarif"])
    assert written.is_absolute() and work not in written.parents
    assert [r["ruleId"] for r in json.loads(written.read_text(encoding="utf-8"))["runs"][0]["results"]] == [
        "GA101"
    ]
    assert (work / "gpu-advise.sarif").read_text(encoding="utf-8") == forged  # untouched, unused


@needs_git
@needs_bash
def test_action_passes_a_path_named_like_an_option_as_a_path(tmp_path: Path) -> None:
    """Issue 17 item 3 in the action: a path input `--ignore=ALL,x.yaml` (a file of that name in the
    repository) is checked as a file after `--`, so the finding still fails the job."""
    work = _pull_request(tmp_path)
    (work / "--ignore=ALL,x.yaml").write_text("output_dir: out\n", encoding="utf-8")
    proc, out = _run("check", tmp_path, work, paths="--ignore=ALL,x.yaml .", format="github")
    assert out["exit-code"] == "1", proc.stdout + proc.stderr
    assert "GA101" in proc.stdout


@needs_bash
def test_action_installs_from_its_own_checkout(tmp_path: Path) -> None:
    """The install step runs `PYTHON -m pip install GITHUB_ACTION_PATH`; a recording stand-in for the
    interpreter shows what it was asked to do (the suite installs nothing)."""
    log = tmp_path / "argv"
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n', encoding="utf-8")
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "GITHUB_ACTION_PATH": "/action/checkout"}
    proc = subprocess.run(["bash", str(SCRIPT), "install"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text(encoding="utf-8").splitlines()
    assert calls[0].startswith("-m pip install") and calls[0].endswith(" /action/checkout")
    assert calls[1] == "-m advisor --version"


def _yaml_blocks(text: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```$", text, re.S | re.M)


def test_every_ci_and_pre_commit_snippet_in_the_docs_is_an_example_file() -> None:
    examples = {p.read_text(encoding="utf-8") for p in (REPO / "docs" / "examples").glob("*.y*ml")}
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    snippets = [
        (doc.name, block)
        for doc in docs
        for block in _yaml_blocks(doc.read_text(encoding="utf-8"))
        if block.startswith(("# .pre-commit-config.yaml", "# .github/workflows/"))
    ]
    assert len(snippets) >= 4  # README's hook, the docs' hook, action and plain workflow
    assert [name for name, block in snippets if block not in examples] == []
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        assert "pip install gpu-advise" not in text, doc  # there is no release on a package index
        assert not re.search(r"rev: v\d", text), doc  # no tag exists


def test_example_workflows_install_from_the_repository_and_run_the_gate() -> None:
    steps_wf = yaml.safe_load((REPO / "docs/examples/gpu-advise-workflow.yml").read_text(encoding="utf-8"))
    runs = [s.get("run", "") for s in steps_wf["jobs"]["gpu-advise"]["steps"]]
    assert any("git+https://github.com/" in r for r in runs)
    action_wf = yaml.safe_load((REPO / "docs/examples/gpu-advise-action.yml").read_text(encoding="utf-8"))
    uses = [s.get("uses", "") for s in action_wf["jobs"]["gpu-advise"]["steps"]]
    assert "gpu-advise/gpu-advise@main" in uses
    with_ = next(s["with"] for s in action_wf["jobs"]["gpu-advise"]["steps"] if s.get("uses") == uses[-1])
    assert set(with_) <= set(_action()["inputs"])


@needs_git
@needs_bash
def test_action_enforces_the_base_policy_by_default(tmp_path: Path) -> None:
    # The pull request ignores GA101 in its own settings: the action still fails it (the base's policy
    # governs, GA101 is back) and says what the change tried (GA801); policy-from-base=false gives the
    # pull request's own policy, and the relaxation is still reported.
    work = _pull_request(tmp_path)
    write_files(work, {".gpu-advise.toml": 'ignore = ["GA101"]\n'})
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "quiet")
    proc, out = _run("check", tmp_path, work, format="json")
    assert out["exit-code"] == "1", proc.stdout + proc.stderr
    rules = {f["rule"] for f in json.JSONDecoder().raw_decode(proc.stdout)[0]["findings"]}
    assert {"GA101", "GA801"} <= rules, rules
    proc, out = _run("check", tmp_path, work, format="json", policy_from_base="false")
    rules = {f["rule"] for f in json.JSONDecoder().raw_decode(proc.stdout)[0]["findings"]}
    assert "GA101" not in rules and "GA801" in rules, rules
