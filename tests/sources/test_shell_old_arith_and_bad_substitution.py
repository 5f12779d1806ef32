"""`$[ ... ]` is arithmetic; `${batch_size*2}` is bash's "bad substitution" (issue 20 item 6), via the CLI.

Checked against real bash 5 (`bash script.sh`): `echo $[1+2]` prints 3; a script line
`args="--bs ${b*2}"` prints `line 2: --bs ${b*2}: bad substitution`, leaves `args` unset and goes on
with the next line, so the training script starts without those flags."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.sources.cli_json import TRAIN_FLAGS, check, project


def test_old_arithmetic_form_is_read_like_double_parentheses(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\n"
        "bs=4\n"
        "accum=$[16 / bs]\n"
        "torchrun --nproc_per_node 2 train.py --per_device_train_batch_size $[bs*2] "
        '--gradient_accumulation_steps "$accum"\n'
    )
    root = project(tmp_path, {"launch.sh": launch, "train.py": TRAIN_FLAGS})
    report = check(root, "launch.sh")
    assert [f for f in report["findings"] if f["severity"] == "error"] == []  # GA001 on $[bs*2] before
    (run,) = report["runs"]
    assert run["effective_batch"] == 8 * 4 * 2


def test_bad_substitution_aborts_the_assignment(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\n"
        "batch_size=4\n"
        'args="--per_device_train_batch_size ${batch_size*2}"\n'
        "torchrun --nproc_per_node 2 train.py $args\n"
    )
    root = project(tmp_path, {"launch.sh": launch, "train.py": TRAIN_FLAGS})
    report = check(root, "launch.sh")
    bad = [(f["rule"], f["severity"], f["file"], f["line"]) for f in report["findings"]]
    assert bad == [("GA001", "error", "launch.sh", 3)]
    assert "bad substitution" in report["findings"][0]["message"]


def test_accepted_expansions_are_no_bad_substitution(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\n"
        'x="${a:-1} ${a-2} ${#a} ${a/b/c} ${a^^} ${a,,} ${a@Q} ${a:0:1} ${a%%.*} ${arr[@]}"\n'
        "torchrun --nproc_per_node 2 train.py\n"
    )
    root = project(tmp_path, {"launch.sh": launch, "train.py": TRAIN_FLAGS})
    report = check(root, "launch.sh")
    assert [f for f in report["findings"] if f["rule"] == "GA001"] == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_itself_agrees(tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text('echo $[1+2]\nargs="--bs ${b*2}"\necho "[${args-unset}]"\n', encoding="utf-8")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert proc.stdout.split() == ["3", "[unset]"]
    assert "bad substitution" in proc.stderr
