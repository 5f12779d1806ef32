"""A training script that does not parse is a declared fact (`script.syntax_error`), not an
undeclared one that strict mode (on in this suite) refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project


def test_a_script_that_does_not_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git_project(
        tmp_path,
        {
            "train.py": "def f(:\n    pass\n",
            "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --per_device_train_batch_size 2\n",
        },
        monkeypatch,
    )
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    (plan,) = result.plans
    error = run_names(plan)["script"].syntax_error
    assert error["message"] == "invalid syntax" and error["location"].line == 1
