"""The console script (advisor/__main__.py) ends its process without the interpreter's teardown
(advisor/commands/startup.py): what users see must be what advisor.cli.main gives in-process."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from advisor.commands import startup
from tests.conftest import REPO


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    "args",
    [
        ["check", "fixtures/example"],  # findings: 1
        ["check", "--exit-zero", "fixtures/example"],  # 0
        ["check", "--format", "json", "fixtures/example"],
        ["check", "--format", "nope", "fixtures/example"],  # usage error: 2
        ["check", "no/such/path"],
        ["estimate", "meta-llama/Meta-Llama-3-8B", "--format", "json"],  # the typer path
        ["--version"],
    ],
)
def test_the_console_script_prints_and_exits_as_main_does(args: list[str]) -> None:
    ours, plain = _run("advisor", *args), _run("advisor.cli", *args)
    plain_err = plain.stderr.replace("-m advisor.cli", "-m advisor")  # the program name in usage errors
    assert (ours.returncode, ours.stdout, ours.stderr) == (plain.returncode, plain.stdout, plain_err)


def test_a_closed_stdout_is_exit_status_1_without_a_traceback() -> None:
    # the reader closes its end before gpu-advise writes (a pipe buffer would hide `| head -c 10`)
    proc = subprocess.run(
        [
            "bash",
            "-c",
            f"{sys.executable} -m advisor check --exit-zero fixtures/example | (exec 0<&-); "
            "echo status=${PIPESTATUS[0]}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "status=1" in proc.stdout and "Traceback" not in proc.stderr, proc.stderr


def test_exit_codes_as_the_interpreter_makes_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert [startup.exit_code(c) for c in (None, 0, 1, 2, 3, 130, 256, -1)] == [0, 0, 1, 2, 3, 130, 0, 255]
    assert startup.exit_code("gpu-advise: stopped") == 1
    assert capsys.readouterr().err == "gpu-advise: stopped\n"


def test_collection_is_deferred_only_when_the_console_script_asked() -> None:
    assert gc.isenabled()
    startup.start_collecting()  # in-process: nothing deferred, nothing frozen
    assert gc.isenabled() and gc.get_freeze_count() == 0
    startup.defer_collection()
    try:
        assert not gc.isenabled()
    finally:
        startup.start_collecting()
    assert gc.isenabled()
    gc.unfreeze()
