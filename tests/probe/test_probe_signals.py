"""Defect 9 of issue 9: SIGTERM, SIGHUP and SIGINT during `gpu-advise check --verify` end every
process of the probe (torchrun and its workers), remove the staging folder, say so on stderr and
exit 128 + the signal number.

The real CLI runs in a subprocess on the tiny CPU probe project (gloo, two torchrun workers); the
signal is sent once both workers are running. Processes are found through /proc as descendants of
the CLI process, so probes of other test sessions on the same machine are never touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.probe.conftest import SEQ, needs_torch, tiny_project

pytestmark = [
    needs_torch,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="the process scan needs /proc"),
]
REPO = Path(__file__).resolve().parents[2]


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, pgid, state) of a process, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[2]), fields[0]


def _descendants(root: int) -> dict[int, tuple[int, int, str]]:
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (st := _stat(int(entry.name))) is not None:
            table[int(entry.name)] = st
    out: dict[int, tuple[int, int, str]] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, st in table.items():
            if st[0] == parent and pid not in out:
                out[pid] = st
                frontier.append(pid)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_for_workers(cli: subprocess.Popen[str], n: int, limit: float = 60.0) -> dict[int, int]:
    """pid -> pgid of the probe's processes once n workers run under the launcher."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        assert cli.poll() is None, cli.communicate()
        procs = _descendants(cli.pid)
        workers = [
            pid
            for pid in procs
            if "advisor.pipeline.probe.worker" in _cmdline(pid)
            and "torch.distributed.run" not in _cmdline(pid)
        ]
        if len(workers) >= n:
            return {pid: st[1] for pid, st in procs.items()}
        time.sleep(0.1)
    cli.kill()
    pytest.fail(f"the probe workers did not start within {limit:.0f} s: {cli.communicate()}")


def _group_gone(pgid: int, limit: float = 10.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_signal_ends_the_probe_group_and_removes_staging(sig: signal.Signals, tmp_path: Path) -> None:
    project = tiny_project(
        tmp_path / "project",
        "torchrun --nproc_per_node 2 train.py train.yaml",
        f"model_name_or_path: ./tiny\noutput_dir: out\nper_device_train_batch_size: 1\nmax_length: {SEQ}\n",
    )
    staging_parent = tmp_path / "tmp"
    staging_parent.mkdir()
    env = {**os.environ, "TMPDIR": str(staging_parent), "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    args = [
        "check",
        ".",
        "--verify",
        "--verify-device",
        "cpu",
        "--verify-steps",
        "100000",
        "--verify-timeout",
        "300",
    ]
    cli = subprocess.Popen(
        [sys.executable, "-m", "advisor", *args],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        probe = _wait_for_workers(cli, 2)
        assert any(staging_parent.iterdir()), "the staging folder is where TMPDIR says"
        cli.send_signal(sig)
        _, stderr = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 128 + sig, stderr
    assert "Traceback" not in stderr
    # one line says what happened; the lines before it are the probe's progress (issue 18 item 8)
    *progress, last = stderr.strip().splitlines()
    assert all(line.startswith("verify: ") for line in progress), stderr
    assert not last.startswith("verify: "), stderr
    for pgid in sorted(set(probe.values())):
        assert _group_gone(pgid), f"process group {pgid} outlived the probe"
    assert all(_stat(pid) is None or _stat(pid)[2] in {"Z", "X"} for pid in probe)
    assert not list(staging_parent.iterdir()), list(staging_parent.iterdir())


def test_handlers_are_installed_only_while_the_probe_runs() -> None:
    from advisor.pipeline.probe.signals import ProbeStopped, stop_on_signals

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    with pytest.raises(ProbeStopped) as stopped, stop_on_signals() as guard:
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(1)  # the handler raises before this ends
    assert stopped.value.exit_code == 129 and guard.received == signal.SIGHUP
    assert {s: signal.getsignal(s) for s in before} == before
    with stop_on_signals() as guard:  # while cleaning up, a signal is recorded, not raised
        guard.hold()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
    with pytest.raises(ProbeStopped):
        guard.check()
    assert {s: signal.getsignal(s) for s in before} == before


def test_an_error_in_the_probe_removes_the_staging_folder(tmp_path: Path, monkeypatch) -> None:
    import tempfile

    import advisor.pipeline.probe.stage as stage
    from advisor.pipeline.probe.spec import ProbeOptions

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(stage, "device_info", lambda python=None: {"devices": []})

    def broken(*args, **kwargs):
        assert len(list(tmp_path.iterdir())) == 1  # staged
        raise RuntimeError("boom")

    monkeypatch.setattr(stage, "probe_run", broken)
    verification = stage.Verification(source="probe")
    with pytest.raises(RuntimeError):
        stage._probe_all([(object(), {}, None)], ProbeOptions(progress=False), verification)
    assert not list(tmp_path.iterdir())
