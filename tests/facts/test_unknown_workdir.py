"""A relative path opened from a working folder that is not known to be this repository (issue 20, corpus3
false alarms GA004 x2 on OpenBMB/MiniCPM's LLaMA-Factory recipe), through the real CLI.

Hand-written copies of the upstream form: MiniCPM's finetune/llama_factory_example/single_node.sh runs
`torchrun ... src/train.py /root/.../LLaMA-Factory/examples/minicpm/minicpm_sft.yaml` from a LLaMA-Factory
checkout (its README: `cd LLaMA-Factory; bash single_node.sh`), and the recipe's `deepspeed:
examples/deepspeed/ds_z2_config.json` names a file of that checkout. Where the folder is known (the
launch's own files are found from it), a missing file stays a GA004 error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.sources.cli_json import TRAIN_FLAGS, check, project

LF_RECIPE = (
    "### model\n"
    "model_name_or_path: openbmb/MiniCPM-2B-sft-bf16\n"
    "### method\n"
    "stage: sft\n"
    "do_train: true\n"
    "finetuning_type: full\n"
    "deepspeed: examples/deepspeed/ds_z2_config.json\n"
    "### dataset\n"
    "dataset: glaive_toolcall_en\n"
    "template: cpm\n"
    "cutoff_len: 1024\n"
    "### train\n"
    "output_dir: saves/minicpm\n"
    "per_device_train_batch_size: 2\n"
    "gradient_accumulation_steps: 4\n"
    "bf16: true\n"
)


def single_node(config: str, before: str = "") -> str:
    return (
        "#!/bin/bash\n"
        "NPROC_PER_NODE=8\n"
        f"{before}"
        "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 torchrun \\\n"
        "    --nproc_per_node $NPROC_PER_NODE --nnodes 1 --master_port 29500 \\\n"
        f"    src/train.py {config}\n"
    )


def ga004(report: dict) -> list[tuple[str, int, str]]:
    return sorted((f["file"], f["line"], f["severity"]) for f in report["findings"] if f["rule"] == "GA004")


def test_a_recipe_for_another_checkout_gets_no_error_on_that_checkouts_files(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "finetune/lf/single_node.sh": single_node(
                "/root/ld/LLaMA-Factory/examples/minicpm/minicpm_sft.yaml"
            ),
            "finetune/lf/minicpm_sft.yaml": LF_RECIPE,
        },
    )
    # before: errors on single_node.sh:5 (src/train.py) and minicpm_sft.yaml:7 (examples/deepspeed/...)
    assert ga004(check(root, ".")) == []
    assert ga004(check(root, "finetune/lf/minicpm_sft.yaml")) == []


def test_the_same_launch_naming_its_config_in_the_repository_keeps_the_error(tmp_path: Path) -> None:
    # the config is found from the script's folder: the launch runs there, and src/train.py is not there
    root = project(
        tmp_path,
        {
            "finetune/lf/single_node.sh": single_node("minicpm_sft.yaml"),
            "finetune/lf/minicpm_sft.yaml": LF_RECIPE,
        },
    )
    assert ga004(check(root, "finetune/lf/single_node.sh")) == [
        ("finetune/lf/minicpm_sft.yaml", 7, "error"),
        ("finetune/lf/single_node.sh", 5, "error"),
    ]


def test_a_launch_of_llamafactory_cli_from_the_repository_keeps_the_deepspeed_error(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"run.sh": "#!/bin/bash\nllamafactory-cli train configs/sft.yaml\n", "configs/sft.yaml": LF_RECIPE},
    )
    assert ga004(check(root, "run.sh")) == [("configs/sft.yaml", 7, "error")]
    # the checkout's file where the launch runs: found
    (root / "examples/deepspeed").mkdir(parents=True)
    (root / "examples/deepspeed/ds_z2_config.json").write_text('{"zero_optimization": {"stage": 2}}\n')
    assert ga004(check(root, "run.sh")) == []


def test_a_cd_to_a_folder_not_known_or_outside_leaves_the_files_there_unknown(tmp_path: Path) -> None:
    cases = {"cd $LLAMA_FACTORY_DIR\n": [], "cd /opt/LLaMA-Factory\n": [], "cd ../sft\n": [6]}
    for i, (cd, want) in enumerate(cases.items()):
        (tmp_path / str(i)).mkdir()
        root = project(tmp_path / str(i), {"scripts/run.sh": single_node("examples/minicpm/sft.yaml", cd)})
        # a cd into the project is a known folder: src/train.py and the config are missing there
        got = [line for file, line, severity in ga004(check(root, "scripts/run.sh")) if severity == "error"]
        assert got == want * 2 if want else got == [], (cd, got)


def test_a_plain_training_yaml_alone_still_resolves_beside_itself(tmp_path: Path) -> None:
    # no installed tool reads it: its deepspeed file is looked for beside it and up to the root, as before
    root = project(
        tmp_path,
        {
            "configs/sft.yaml": "per_device_train_batch_size: 4\ndeepspeed: ds_zero_3.json\n",
            "train.py": TRAIN_FLAGS,
        },
    )
    assert ga004(check(root, "configs/sft.yaml")) == [("configs/sft.yaml", 2, "error")]


def test_an_axolotl_config_alone_names_a_file_of_the_axolotl_checkout(tmp_path: Path) -> None:
    # axolotl's examples/*.yml name deepspeed_configs/zero2.json of its own checkout, run by `axolotl train`
    config = (
        "base_model: NousResearch/Meta-Llama-3-8B\n"
        "sequence_len: 4096\n"
        "micro_batch_size: 2\n"
        "num_epochs: 1\n"
        "deepspeed: deepspeed_configs/zero2.json\n"
    )
    root = project(tmp_path, {"examples/llama-3/fft.yml": config})
    assert ga004(check(root, "examples/llama-3/fft.yml")) == []
    # run by a launch of the project, from its folder: missing there is an error
    (root / "train.sh").write_text(
        "#!/bin/bash\naccelerate launch -m axolotl.cli.train examples/llama-3/fft.yml\n"
    )
    assert ga004(check(root, "train.sh")) == [("examples/llama-3/fft.yml", 5, "error")]


def test_the_plan_view_says_what_is_unknown_and_why(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "finetune/lf/single_node.sh": single_node(
                "/root/ld/LLaMA-Factory/examples/minicpm/minicpm_sft.yaml"
            ),
            "finetune/lf/minicpm_sft.yaml": LF_RECIPE,
        },
    )
    env = dict(os.environ) | {"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "plan", "."],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [line.strip() for line in proc.stdout.splitlines()]
    assert any(
        line.startswith("unknown: src/train.py")
        and "because the command names /root/ld/LLaMA-Factory" in line
        for line in lines
    ), proc.stdout
    assert any(
        line.startswith("unknown: examples/deepspeed/ds_z2_config.json") and "LLaMA-Factory opens it" in line
        for line in lines
    ), proc.stdout
    assert not any(line.startswith("missing:") for line in lines), proc.stdout
