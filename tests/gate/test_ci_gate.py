"""The CI gate of docs/ci.md, played on a temporary git repository with two commits.

main: a config tuned on one GPU (per_device 2 x accumulation 8 = 16), launched on one GPU.
pull request: the same config launched on four GPUs. The workflow's command,
`gpu-advise check --base origin/$BASE_REF --format sarif --output gpu-advise.sarif`, must fail the
job (exit 1) with GA101 and write SARIF that code scanning accepts (valid against the schema).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_files
from tests.gate.conftest import assert_valid_sarif, git, needs_git

pytestmark = needs_git

MAIN = {
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


def _gate(cwd: Path, base_ref: str = "main") -> subprocess.CompletedProcess[str]:
    """The workflow step, as docs/ci.md writes it."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"} | {"BASE_REF": base_ref}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "advisor",
            "check",
            "--base",
            f"origin/{base_ref}",
            "--format",
            "sarif",
            "--output",
            "gpu-advise.sarif",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _repos(tmp_path: Path) -> Path:
    upstream = tmp_path / "upstream"
    write_files(upstream, MAIN)
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "tuned on one GPU")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(upstream), str(work))
    git(work, "checkout", "-q", "-b", "four-gpus")
    return work


def test_gate_fails_the_pull_request_that_launches_on_four_gpus(tmp_path: Path) -> None:
    work = _repos(tmp_path)
    launch = work / "launch.sh"
    launch.write_text(MAIN["launch.sh"].replace("--num_processes 1", "--num_processes 4"), encoding="utf-8")
    git(work, "commit", "-q", "-am", "launch on four GPUs")

    proc = _gate(work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == ""  # the report went to the file
    sarif = json.loads((work / "gpu-advise.sarif").read_text(encoding="utf-8"))
    assert_valid_sarif(sarif)
    run = sarif["runs"][0]
    assert run["invocations"][0]["exitCode"] == 1
    hits = [r for r in run["results"] if r["ruleId"] == "GA101"]
    assert len(hits) == 1, [r["ruleId"] for r in run["results"]]
    hit = hits[0]
    assert "effective batch is 64" in hit["message"]["text"] and "16" in hit["message"]["text"]
    loc = hit["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "configs/sft.yaml", "uriBaseId": "%SRCROOT%"}
    assert loc["region"]["startLine"] == 3
    related = {r["physicalLocation"]["artifactLocation"]["uri"] for r in hit["relatedLocations"]}
    assert "launch.sh" in related  # where the four processes come from
    assert hit["partialFingerprints"]["gpuAdvise/v1"]
    edit = hit["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert edit["insertedContent"]["text"] == "2"  # accumulation 8 -> 2 keeps 16
    rule = run["tool"]["driver"]["rules"][hit["ruleIndex"]]
    assert rule["id"] == "GA101" and rule["helpUri"].endswith("/docs/rules/GA101.md")


def test_gate_passes_when_the_pull_request_keeps_the_effective_batch(tmp_path: Path) -> None:
    work = _repos(tmp_path)
    (work / "launch.sh").write_text(
        MAIN["launch.sh"].replace("--num_processes 1", "--num_processes 4"), encoding="utf-8"
    )
    config = work / "configs" / "sft.yaml"
    config.write_text(
        MAIN["configs/sft.yaml"].replace("accumulation_steps: 8", "accumulation_steps: 2"), encoding="utf-8"
    )
    git(work, "commit", "-q", "-am", "four GPUs, accumulation divided by four")
    proc = _gate(work)
    sarif = json.loads((work / "gpu-advise.sarif").read_text(encoding="utf-8"))
    assert_valid_sarif(sarif)
    assert not [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "GA101"]
    assert proc.returncode in (0, 1)
    if proc.returncode == 1:  # another rule may warn about the run, but not the batch change
        assert all(r["level"] != "none" for r in sarif["runs"][0]["results"])


def test_gate_with_an_unknown_base_is_a_tool_error(tmp_path: Path) -> None:
    work = _repos(tmp_path)
    proc = _gate(work, base_ref="no-such-branch")
    assert proc.returncode == 2
    assert "gpu-advise:" in proc.stderr


def test_workflow_in_the_docs_runs_this_command() -> None:
    from tests.conftest import REPO

    doc = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    assert 'gpu-advise check "--base=origin/$BASE_REF" --format=sarif "--output=$sarif" -- .' in doc
    # the report goes to a fresh folder outside the workspace, never a file the pull request commits
    assert 'sarif="$(mktemp -d "$RUNNER_TEMP/gpu-advise.XXXXXXXX")/gpu-advise.sarif"' in doc
    assert "hashFiles('gpu-advise.sarif')" not in doc
    assert "github/codeql-action/upload-sarif" in doc
    assert "docs/ci.md" in (REPO / "README.md").read_text(encoding="utf-8")


def _check(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    return subprocess.run(
        [sys.executable, "-m", "advisor", "check", "--format", "json", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _codes(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return [f["rule"] for f in json.loads(proc.stdout)["findings"]]


def _four_gpus_uncommitted(tmp_path: Path) -> Path:
    work = _repos(tmp_path)
    launch = work / "launch.sh"
    launch.write_text(MAIN["launch.sh"].replace("--num_processes 1", "--num_processes 4"), encoding="utf-8")
    return work


def test_hook_default_base_compares_with_head(tmp_path: Path) -> None:
    work = _four_gpus_uncommitted(tmp_path)
    proc = _check(work, "--base-default", "HEAD", "launch.sh")
    assert "GA101" in _codes(proc)
    assert proc.returncode == 1
    # a plain check in a git work tree compares with HEAD too (issue 18 item 5); --no-base does not
    assert "GA101" in _codes(_check(work, "launch.sh"))
    assert "GA101" not in _codes(_check(work, "--no-base", "launch.sh"))


def test_explicit_base_and_declared_batch_override_the_default(tmp_path: Path) -> None:
    work = _four_gpus_uncommitted(tmp_path)
    git(work, "commit", "-q", "-am", "four GPUs")
    # --base names the commit that already launched on four GPUs: nothing changed against it
    assert "GA101" not in _codes(_check(work, "--base-default", "HEAD~1", "--base", "HEAD", "launch.sh"))
    assert "GA101" in _codes(_check(work, "--base-default", "HEAD~1", "launch.sh"))
    # a run that declares the batch it was tuned for is judged against that, not against the default
    (work / ".gpu-advise.toml").write_text(
        '[[runs]]\npath = "launch.sh"\neffective-batch = 64\n', encoding="utf-8"
    )
    assert "GA101" not in _codes(_check(work, "--base-default", "HEAD~1", "launch.sh"))


def test_hook_default_base_before_the_first_commit_and_outside_git(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    write_files(fresh, MAIN)
    git(fresh, "init", "-q", "-b", "main")
    proc = _check(fresh, "--base-default", "HEAD", "launch.sh")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == ""
    plain = tmp_path / "plain"
    write_files(plain, MAIN)
    proc = _check(plain, "--base-default", "HEAD", "launch.sh")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == ""


def test_base_never_runs_the_scanned_repositorys_git_programs(tmp_path: Path) -> None:
    """A fork's repository config and attributes cannot make `--base` run a program: fsmonitor,
    clean/smudge filters, textconv, pager and external diff are all set to write a marker."""
    work = _four_gpus_uncommitted(tmp_path)
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n', encoding="utf-8")
    evil.chmod(0o755)
    for key in (
        "core.fsmonitor",
        "filter.evil.clean",
        "filter.evil.smudge",
        "diff.evil.textconv",
        "core.pager",
    ):
        git(work, "config", key, str(evil))
    git(work, "config", "filter.evil.required", "true")
    git(work, "config", "diff.external", str(evil))
    (work / ".gitattributes").write_text("* filter=evil diff=evil\n", encoding="utf-8")
    marker.unlink(missing_ok=True)  # `git config` itself ran nothing, but start clean
    codes = _codes(_check(work, "--base", "HEAD", "launch.sh"))
    codes += _codes(_check(work, "--base-default", "HEAD", "launch.sh"))
    assert codes.count("GA101") == 2
    assert not marker.exists(), marker.read_text(encoding="utf-8")


def test_base_that_looks_like_an_option_is_refused(tmp_path: Path) -> None:
    work = _repos(tmp_path)
    proc = _check(work, "--base=--output=x", "launch.sh")
    assert proc.returncode == 2
    assert "gpu-advise:" in proc.stderr and not (work / "x").exists()


# ---- issue 17 item 8: a run is matched to the base by content as well as by name -----------------------
def _results(work: Path, rule: str) -> list[dict]:
    sarif = json.loads((work / "gpu-advise.sarif").read_text(encoding="utf-8"))
    assert_valid_sarif(sarif)
    return [r for r in sarif["runs"][0]["results"] if r["ruleId"] == rule]


def test_renaming_the_launch_script_does_not_bypass_the_gate(tmp_path: Path) -> None:
    """Before: `git mv launch.sh train_4gpu.sh` plus four processes passed the gate without a word
    (runs were matched by name only). The twin is found by content, and the message names it."""
    work = _repos(tmp_path)
    git(work, "mv", "launch.sh", "train_4gpu.sh")
    (work / "train_4gpu.sh").write_text(
        MAIN["launch.sh"].replace("--num_processes 1", "--num_processes 4"), encoding="utf-8"
    )
    git(work, "commit", "-q", "-am", "renamed, and on four GPUs")
    proc = _gate(work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    hits = _results(work, "GA101")
    assert len(hits) == 1
    assert "effective batch is 64" in hits[0]["message"]["text"]
    assert "git origin/main: launch.sh" in hits[0]["message"]["text"]  # what it was compared with
    assert not _results(work, "GA108")


def test_moving_the_launch_script_and_its_config_does_not_bypass_the_gate(tmp_path: Path) -> None:
    work = _repos(tmp_path)
    (work / "jobs").mkdir()
    git(work, "mv", "launch.sh", "jobs/launch.sh")
    git(work, "mv", "configs", "jobs/configs")
    (work / "jobs" / "launch.sh").write_text(
        "#!/bin/bash\naccelerate launch --num_processes 4 train.py jobs/configs/sft.yaml\n", encoding="utf-8"
    )
    git(work, "commit", "-q", "-am", "moved into jobs/, on four GPUs")
    proc = _gate(work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    hits = _results(work, "GA101")
    assert len(hits) == 1
    loc = hits[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "jobs/configs/sft.yaml" and loc["region"]["startLine"] == 3


def test_a_line_added_above_a_command_does_not_bypass_the_gate(tmp_path: Path) -> None:
    """A script of two commands names its runs `launch.sh:LINE`: a line added above moved both names."""
    two = MAIN["launch.sh"] + "python train.py configs/sft.yaml --do_eval\n"
    work = _repos(tmp_path)
    (work / "launch.sh").write_text(two, encoding="utf-8")
    git(work, "commit", "-q", "-am", "an eval command")
    (work / "launch.sh").write_text(
        two.replace("#!/bin/bash\n", "#!/bin/bash\nset -e\n").replace(
            "--num_processes 1", "--num_processes 4"
        ),
        encoding="utf-8",
    )
    git(work, "commit", "-q", "-am", "set -e, four GPUs")
    proc = _check(work, "--base", "HEAD~1")
    hits = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "GA101"]
    assert proc.returncode == 1 and len(hits) == 1, proc.stdout + proc.stderr
    assert "effective batch is 64" in hits[0]["message"]
    assert "git HEAD~1: launch.sh:2" in hits[0]["message"]  # the base's command, on its old line
    assert "GA108" not in _codes(proc)


def test_a_run_without_a_baseline_says_so(tmp_path: Path) -> None:
    """A run that shares no name, command or config with the base cannot be compared: GA108 says so
    (info: a new run is legitimate) at its launch command, instead of silence."""
    work = _repos(tmp_path)
    git(work, "rm", "-q", "launch.sh")
    (work / "finetune.sh").write_text(
        "#!/bin/bash\ntorchrun --nproc_per_node 4 finetune.py cfg/run.yaml\n", encoding="utf-8"
    )
    (work / "finetune.py").write_text("print('finetune')\n", encoding="utf-8")
    (work / "cfg").mkdir()
    (work / "cfg" / "run.yaml").write_text(
        "output_dir: four\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 8\n", encoding="utf-8"
    )
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "a new job")
    proc = _gate(work)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    hits = _results(work, "GA108")
    assert [h["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for h in hits] == ["finetune.sh"]
    assert hits[0]["level"] == "note"
    assert "no baseline for this run at git origin/main" in hits[0]["message"]["text"]
    assert hits[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 2


def test_hook_finds_the_twin_of_a_staged_rename(tmp_path: Path) -> None:
    """The pre-commit hook passes the staged files only: the renamed script does not exist at HEAD,
    so its twin is looked for in the whole base tree."""
    work = _repos(tmp_path)
    git(work, "mv", "launch.sh", "train_4gpu.sh")
    (work / "train_4gpu.sh").write_text(
        MAIN["launch.sh"].replace("--num_processes 1", "--num_processes 4"), encoding="utf-8"
    )
    proc = _check(work, "--base-default", "HEAD", "train_4gpu.sh")
    assert _codes(proc).count("GA101") == 1
    assert proc.returncode == 1
