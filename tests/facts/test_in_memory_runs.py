"""run_facts_of (tests/facts/conftest.py) builds a run in memory without discovery: these projects are
built both ways, in memory and on disk through discovery (facts_of), and every fact of every namespace
must agree, so a fact test moved to memory still tests what a check computes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from advisor.core.provenance import Namespace
from tests.facts.conftest import PROJECT
from tests.facts.test_lora_branch import LAUNCH, SCRIPT

TRAIN = "from transformers import Trainer, TrainingArguments\nargs = TrainingArguments('out')\n"
PROJECTS = {
    "accelerate config named by the launch": {
        "launch.sh": "accelerate launch --config_file acc.yaml train.py --per_device_train_batch_size 4\n",
        "acc.yaml": "distributed_type: MULTI_GPU\nnum_machines: 2\nnum_processes: 16\nmixed_precision: no\n",
        "train.py": TRAIN,
    },
    "training file naming its DeepSpeed config": {
        "launch.sh": "torchrun --nproc_per_node 4 train.py args.yaml\n",
        "args.yaml": "per_device_train_batch_size: 2\ngradient_accumulation_steps: 4\n"
        "deepspeed: ds.json\nbf16: true\n",
        "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}}\n',
        "train.py": TRAIN,
    },
    "DeepSpeed flag on the command": {
        "launch.sh": "deepspeed --num_gpus 2 train.py --deepspeed ds.json --fp16 True\n",
        "ds.json": '{"fp16": {"enabled": true}, "zero_optimization": {"stage": 2}}\n',
        "train.py": TRAIN,
    },
    "a script's own dataclasses deciding its LoRA branch": {
        "launch.sh": LAUNCH.format(extra=""),
        "qlora.py": SCRIPT.format(test="not args.full_finetune"),
    },
    "a config alone": {
        "args.yaml": "per_device_train_batch_size: 8\ndataloader_num_workers: 0\nbf16: true\n",
    },
}


def _plain(names: dict[str, Any], folder: str) -> dict[str, str]:
    """Every fact as text, with the project's folder (however it is shown) taken out of it."""
    prefix = re.compile(r"(\.\./)*" + re.escape(folder.lstrip("/")) + "/|" + re.escape(folder) + "/")
    out: dict[str, str] = {}

    def walk(ns: Namespace, path: str) -> None:
        for key, item in ns.items():
            if isinstance(item, Namespace):
                walk(item, f"{path}.{key}")
            else:
                shown = item.value if item.unknown is None else ("unknown", item.unknown)
                out[f"{path}.{key}"] = prefix.sub("", repr(shown))

    for name, ns in names.items():
        if isinstance(ns, Namespace):
            walk(ns, name)
    return out


@pytest.mark.parametrize("files", PROJECTS.values(), ids=PROJECTS.keys())
@pytest.mark.parametrize("hardware", [None, "8xH100-SXM"])
def test_in_memory_and_on_disk_give_the_same_facts(files, hardware, run_facts_of, facts_of, tmp_path) -> None:
    memory = _plain(run_facts_of(files, hardware=hardware), str(PROJECT))
    disk = _plain(facts_of(files, hardware=hardware), str(Path(tmp_path).resolve()))
    assert {"batch", "run", "precision", "placement"} <= {k.split(".")[0] for k in memory}
    assert {k: (v, disk.get(k)) for k, v in memory.items() if v != disk.get(k)} == {}
    assert set(disk) == set(memory)


def test_a_file_no_command_names_stays_out_of_the_run(run_facts_of) -> None:
    # discovery would make ds.json a run of its own; in memory it is not put into the launch's run
    names = run_facts_of(
        {
            "launch.sh": "torchrun --nproc_per_node 2 train.py\n",
            "ds.json": '{"zero_optimization": {"stage": 3}}\n',
        }
    )
    assert names["run"].strategy == "ddp" and names["plan"].spec.deepspeed is None
