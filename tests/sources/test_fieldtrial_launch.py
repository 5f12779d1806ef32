"""Launch forms from the 2026-12-01 field trial on held-out repositories (Qwen, DeepSpeedExamples,
ms-swift): which files a run reads. Each project is a small hand-written copy of the upstream
form, cited where it is used; the checks go through advisor.pipeline.check.run_check, as a user's files do."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from advisor.report.results import CheckResult
from tests.conftest import write_files

TORCH_SCRIPT = "import torch\n"
HF_SCRIPT = "from transformers import HfArgumentParser, TrainingArguments\n"


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / ".git").mkdir()
    write_files(tmp_path, files)
    return tmp_path


def _check(paths: list[Path], hardware: str | None = "8xH100-SXM") -> CheckResult:
    result = run_check(paths, CheckOptions(hardware=hardware))
    assert not result.errors, result.errors
    return result


def _codes(result: CheckResult, code: str) -> list[str]:
    return [f.message for f in result.findings if f.rule == code]


def _ds_name(result: CheckResult) -> list[str | None]:
    return [p.spec.deepspeed.path.name if p.spec.deepspeed is not None else None for p in result.plans]


# --- B6: a launch script named relative to the current folder, from a subfolder ----------------

# Qwen @2df8e8a finetune/finetune_ds.sh:67-90, shortened: started from the repository root, it names
# finetune.py (at the root) and finetune/ds_config_zero3.json.
QWEN = {
    "finetune.py": HF_SCRIPT,
    "finetune/finetune_ds.sh": "#!/bin/bash\n"
    "torchrun --nproc_per_node 2 finetune.py \\\n"
    "    --per_device_train_batch_size 1 \\\n"
    "    --deepspeed finetune/ds_config_zero3.json\n",
    "finetune/ds_config_zero3.json": '{"zero_optimization": {"stage": 3}, '
    '"train_micro_batch_size_per_gpu": "auto"}\n',
}


@pytest.mark.parametrize("absolute", [False, True])
def test_relative_script_from_a_subfolder_finds_what_the_root_holds(tmp_path, monkeypatch, absolute) -> None:
    root = _project(tmp_path, QWEN)
    monkeypatch.chdir(root / "finetune")  # `cd qwen/finetune && gpu-advise check finetune_ds.sh`
    seed = Path("finetune_ds.sh")
    result = _check([seed.resolve() if absolute else seed])
    assert _codes(result, "GA004") == []  # was: script file 'finetune.py' does not exist
    [plan] = result.plans
    assert plan.spec.script is not None and plan.spec.script.path.name == "finetune.py"
    assert _ds_name(result) == ["ds_config_zero3.json"]


# --- A1: DeepSpeed's own --deepspeed switch and --deepspeed_config --------------------------------

# DeepSpeedExamples @83757d9c training/imagenet/run_ds_fp16.sh:3 (the argparse flags of
# deepspeed/__init__.py add_config_arguments: --deepspeed store_true, --deepspeed_config FILE)
IMAGENET_DS = (
    '{"train_batch_size": 256, "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 1}}\n'
)


@pytest.mark.parametrize(
    "line",
    [
        "deepspeed main.py -a resnet50 --deepspeed --deepspeed_config config/ds.json --dist-backend nccl",
        "deepspeed main.py --deepspeed_config config/ds.json --deepspeed",
        "torchrun --nproc_per_node 8 main.py --deepspeed --deepspeed_config config/ds.json",
        "deepspeed main.py --deepscale --deepscale_config config/ds.json",
    ],
)
def test_bare_deepspeed_switch_takes_its_config_from_deepspeed_config(tmp_path, monkeypatch, line) -> None:
    _project(
        tmp_path, {"run.sh": f"#!/bin/bash\n{line}\n", "main.py": TORCH_SCRIPT, "config/ds.json": IMAGENET_DS}
    )
    monkeypatch.chdir(tmp_path)
    result = _check([Path(".")])
    # one run that holds the config (it was a second, standalone run, and the first had none)
    assert [p.name for p in result.plans] == ["run.sh"]
    assert _ds_name(result) == ["ds.json"]
    assert _codes(result, "GA004") == []


def test_deepspeed_with_a_file_is_still_the_trainers_flag(tmp_path, monkeypatch) -> None:
    files = {
        "run.sh": "#!/bin/bash\ndeepspeed train.py --deepspeed ds.json --deepspeed_config other.json\n",
        "train.py": HF_SCRIPT,
        "ds.json": IMAGENET_DS,
        "other.json": IMAGENET_DS,
    }
    _project(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    assert _ds_name(_check([Path("run.sh")])) == ["ds.json"]


# --- C1/C3: ms-swift's launcher ---------------------------------------------------------------------

# ms-swift @3602360a examples/train/multi-gpu/deepspeed/train_zero2.sh, shortened
SWIFT_ZERO2 = (
    "#!/bin/bash\n"
    "nproc_per_node=2\n"
    "CUDA_VISIBLE_DEVICES=0,1 \\\n"
    "NPROC_PER_NODE=$nproc_per_node \\\n"
    "swift sft \\\n"
    "    --model Qwen/Qwen2.5-7B-Instruct \\\n"
    "    --per_device_train_batch_size 1 \\\n"
    "    --gradient_accumulation_steps $(expr 16 / $nproc_per_node) \\\n"
    "    --deepspeed zero2\n"
)


def test_swift_sft_is_a_run_and_its_deepspeed_preset_is_no_file(tmp_path, monkeypatch) -> None:
    _project(tmp_path, {"examples/train_zero2.sh": SWIFT_ZERO2})
    monkeypatch.chdir(tmp_path)
    result = _check([Path("examples/train_zero2.sh")])
    [plan] = result.plans  # was: 0 runs
    command = plan.spec.command
    assert command.launcher == "swift" and command.subcommand
    assert command.env["NPROC_PER_NODE"].text == "2"
    assert command.script_args["per_device_train_batch_size"].text == "1"
    assert command.script_args["deepspeed"].text == "zero2"
    # swift/arguments/sft_args.py:259-267 maps zero2 to its own swift/config/zero2.json
    assert _codes(result, "GA004") == []
    assert plan.spec.references == [] and plan.spec.deepspeed is None


@pytest.mark.parametrize("preset", ["zero0", "zero1", "zero3", "zero2_offload", "zero3_offload"])
def test_every_swift_preset_and_its_route_files(tmp_path, monkeypatch, preset) -> None:
    files = {
        # ms-swift @3602360a examples/train/multi-node/torchrun/train_node1.sh: its route file under torchrun
        "torchrun.sh": f"torchrun --nproc_per_node=4 swift/cli/sft.py --model m --deepspeed {preset}\n",
        "rlhf.sh": f"#!/bin/bash\nNPROC_PER_NODE=4 swift rlhf --rlhf_type dpo --deepspeed {preset}\n",
        # examples/train/multi-node/ray/sft.sh + sft.yaml: `swift sft CONFIG` with `deepspeed: zero3`
        "sft.sh": "#!/bin/bash\nswift sft cfg/sft.yaml\n",
        "cfg/sft.yaml": f"model: Qwen/Qwen2.5-7B\nper_device_train_batch_size: 1\ndeepspeed: {preset}\n",
        "swift/cli/sft.py": "from swift.pipelines import sft_main\n",
    }
    _project(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    result = _check([Path(".")])
    assert sorted(p.name for p in result.plans) == ["rlhf.sh", "sft.sh", "torchrun.sh"]
    assert _codes(result, "GA004") == []


def test_a_real_file_after_swift_deepspeed_is_still_checked(tmp_path, monkeypatch) -> None:
    files = {"run.sh": "#!/bin/bash\nswift sft --model m --deepspeed ds_zero2.json\n"}
    _project(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    result = _check([Path("run.sh")])
    assert len(_codes(result, "GA004")) == 1 and "ds_zero2.json" in _codes(result, "GA004")[0]
    # a plain script's `--deepspeed zero2` is a file name: there is no ms-swift to map it
    write_files(
        tmp_path, {"run.sh": "#!/bin/bash\ntorchrun train.py --deepspeed zero2\n", "train.py": HF_SCRIPT}
    )
    assert len(_codes(_check([Path("run.sh")]), "GA004")) == 1


@pytest.mark.parametrize("words", [["swift", "infer"], ["swift", "deploy"], ["swift", "export"]])
def test_swift_commands_that_train_nothing_start_no_run(tmp_path, monkeypatch, words) -> None:
    _project(tmp_path, {"run.sh": f"#!/bin/bash\n{' '.join(words)} --model m\n"})
    monkeypatch.chdir(tmp_path)
    assert _check([Path("run.sh")]).plans == []


# --- A5: eval of a command held in a variable ------------------------------------------------------

# DeepSpeedExamples @83757d9c training/BingBertSquad/run_squad_deepspeed.sh:35-64, shortened
SQUAD = (
    "#!/bin/bash\n"
    "NUM_NODES=1\n"
    "config_json=ds_config.json\n"
    'run_cmd="deepspeed --num_nodes ${NUM_NODES} --num_gpus 4 \\\n'
    "       train.py \\\n"
    "       --seed 3 \\\n"
    "       --deepspeed \\\n"
    "       --deepspeed_config ${config_json} \\\n"
    '       "\n'
    "echo ${run_cmd}\n"
    "eval QUOTE\n"
)


@pytest.mark.parametrize("form", ["${run_cmd}", '"$run_cmd"', "$run_cmd"])
def test_eval_of_a_command_variable_is_read_as_the_command(tmp_path, monkeypatch, form) -> None:
    files = {
        "run.sh": SQUAD.replace("QUOTE", form),
        "train.py": TORCH_SCRIPT,
        "ds_config.json": '{"train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 1}\n',
    }
    _project(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    result = _check([Path("run.sh")])
    [plan] = result.plans  # was: 0 runs from the script
    command = plan.spec.command
    assert command.launcher == "deepspeed" and command.script.text == "train.py"
    assert command.launcher_args["num_gpus"].text == "4"
    assert (command.launcher_args["num_gpus"].span.line, command.script.span.line) == (4, 5)  # in the string
    assert _ds_name(result) == ["ds_config.json"]
    assert result.runs[0].world_size == 4


def test_eval_of_a_literal_string_and_of_nothing(tmp_path, monkeypatch) -> None:
    files = {
        "run.sh": '#!/bin/bash\neval\neval "torchrun --nproc_per_node 2 train.py --seed 3"\neval "$UNSET"\n',
        "train.py": TORCH_SCRIPT,
    }
    _project(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    [plan] = _check([Path("run.sh")]).plans
    assert plan.spec.command.launcher == "torchrun" and plan.spec.command.script_args["seed"].text == "3"
