"""The launchers' special forms, now data of their specs (issue 19 item 3): the shell reader and the
probe ask the spec (launcher_flag / starts, no_module_flags, module_words, probe_as / probe_many_as,
local_start) instead of naming the launcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core import datacodec
from advisor.pipeline.probe import launcher as probe_launcher
from advisor.pipeline.probe.progress import describe
from advisor.pipeline.probe.spec import ProbeSpec
from advisor.sources import launchers
from advisor.sources.launch import LaunchCommand, read_launch


def commands(text: str) -> list[LaunchCommand]:
    return list(read_launch(Path("train.sh"), text).data.commands)


def only(text: str) -> LaunchCommand:
    found = commands(text)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("line", "standalone"),
    [
        # torchrun's --standalone is a switch: `extra` is not its value
        ("axolotl train cfg.yml --launcher torchrun -- --standalone extra", "true"),
        # accelerate (the default, and for a launcher axolotl does not start) has no such switch
        ("axolotl train cfg.yml -- --standalone extra", "extra"),
        ("axolotl train cfg.yml --launcher accelerate -- --standalone extra", "extra"),
        ("axolotl train cfg.yml --launcher other -- --standalone extra", "extra"),
    ],
)
def test_axolotl_hands_the_words_after_dashes_to_the_launcher_it_starts(line: str, standalone: str) -> None:
    cmd = only(line + "\n")
    assert cmd.launcher == "axolotl"
    assert cmd.launcher_args["standalone"].text == standalone
    assert "launcher" not in cmd.script_args


def test_only_axolotl_takes_dashes_as_its_launchers() -> None:
    cmd = only("torchrun --nproc_per_node 2 train.py --lr 1 -- --standalone extra\n")
    assert set(cmd.launcher_args) == {"nproc_per_node"}
    assert [w.text for w in cmd.positional] == ["--standalone", "extra"]


def test_deepspeed_no_python_runs_the_script_as_an_executable() -> None:
    # deepspeed 0.12.2 launcher/launch.py:231-238: --no_python first, never `python -m`
    assert not only("deepspeed --no_python --module ./run.sh --lr 1\n").module
    assert only("deepspeed --module my.train --lr 1\n").module
    # torchrun has --no_python too, but no_module_flags is deepspeed's alone
    assert only("torchrun --no_python -m my.train\n").module


def test_vllms_cli_module_serves_only_under_serve() -> None:
    assert commands("python -m vllm.entrypoints.cli.main bench latency --model m\n") == []
    served = only("python -m vllm.entrypoints.cli.main serve m -tp 2\n")
    assert served.launcher == "vllm" and served.launcher_args["tensor_parallel_size"].text == "2"


def test_python_keeps_its_options_and_a_launchers_module_does_not() -> None:
    plain = only("python -u -m my.train --lr 1\n")
    assert plain.launcher == "python" and plain.module and set(plain.launcher_args) == {"u"}
    axo = only("python -u -m axolotl.cli.train cfg.yml\n")
    assert axo.launcher == "axolotl" and axo.launcher_args == {}


@pytest.mark.parametrize(
    ("name", "processes", "probed"),
    [
        ("python", 1, "python"),
        ("python", None, "python"),
        ("python", 2, "torchrun"),  # python's probe_many_as
        (None, 4, "torchrun"),
        ("swift", 1, "python"),  # no probe_as: by the count
        ("deepspeed", 1, "torchrun"),
        ("llamafactory", 8, "torchrun"),
        ("axolotl", 2, "accelerate"),
        ("trl", 1, "accelerate"),
        ("accelerate", 1, "accelerate"),
    ],
)
def test_the_probe_picks_its_launcher_from_the_spec(
    name: str | None, processes: int | None, probed: str
) -> None:
    chosen = launchers.probe_launcher(name, processes)
    assert chosen.name == probed
    assert chosen.local_start is not None


def _spec(launcher: str, **kw: object) -> ProbeSpec:
    return ProbeSpec(
        run="r",
        launcher=launcher,
        nproc=kw.pop("nproc", 1),  # type: ignore[arg-type]
        device="cpu",
        model_name="m",
        model_source="catalog",
        hf_config={},
        seq_len=8,
        **kw,  # type: ignore[arg-type]
    )


def test_the_workers_command_line_is_built_from_the_launchers_local_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probe_launcher, "free_port", lambda: 12345)
    path = tmp_path / "spec.json"
    worker = ["-m", "advisor.pipeline.probe.worker", str(path)]
    assert probe_launcher.command_for(_spec("python"), path, "py") == ["py", *worker]
    torch = _spec("torchrun", nproc=None, nproc_arg="gpu")
    assert probe_launcher.command_for(torch, path, "py") == [
        "py", "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
        "--nproc_per_node", "gpu", *worker,
    ]  # fmt: skip
    acc = _spec(
        "accelerate",
        accelerate_config="/x/acc.yaml",
        accelerate_flags={"num_processes": "2", "multi_gpu": "true", "use_fsdp": "false"},
    )
    assert probe_launcher.command_for(acc, path, "py") == [
        "py", "-m", "accelerate.commands.launch", "--config_file", "/x/acc.yaml", "--num_processes", "2",
        "--multi_gpu", "--num_machines", "1", "--main_process_port", "12345", *worker,
    ]  # fmt: skip


def test_a_recorded_spec_names_a_launcher_the_probe_can_start() -> None:
    data = datacodec.encode(_spec("torchrun"))
    assert datacodec.validate(ProbeSpec, data).launcher == "torchrun"
    with pytest.raises(datacodec.Invalid):
        datacodec.validate(ProbeSpec, {**data, "launcher": "deepspeed"})


def test_only_spread_processes_name_a_backend() -> None:
    assert describe(2, "cpu", "torchrun") == "2 processes (CPU, gloo)"
    assert describe(2, "cuda", "python") == "2 processes (CUDA)"  # python itself: no process group
    assert describe(1, "cuda", "accelerate") == "1 process (CUDA)"
