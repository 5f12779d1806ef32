"""Regressions found by benchmarks/fuzz_inputs.py (seed 11, 10,000 examples): each was an internal error
(exit 3) or a hang; each is now a finding, a clear error naming file and line, or an answer in bounded time.
Every case runs the real CLI in its own process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import write_files

HUGE = "9" * 5000  # past Python's 4,300-digit int() limit


def _cli(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"HF_HUB_OFFLINE": "1", "GPU_ADVISE_DEBUG": "1", "PATH": "/usr/bin:/bin"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1, 2), out
    assert "Traceback" not in out and "internal error" not in out, out
    return proc


def test_a_launcher_flag_named_launcher_keeps_the_launcher_name(tmp_path: Path) -> None:
    # deepspeed's own `--launcher pdsh` replaced the run's launcher name with its value (an int made the
    # text report raise TypeError)
    write_files(
        tmp_path,
        {
            "pyproject.toml": "",
            "launch.sh": "deepspeed --launcher pdsh --num_gpus 2 train.py --deepspeed ds.json\n",
            "train.py": "print(1)\n",
            "ds.json": '{"train_micro_batch_size_per_gpu": 2}\n',
            "other.sh": "deepspeed -H hosts --launcher 1 train.py --deepspeed ds.json\n",
        },
    )
    proc = _cli(tmp_path, "check", ".", "--format", "text")
    assert "run launch.sh, deepspeed, world size 2" in proc.stdout
    assert "run other.sh, deepspeed," in proc.stdout


def test_a_pin_with_a_5000_digit_version_is_not_used(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "setup.cfg": f"[options]\ninstall_requires =\n    transformers=={HUGE}\n",
            "args.yaml": "evaluation_strategy: steps\nper_device_train_batch_size: 2\n",
        },
    )
    _cli(tmp_path, "check", ".")


def test_cuda_visible_devices_and_sbatch_counts_of_5000_digits(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "pyproject.toml": "",
            "other.sh": f"export CUDA_VISIBLE_DEVICES={HUGE}\ntorchrun --nproc_per_node 2 train.py a.yaml\n",
            "slurm.sh": f"#!/bin/bash\n#SBATCH --gpus-per-node=h100:{HUGE}\ntorchrun train.py a.yaml\n",
            "train.py": "print(1)\n",
            "a.yaml": "per_device_train_batch_size: 2\n",
        },
    )
    _cli(tmp_path, "check", ".")


def test_a_variable_that_names_itself_many_times_is_followed_in_linear_time(tmp_path: Path) -> None:
    # X=${X:-${X:-...}} names X eight times: the recursive search for a GPU-counting substitution
    # looked at 8**7 paths, each over the whole 10 KB word (88-100 s before, fuzz seed 11)
    nested = "${X:-" * 8 + "9" * 10_000 + "}" * 8
    launch = f"X={nested}\ntorchrun --nproc_per_node ${{X/a/b}} --nnodes ${{X/a/b}} train.py a.yaml\n"
    write_files(tmp_path, {"pyproject.toml": "", "launch.sh": launch, "train.py": "print(1)\n", "a.yaml": ""})
    started = time.monotonic()
    _cli(tmp_path, "check", ".", timeout=120)
    assert time.monotonic() - started < 20


def test_settings_and_hardware_numbers_past_what_the_estimator_computes_with(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            ".gpu-advise.toml": '[[runs]]\npath = "args.yaml"\ndataset-samples = ' + "1" + "0" * 400 + "\n",
            "args.yaml": "model_name_or_path: meta-llama/Llama-3.1-8B\n",
            "machine.yaml": "name: m\ngpus: {model: A100-80GB, count: 2, memory_gib: "
            + "1"
            + "0" * 30
            + "}\n",
        },
    )
    proc = _cli(tmp_path, "estimate", ".")
    assert proc.returncode == 2 and ".gpu-advise.toml:" in proc.stderr and "dataset-samples" in proc.stderr
    (tmp_path / ".gpu-advise.toml").unlink()
    proc = _cli(tmp_path, "estimate", ".", "-H", "machine.yaml")
    assert proc.returncode == 2 and "machine.yaml:2:" in proc.stderr and "memory_gib" in proc.stderr


def test_a_project_rule_that_fails_in_baseline_is_a_rule_error_not_an_internal_error(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "pyproject.toml": "",
            "args.yaml": "dataloader_num_workers: 0\n",
            "rules/ORG001-div-zero.yaml": (
                'code: ORG001\nname: div-zero\nseverity: warning\nsummary: s\nwhen: "1 / 0 > 1"\n'
                "at: training.dataloader_num_workers\nmessage: m\ndocs: d\n"
            ),
        },
    )
    proc = _cli(tmp_path, "baseline", "--rules", "rules", ".")
    assert proc.returncode == 2
    assert "gpu-advise: rule error: rule ORG001" in proc.stderr


def test_thresholds_outside_their_meaning_are_a_settings_error(tmp_path: Path) -> None:
    # fuzz seed 12, held out from the fixes above: near-memory-fraction = 1e+308 reached GA404's
    # round(100 * fraction) as infinity ("internal error" under `gpu-advise baseline`)
    write_files(
        tmp_path,
        {
            ".gpu-advise.toml": 'hardware = "1xH100"\n[thresholds]\nnear-memory-fraction = 1e+308\n',
            "args.yaml": "model_name_or_path: meta-llama/Llama-3.1-8B\n",
        },
    )
    proc = _cli(tmp_path, "baseline", ".")
    assert proc.returncode == 2 and ".gpu-advise.toml:" in proc.stderr
    assert "near-memory-fraction" in proc.stderr
