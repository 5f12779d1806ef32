"""`deepspeed --hostfile FILE`: the processes are the selected hosts' slots (deepspeed 0.16.4
launcher/runner.py:226-255 reads the file, 293-381 --include/--exclude, 502-514 --num_nodes/--num_gpus);
the form is ms-swift @3602360a examples/train/multi-node/deepspeed/train.sh with its host.txt."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from advisor.sources.hostfile import active_slots, parse_hostfile
from tests.conftest import write_files

HOSTS = "# ms-swift's example\nworker-0 slots=2\nworker-1 slots=2\n"


def _world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str, hosts: str | None = HOSTS) -> object:
    files = {
        "train.sh": f"#!/bin/bash\ndeepspeed {flags} train.py --deepspeed ds.json\n",
        "train.py": "print()\n",
    }
    files["ds.json"] = '{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}\n'
    if hosts is not None:
        files["host.txt"] = hosts
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert not result.errors, result.errors
    (run,) = result.runs
    return run.world_size


@pytest.mark.parametrize(
    ("flags", "world"),
    [
        ("--hostfile=host.txt", 4),
        ("-H host.txt --num_nodes 1", 2),
        ("--hostfile host.txt --num_gpus 1", 2),
        ("--hostfile host.txt --num_accelerators 1", 2),  # --num_gpus's other name
        ("--hostfile host.txt --include worker-1:0", 1),
        ("--hostfile host.txt --exclude worker-0", 2),
    ],
)
def test_the_hostfile_gives_the_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str, world: int
) -> None:
    assert _world(tmp_path, monkeypatch, flags) == world


def test_a_missing_hostfile_means_the_local_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # DeepSpeed warns and "will proceed with training with local resources only" (runner.py:214-217)
    assert _world(tmp_path, monkeypatch, "--hostfile host.txt", hosts=None) == 8


def test_num_accelerators_is_num_gpus_without_a_hostfile_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _world(tmp_path, monkeypatch, "--num_accelerators 2", hosts=None) == 2


def test_a_hostfile_deepspeed_refuses_leaves_the_count_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (
        _world(tmp_path, monkeypatch, "--hostfile host.txt", hosts="worker-0 slots=2\nworker-0 slots=4\n")
        is None
    )


def test_parse_and_select() -> None:
    hosts = parse_hostfile(Path("h"), HOSTS).hosts
    assert hosts == (("worker-0", 2), ("worker-1", 2))
    # the reason names the line, never its text: the file is whatever the launch line names
    assert parse_hostfile(Path("h"), "# c\nworker-0 gpus=2\n").problem == "line 2 is not 'NAME slots=N'"
    assert active_slots(hosts, "worker-0@worker-1:1", "", -1, -1) == {"worker-0": [0, 1], "worker-1": [1]}
    assert active_slots(hosts, "", "worker-1:0", -1, -1) == {"worker-0": [0, 1], "worker-1": [1]}
    assert active_slots(hosts, "worker-9", "", -1, -1) == "Hostname 'worker-9' not found in hostfile"
    # a host named twice has its slots merged (parse_node_config_list), in every version
    assert active_slots(hosts, "worker-0:0@worker-0:1", "", -1, -1) == {"worker-0": [0, 1]}
    assert active_slots(hosts, "worker-0", "", 1, -1) == "Cannot specify num_nodes/gpus with include/exclude"


def test_a_file_that_is_no_hostfile_is_never_quoted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "machine github.com login me password ghp_SECRET123\n"
    files = {"train.sh": "#!/bin/bash\ndeepspeed --hostfile .netrc train.py\n", "train.py": "print()\n"}
    write_files(tmp_path, {**files, ".netrc": secret})
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    shown = repr(result.findings) + repr(result.runs)
    assert "ghp_SECRET123" not in shown and "github.com" not in shown
    (run,) = result.runs
    assert run.world_size is None
