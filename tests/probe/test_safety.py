"""Bounded and clean: timeouts and Ctrl-C kill the whole process tree; the check path never imports torch;
without the verify extra, --verify says how to install it and the static check still runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import advisor.pipeline.probe
from advisor.cli import app
from advisor.pipeline.probe import INSTALL_HINT, launcher
from advisor.pipeline.probe.spec import ProbeOptions, ProbeSpec
from tests.probe.conftest import SEQ, TINY_CONFIG, tiny_project

# A stand-in for torchrun: a launcher that starts a worker in a session of its own, then waits.
FAKE_LAUNCHER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    out = sys.argv[1]
    child = subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.1)"],
                             start_new_session=True)
    open(os.path.join(out, "pids"), "w").write(f"{os.getpid()} {child.pid}")
    while True:
        time.sleep(0.1)
    """
)


def _spec(out: Path) -> ProbeSpec:
    return ProbeSpec(
        run="r",
        launcher="python",
        nproc=1,
        device="cpu",
        model_name="tiny",
        model_source="path",
        hf_config=TINY_CONFIG,
        seq_len=SEQ,
        out_dir=str(out),
    )


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}  # a zombie waiting for its (foreign) parent to reap it is dead


def _fake(monkeypatch: pytest.MonkeyPatch, out: Path) -> None:
    monkeypatch.setattr(
        launcher,
        "command_for",
        lambda spec, path, python=None: [sys.executable, "-c", FAKE_LAUNCHER, str(out)],
    )


def _wait_for_pids(out: Path) -> list[int]:
    end = time.monotonic() + 20
    while time.monotonic() < end:
        try:
            return [int(x) for x in (out / "pids").read_text().split()]
        except (OSError, ValueError):
            time.sleep(0.05)
    raise AssertionError("the fake launcher never started")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="process scan needs /proc")
def test_timeout_kills_launcher_and_detached_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, tmp_path)
    spec = _spec(tmp_path)
    res = launcher.launch(spec, tmp_path / "spec.json", ProbeOptions(timeout=3, progress=False))
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert res.timed_out
    assert res.leftovers_killed >= 1
    assert not any(_alive(p) for p in pids), pids
    assert launcher.marked_pids(res.marker) == []


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="process scan needs /proc")
def test_ctrl_c_kills_everything_and_propagates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, tmp_path)
    seen: dict[str, list[int]] = {}

    def interrupt(step: int, total: int) -> None:
        if (tmp_path / "pids").exists():
            seen["pids"] = _wait_for_pids(tmp_path)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        launcher.launch(
            _spec(tmp_path),
            tmp_path / "spec.json",
            ProbeOptions(timeout=60, progress=False),
            on_progress=interrupt,
        )
    assert seen["pids"]
    assert not any(_alive(p) for p in seen["pids"])


def test_child_environment_is_offline_unless_online(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    env = launcher.child_env(spec, ProbeOptions(), "m")
    assert env["HF_HUB_OFFLINE"] == "1" and env[launcher.MARKER_VAR] == "m"
    assert env["ACCELERATE_USE_CPU"] == "true"
    online = launcher.child_env(spec, ProbeOptions(online=True), "m")
    assert online.get("HF_HUB_OFFLINE") == os.environ.get("HF_HUB_OFFLINE")


def test_launcher_commands_follow_the_run(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    spec.launcher, spec.nproc = "torchrun", 2
    cmd = launcher.command_for(spec, tmp_path / "spec.json", "py")
    assert cmd[:3] == ["py", "-m", "torch.distributed.run"]
    assert cmd[cmd.index("--nproc_per_node") + 1] == "2"
    assert cmd[-3:] == ["-m", "advisor.pipeline.probe.worker", str(tmp_path / "spec.json")]
    spec.launcher, spec.accelerate_config = "accelerate", "/x/acc.yaml"
    spec.accelerate_flags = {"num_processes": "2", "multi_gpu": "true"}
    cmd = launcher.command_for(spec, tmp_path / "spec.json", "py")
    assert cmd[:3] == ["py", "-m", "accelerate.commands.launch"]
    assert cmd[cmd.index("--config_file") + 1] == "/x/acc.yaml"
    assert "--multi_gpu" in cmd and cmd[cmd.index("--num_processes") + 1] == "2"


def test_the_check_path_never_imports_torch(tmp_path: Path) -> None:
    tiny_project(
        tmp_path,
        "torchrun --nproc_per_node 2 train.py train.yaml",
        "model_name_or_path: ./tiny\noutput_dir: out\nper_device_train_batch_size: 2\n",
    )
    # recorded measurements are read on the check path too (with the digest of the run's files)
    from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings
    from advisor.pipeline.probe.spec import run_digest

    options = CheckOptions()
    plans, _ = build_plans([tmp_path], options, resolve_settings([tmp_path], options))
    entry = {
        "name": "launch.sh",
        "digest": run_digest(plans[0]),
        "measured": {"world_size": 2, "effective_batch": 16},
    }
    (tmp_path / ".gpu-advise-verify.json").write_text(json.dumps({"runs": [entry]}))
    code = textwrap.dedent(
        f"""
        import sys
        from typer.testing import CliRunner
        from advisor.cli import app
        r = CliRunner().invoke(app, ["check", {str(tmp_path)!r}, "--format", "json"])
        assert r.exit_code in (0, 1), r.output
        assert "GA701" in r.output
        heavy = {{"torch", "transformers", "accelerate", "peft"}}
        bad = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
        assert not bad, bad
        """
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_without_the_extra_verify_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny_project(
        tmp_path,
        "torchrun --nproc_per_node 2 train.py train.yaml",
        "model_name_or_path: ./tiny\noutput_dir: out\nper_device_train_batch_size: 2\n",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(advisor.pipeline.probe, "missing_requirements", lambda: ["torch", "peft"])
    static = CliRunner().invoke(app, ["check", "."])
    result = CliRunner().invoke(app, ["check", ".", "--verify"])
    assert result.exit_code == static.exit_code  # the static check still ran and decides
    assert INSTALL_HINT in result.stderr
    assert "pip install torch==2.13.0 && pip install 'gpu-advise[verify]'" in result.stderr
    assert "run launch.sh" in result.stdout
    verify = CliRunner().invoke(app, ["verify", "."])
    assert verify.exit_code == 2
    assert INSTALL_HINT in verify.stderr
