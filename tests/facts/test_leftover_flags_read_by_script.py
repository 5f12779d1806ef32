"""Flags a script reads back from its leftover strings are neither dropped nor refused, via the CLI.

Upstream form, hand-copied and shortened: meta-math/MetaMath train_math.py:251-252
    model_args, data_args, training_args, remaining_args = parser.parse_args_into_dataclasses(
        return_remaining_strings=True)
    data_args.data_length = int(remaining_args[1])
HfArgumentParser hands back the strings no dataclass takes, in the order written (transformers
hf_argparser.py parse_args_into_dataclasses: argparse parse_known_args): `--data_length 1000` is
remaining_args[0:2], so the script reads its value; a second unknown flag after it is still set
aside (GA008)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sources.cli_json import check, project

SCRIPT = """from dataclasses import dataclass, field

import transformers


@dataclass
class DataArguments:
    data_path: str = field(default=None)


def train():
    parser = transformers.HfArgumentParser((DataArguments, transformers.TrainingArguments))
    data_args, training_args, remaining_args = parser.parse_args_into_dataclasses(
        return_remaining_strings=True
    )
    {read}


if __name__ == "__main__":
    train()
"""
LAUNCH = (
    "#!/bin/bash\n"
    "torchrun --nproc_per_node 2 train.py --data_path d.json --data_length 1000 {extra}"
    "--output_dir out --per_device_train_batch_size 2\n"
)


def _dropped(tmp_path: Path, read: str, extra: str = "") -> list[tuple[str, int]]:
    root = project(tmp_path, {"run.sh": LAUNCH.format(extra=extra), "train.py": SCRIPT.format(read=read)})
    report = check(root, "run.sh", "-H", "8xH100-SXM")
    return [
        (f["rule"], f["message"].split()[0]) for f in report["findings"] if f["rule"] in ("GA008", "GA002")
    ]


def test_the_flag_the_script_reads_back_is_not_dropped(tmp_path: Path) -> None:
    assert _dropped(tmp_path, "length = int(remaining_args[1])") == []  # was: GA008 --data_length


def test_a_flag_after_it_is_still_dropped(tmp_path: Path) -> None:
    found = _dropped(tmp_path, "length = int(remaining_args[1])", extra="--data_subset 7 ")
    assert found == [("GA008", "--data_subset")]


@pytest.mark.parametrize(
    "read", ["for arg in remaining_args:\n        print(arg)", "x = remaining_args[len(remaining_args) - 1]"]
)
def test_a_script_that_reads_them_all_drops_none(tmp_path: Path, read: str) -> None:
    assert _dropped(tmp_path, read, extra="--data_subset 7 ") == []


def test_a_script_that_only_checks_them_drops_them(tmp_path: Path) -> None:
    found = _dropped(tmp_path, "if len(remaining_args) > 8:\n        raise ValueError(remaining_args)")
    assert found == [("GA008", "--data_length")]
