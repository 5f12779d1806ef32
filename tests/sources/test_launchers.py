"""Launch forms people really write (issue 11 item 4), read by the shell package and the launcher
registry. Each real form cites the public file it is taken from (shortened to the words that matter);
the expectations come from the launchers' own sources, cited where they are used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, build_plans
from advisor.sources import launchers
from advisor.sources.launch import LaunchCommand, read_launch
from advisor.sources.launchers.spec import LauncherSpec
from advisor.sources.settings import Settings
from tests.conftest import write_files

TRAIN_ARGS = "per_device_train_batch_size: 2\noutput_dir: out\n"
SCRIPT = "from transformers import HfArgumentParser, TrainingArguments\n"


def commands(text: str) -> list[LaunchCommand]:
    doc = read_launch(Path("run.sh"), "#!/bin/bash\n" + text)
    assert not doc.problems, doc.problems
    return doc.data.commands


def only(text: str) -> LaunchCommand:
    [cmd] = commands(text)
    return cmd


def texts(words: dict) -> dict[str, str | None]:
    return {k: w.text for k, w in words.items()}


def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], hardware: str) -> list[Any]:
    """(name, fact namespaces) of every run the project has."""
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    plans, _ = build_plans([Path(".")], CheckOptions(hardware=hardware), Settings())
    return [(p.name, run_names(p), p) for p in plans]


def missing(names: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r.role, r.raw) for r in names["run"].missing_references or []]


# --- the three forms of issue 11 ----------------------------------------------------------------


def test_llamafactory_env_form_is_torchrun_with_four_processes(tmp_path, monkeypatch) -> None:
    # LLaMA-Factory 0.9.5 src/llamafactory/launcher.py:60-68: `train` with FORCE_TORCHRUN runs
    # torchrun --nnodes $NNODES --nproc_per_node $NPROC_PER_NODE over the config file.
    files = {
        "run.sh": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,1,2,3 FORCE_TORCHRUN=1 NNODES=1 NPROC_PER_NODE=4 "
        "llamafactory-cli train cfg.yaml\n",
        "cfg.yaml": "stage: sft\ndo_train: true\nmodel_name_or_path: gpt2\n" + TRAIN_ARGS,
    }
    [(_, names, plan)] = runs(tmp_path, monkeypatch, files, "8xH100-SXM")
    assert names["batch"].world_size == 4 and names["batch"].nodes == 1
    assert missing(names) == []  # 'train' is llamafactory-cli's command word, not a script file
    assert plan.spec.training is not None and plan.spec.training.path.name == "cfg.yaml"


def test_bash_array_of_torchrun_flags_gives_world_size_four(tmp_path, monkeypatch) -> None:
    files = {
        "run.sh": "#!/bin/bash\nDISTRIBUTED_ARGS=(--nproc_per_node 4 --nnodes 1)\n"
        'torchrun "${DISTRIBUTED_ARGS[@]}" train.py train.yaml\n',
        "train.py": SCRIPT,
        "train.yaml": TRAIN_ARGS,
    }
    [(_, names, plan)] = runs(tmp_path, monkeypatch, files, "8xH100-SXM")
    assert names["batch"].world_size == 4
    cmd = plan.spec.command
    assert cmd.script.text == "train.py"
    # the value's position is where the array element is written
    assert (cmd.launcher_args["nproc_per_node"].span.line, cmd.launcher_args["nproc_per_node"].span.col) == (
        2,
        36,
    )


def test_array_that_cannot_be_followed_is_unknown_not_a_number() -> None:
    cmd = only('ARGS=($(nproc) 1)\ntorchrun --nproc_per_node "${ARGS[0]}" train.py\n')
    word = cmd.launcher_args["nproc_per_node"]
    assert word.text is None and word.unknown
    cmd = only('declare -A M=([n]=4)\ntorchrun --nproc_per_node "${M[n]}" train.py\n')
    assert cmd.launcher_args["nproc_per_node"].text is None


def test_array_forms_follow_bash() -> None:
    cmd = only(
        'A=(--nproc_per_node 2)\nA+=(--nnodes "3")\ntorchrun ${A[@]} train.py --n ${#A[@]} --second ${A[1]}\n'
    )
    assert texts(cmd.launcher_args) == {"nproc_per_node": "2", "nnodes": "3"}
    assert texts(cmd.script_args) == {"n": "4", "second": "2"}


def test_deepspeed_config_flag_and_positional_training_file_are_one_run(tmp_path, monkeypatch) -> None:
    # HfArgumentParser gives nargs="+" only to list fields (transformers 5.24 hf_argparser.py:220-222),
    # so --deepspeed takes one word; the sole .yaml word is the file the script hands to
    # parse_yaml_file (hf_argparser.py:408).
    files = {
        "run.sh": "#!/bin/bash\ndeepspeed --num_gpus 2 train.py --deepspeed ds.json t.yaml\n",
        "train.py": SCRIPT,
        "t.yaml": TRAIN_ARGS,
        "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}\n',
    }
    found = runs(tmp_path, monkeypatch, files, "4xH100-NVL")
    assert [name for name, _, _ in found] == ["run.sh"]
    [(_, names, plan)] = found
    assert missing(names) == []
    assert plan.spec.deepspeed.path.name == "ds.json" and plan.spec.training.path.name == "t.yaml"
    assert names["batch"].world_size == 2


def test_list_flags_still_take_several_words() -> None:
    # lun2hang/playgemma_textcls_sft gemma2b_sft_chat.sh: --lora_target_modules q_proj k_proj v_proj o_proj
    cmd = only(
        "accelerate launch --num_processes=1 sft.py --lora_r 16 --lora_alpha 32 \\\n"
        "    --lora_target_modules q_proj k_proj v_proj o_proj --report_to wandb tensorboard\n"
    )
    assert cmd.script_args["lora_target_modules"].text == "q_proj k_proj v_proj o_proj"
    assert cmd.script_args["report_to"].text == "wandb tensorboard"  # report_to: list|str
    assert texts(cmd.launcher_args) == {"num_processes": "1"}


# --- real launch forms from public repositories -------------------------------------------------


def test_torchrun_dashed_flag_names() -> None:
    # eth-easl/fmengine scripts/finetune/finetune_llama_3b.sh
    cmd = only(
        "torchrun --nnodes 1 --nproc-per-node 4 --node_rank 0 \\\n cli/train.py \\\n"
        "    --max_seq_len 2048 \\\n    --deepspeed_config ./configs/llama_lessmem.json\n"
    )
    assert cmd.launcher == "torchrun" and cmd.script.text == "cli/train.py"
    assert texts(cmd.launcher_args) == {"nnodes": "1", "nproc_per_node": "4", "node_rank": "0"}
    assert cmd.script_args["deepspeed_config"].text == "./configs/llama_lessmem.json"


def test_deepspeed_after_cd_and_conda_activate_chain() -> None:
    # cxcscmu/FactMM-RAG src/generator/vqa/train_llava_vqa.sh (LLaVA's train_mem.py)
    cmd = only(
        "cd LLaVA &&\nsource ~/miniconda3/etc/profile.d/conda.sh && \nconda activate llava &&\n"
        "deepspeed --master_port 11234 llava/train/train_mem.py \\\n    --deepspeed ./scripts/zero3.json \\\n"
        "    --mm_vision_select_layer -2 \\\n    --bf16 True\n"
    )
    assert cmd.launcher == "deepspeed" and cmd.script.text == "llava/train/train_mem.py"
    assert texts(cmd.script_args) == {
        "deepspeed": "./scripts/zero3.json",
        "mm_vision_select_layer": "-2",
        "bf16": "True",
    }
    assert (cmd.span.line, cmd.span.col) == (5, 1)


def test_deepspeed_include_then_commented_out_flags() -> None:
    # yuanzhoulvpi2017/zero_nlp train_llava/run_zero2.sh: the command ends before the commented lines
    cmd = only(
        "deepspeed --include localhost:1,2,3 run.py \\\n    --deepspeed ds_zero2_no_offload.json \\\n"
        "    --logging_steps 10 \n    # --model_max_length 2048\n\n    # --save_steps 10 \\ \n"
    )
    assert texts(cmd.launcher_args) == {"include": "localhost:1,2,3"}
    assert texts(cmd.script_args) == {"deepspeed": "ds_zero2_no_offload.json", "logging_steps": "10"}


def test_deepspeed_module_with_include() -> None:
    # xiusic/Rubric-RM rubric_rm/OpenRLHF/run_baselines/2sft_math18k_code_2_5k_skyfiltered_qwen14b.sh
    cmd = only(
        "deepspeed --include localhost:0,1,2,3,4,5,6,7 --module openrlhf.cli.train_sft \\\n"
        "   --save_steps -1 \\\n   --micro_train_batch_size 1 \\\n   --bf16 \\\n   --zero_stage 3\n"
    )
    assert cmd.module and cmd.script.text == "openrlhf.cli.train_sft"
    assert texts(cmd.script_args) == {
        "save_steps": "-1",
        "micro_train_batch_size": "1",
        "bf16": "true",
        "zero_stage": "3",
    }


def test_deepspeed_module_on_every_gpu(tmp_path, monkeypatch) -> None:
    # ChenmienTan/LIMO scripts/train_qwen_1.5b.sh ("require 2 GPUs": deepspeed takes every visible GPU)
    files = {
        "run.sh": "#!/bin/bash\ndeepspeed --module openrlhf.cli.train_sft \\\n    --zero_stage 3 \\\n"
        "    --bf16 \\\n    --micro_train_batch_size 1 \\\n    --train_batch_size 16\n"
    }
    [(_, names, plan)] = runs(tmp_path, monkeypatch, files, "2xH100-PCIe")
    assert plan.spec.command.module and missing(names) == []
    assert names["batch"].world_size == 2


def test_accelerate_with_log_level_prefix_and_redirect(tmp_path, monkeypatch) -> None:
    # weirayao/X-R1 scripts/run_sanity_check_a100.sh
    files = {
        "run.sh": "#!/bin/bash\nACCELERATE_LOG_LEVEL=info accelerate launch \\\n"
        "--config_file recipes/zero3.yaml \\\n"
        "--num_processes=15 src/x_r1/grpo.py \\\n--config recipes/X_R1_zero_7B_config_a100.yaml \\\n"
        "> ./output/x_r1_7B_sampling_a100.log 2>&1\n",
    }
    cmd = only(files["run.sh"].split("\n", 1)[1])
    assert texts(cmd.launcher_args) == {"config_file": "recipes/zero3.yaml", "num_processes": "15"}
    assert texts(cmd.env) == {"ACCELERATE_LOG_LEVEL": "info"}
    assert texts(cmd.script_args) == {"config": "recipes/X_R1_zero_7B_config_a100.yaml"}
    [(_, names, _)] = runs(tmp_path, monkeypatch, files, "8xH100-SXM")
    assert names["batch"].world_size == 15  # --num_processes is the total (accelerate launch)


def test_continuation_into_a_comment_line_ends_the_command() -> None:
    # garipovroma/open-r1 run_grpo_single_gpu.sh: `\` then `# --main_process_port 6522`
    cmd = only(
        "ACCELERATE_LOG_LEVEL=info \\\n"
        "    accelerate launch --config_file recipes/accelerate_configs/zero3_single_gpu.yaml \\\n"
        "    src/open_r1/grpo.py --config recipes/grpo/config_single_gpu.yaml \\\n"
        "    --vllm_mode colocate \\\n"
        "    # --main_process_port 6522\n"
    )
    assert cmd.script.text == "src/open_r1/grpo.py"
    assert texts(cmd.script_args) == {
        "config": "recipes/grpo/config_single_gpu.yaml",
        "vllm_mode": "colocate",
    }
    assert "main_process_port" not in cmd.launcher_args


def test_exported_visible_devices_and_hydra_override() -> None:
    # MAOJIASONG/TinyZero-TRL scripts/math.sh
    cmd = only(
        'export CUDA_VISIBLE_DEVICES="0,1,2,3"\n\nACCELERATE_LOG_LEVEL=info accelerate launch \\\n'
        "--main_process_port 29501 \\\n--num_processes=3 \\\n"
        "--config_file recipes/accelerate_configs/zero1.yaml \\\n"
        "src/tinyzero_trl/grpo.py \\\n+math=grpo-deepseek-distill-1.5b-inst\n"
    )
    assert texts(cmd.env) == {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "ACCELERATE_LOG_LEVEL": "info"}
    assert cmd.launcher_args["num_processes"].text == "3"
    assert [w.text for w in cmd.positional] == ["+math=grpo-deepseek-distill-1.5b-inst"]


def test_torch_distributed_run_with_unset_variables_is_unknown(tmp_path, monkeypatch) -> None:
    # hiyouga/LLaMA-Factory examples/full_multi_gpu/multi_node.sh: every count comes from the environment
    files = {
        "run.sh": "#!/bin/bash\n\npython -m torch.distributed.run \\\n"
        "    --nproc_per_node $NPROC_PER_NODE \\\n"
        "    --nnodes $NNODES \\\n    --node_rank $RANK \\\n    --master_addr $MASTER_ADDR \\\n"
        "    --master_port $MASTER_PORT \\\n    src/train.py examples/full_multi_gpu/llama3_full_sft.yaml\n",
        "src/train.py": SCRIPT,
        "examples/full_multi_gpu/llama3_full_sft.yaml": TRAIN_ARGS,
    }
    [(_, names, plan)] = runs(tmp_path, monkeypatch, files, "8xH100-SXM")
    cmd = plan.spec.command
    assert cmd.launcher == "torchrun" and cmd.launcher_args["nproc_per_node"].unknown
    assert names["batch"].world_size is None  # never a guessed number
    assert plan.spec.training.path.name == "llama3_full_sft.yaml"


def test_accelerate_module_and_python_module_with_subcommand_words() -> None:
    # sotopia-lab/sotopia-rl scripts/sft_train/gemma_sotopia_sft_run_distributed.sh
    first, second = commands(
        "CUDA_VISIBLE_DEVICES=0,1,2,3 accelerate launch \\\n"
        "    --config_file examples/accelerate/single_config.yaml \\\n"
        "    -m src.llmtuner.cli train examples/lora_sotopia/gemma_lora_sotopia_sft.yaml\n\n"
        "CUDA_VISIBLE_DEVICES=0 python -m src.llmtuner.cli train \\\n"
        "    examples/lora_sotopia/gemma_lora_sotopia_sft.yaml\n"
    )
    assert first.launcher == "accelerate" and first.module and first.script.text == "src.llmtuner.cli"
    assert [w.text for w in first.positional] == [
        "train",
        "examples/lora_sotopia/gemma_lora_sotopia_sft.yaml",
    ]
    assert second.launcher == "python" and second.module and (second.span.line, second.span.col) == (6, 1)


def test_accelerate_with_positional_training_file(tmp_path, monkeypatch) -> None:
    # ideallove/LLaMA-Factory my/single_node.sh
    files = {
        "run.sh": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,1 accelerate launch \\\n"
        "    --config_file my/single_config.yaml \\\n"
        "    src/train.py my/sft_lora_train.yaml\n",
        "my/single_config.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\n",
        "my/sft_lora_train.yaml": TRAIN_ARGS,
        "src/train.py": SCRIPT,
    }
    [(_, names, plan)] = runs(tmp_path, monkeypatch, files, "4xH100-NVL")
    assert missing(names) == [] and names["batch"].world_size == 2
    assert plan.spec.accelerate.path.name == "single_config.yaml"
    assert plan.spec.training.path.name == "sft_lora_train.yaml"


def test_torchrun_with_every_rendezvous_flag() -> None:
    # firechecking/CleanTransformer scripts/ft_bloom_deepspeed.sh
    cmd = only(
        "torchrun \\\n  --nnodes 1 \\\n  --nproc_per_node 4 \\\n"
        "  --node_rank 0 \\\n  --master_addr localhost \\\n"
        "  --master_port 12345 \\\n  examples/ft_bloom_deepspeed.py \\\n  --batch_size 8 \\\n"
        "  --ds_config scripts/ds_config_example.json \\\n  --ds_stage 1\n"
    )
    assert cmd.script.text == "examples/ft_bloom_deepspeed.py"
    assert texts(cmd.launcher_args) == {
        "nnodes": "1",
        "nproc_per_node": "4",
        "node_rank": "0",
        "master_addr": "localhost",
        "master_port": "12345",
    }
    assert texts(cmd.script_args) == {
        "batch_size": "8",
        "ds_config": "scripts/ds_config_example.json",
        "ds_stage": "1",
    }


def test_llamafactory_multi_node_counts_nodes_and_processes(tmp_path, monkeypatch) -> None:
    # launcher.py:64-66: torchrun --nnodes $NNODES --nproc_per_node $NPROC_PER_NODE
    files = {
        "run.sh": "#!/bin/bash\nFORCE_TORCHRUN=1 NNODES=2 NODE_RANK=0 MASTER_ADDR=10.0.0.1 \\\n"
        "MASTER_PORT=29500 "
        "NPROC_PER_NODE=8 llamafactory-cli train sft.yaml\n",
        "sft.yaml": "stage: sft\ndo_train: true\nmodel_name_or_path: gpt2\n" + TRAIN_ARGS,
    }
    [(_, names, _)] = runs(tmp_path, monkeypatch, files, "8xH100-SXM")
    assert (names["batch"].processes_per_node, names["batch"].nodes, names["batch"].world_size) == (8, 2, 16)


def test_llamafactory_multi_node_env_block() -> None:
    # LLaMA-Factory's documented multi-node form (README "Supervised Fine-Tuning on multiple nodes"),
    # each variable read by launcher.py:64-68
    cmd = only(
        "FORCE_TORCHRUN=1 \\\nNNODES=${NODE_COUNT:-2} \\\nNODE_RANK=${NODE_RANK} \\\nMASTER_PORT=29500 \\\n"
        "NPROC_PER_NODE=8 \\\nllamafactory-cli train ./examples/train_full/stage_1.yaml\n"
    )
    assert cmd.launcher == "llamafactory" and cmd.subcommand
    assert texts(cmd.env)["NNODES"] == "2" and texts(cmd.env)["NPROC_PER_NODE"] == "8"
    assert cmd.env["NODE_RANK"].text is None
    assert [w.text for w in cmd.positional] == ["./examples/train_full/stage_1.yaml"]


# --- the registry ----------------------------------------------------------------------------------


# the package's modules that are not launchers: the registry, the spec, the protocol, the shared counting
_NOT_LAUNCHERS = {"__init__", "spec", "protocol", "counting"}


def test_every_launcher_module_is_registered_once() -> None:
    modules = sorted(
        p.stem for p in Path(launchers.__file__).parent.glob("*.py") if p.stem not in _NOT_LAUNCHERS
    )
    assert sorted(m.__name__.rsplit(".", 1)[-1] for m in launchers.REGISTRY) == modules  # type: ignore[attr-defined]
    assert sorted(launchers.LAUNCHERS) == modules
    assert all(isinstance(s, LauncherSpec) and s.summary for s in launchers.LAUNCHERS.values())
    assert all(callable(m.processes) for m in launchers.REGISTRY)


@pytest.mark.parametrize(
    ("words", "name", "used"),
    [
        (["torchrun"], "torchrun", 1),
        (["/usr/bin/accelerate", "launch"], "accelerate", 2),
        (["accelerate-launch"], "accelerate", 1),
        (["deepspeed"], "deepspeed", 1),
        (["python3.11"], "python", 1),
        (["llamafactory-cli", "train"], "llamafactory", 1),
        (["lmf", "train"], "llamafactory", 1),
        (["trl", "grpo"], "trl", 1),
        (["trl", "vllm-serve"], "vllm", 2),
        (["vllm", "serve"], "vllm", 2),
        (["axolotl", "train"], "axolotl", 1),
        (["swift", "sft"], "swift", 1),
        (["/opt/conda/bin/swift", "rlhf"], "swift", 1),
        (["swift", "pt"], "swift", 1),
    ],
)
def test_registry_finds_the_launcher(words: list[str], name: str, used: int) -> None:
    found = launchers.find([*words, "x"])
    assert found is not None and (found[0].name, found[1]) == (name, used)


@pytest.mark.parametrize(
    "words",
    [["llamafactory-cli", "webui"], ["trl", "env"], ["accelerate", "config"], ["echo"], ["swift", "infer"]],
)
def test_registry_starts_no_run_for_other_commands(words: list[str]) -> None:
    assert launchers.find(words) is None


def test_accelerate_flags_come_from_the_shipped_parser_data() -> None:
    import json

    data = json.loads(
        (Path(launchers.__file__).parent.parent.parent / "data/launchers/accelerate.json").read_text()
    )
    flags = launchers.LAUNCHERS["accelerate"].flags
    assert set(data["values"]) <= flags.values and set(data["bools"]) <= flags.bools
    assert {"num_processes", "config_file", "deepspeed_config_file"} <= flags.values
    assert "multi_gpu" in flags.bools


def test_llamafactory_spec_names_the_variables_its_launcher_reads() -> None:
    spec = launchers.LAUNCHERS["llamafactory"]
    assert {"FORCE_TORCHRUN", "NNODES", "NODE_RANK", "NPROC_PER_NODE", "MASTER_ADDR", "MASTER_PORT"} <= set(
        spec.env
    )
    assert spec.processes.env == ("NPROC_PER_NODE",)


def test_swift_spec_names_the_variables_its_launcher_reads() -> None:
    # ms-swift 4.6.0 swift/cli/main.py:30-35 (use_torchrun) and 74-83 (get_torchrun_args)
    spec = launchers.LAUNCHERS["swift"]
    assert set(spec.env) == {"NPROC_PER_NODE", "NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT"}
    assert spec.subcommands == {"sft", "pt", "rlhf"}


def _started_by(spec: LauncherSpec) -> list[str]:
    """Command lines that start the launcher, built from its spec alone (so a new launcher module
    is read by the shell reader without code elsewhere)."""
    lines = []
    for words in spec.commands:
        head = " ".join(words)
        if spec.form == "subcommand":
            lines.append(f"{head} {sorted(spec.subcommands)[0]} cfg.yaml --seed 3")
        elif spec.form == "server":
            lines.append(f"{head} org/model --seed 3")
        else:
            lines.append(f"{head} train.py --seed 3")
    if spec.form == "script":
        lines += [f"python -m {m} train.py --seed 3" for m in spec.modules]
    if spec.form == "interpreter":
        lines.append("python3 train.py --seed 3")
    return lines


@pytest.mark.parametrize("spec", list(launchers.LAUNCHERS.values()), ids=lambda s: s.name)
def test_every_registered_launcher_is_read_from_its_spec(spec: LauncherSpec) -> None:
    lines = _started_by(spec)
    assert lines
    for line in lines:
        cmd = only(line + "\n")
        assert cmd.launcher == spec.name, line
        if spec.form == "server":
            assert cmd.launcher_args["model"].text == "org/model" and cmd.launcher_args["seed"].text == "3"
        elif spec.form == "subcommand":
            assert cmd.subcommand and [w.text for w in cmd.positional] == ["cfg.yaml"]
            assert cmd.script_args["seed"].text == "3"
        else:
            assert cmd.script.text == "train.py" and cmd.script_args["seed"].text == "3"


def test_shipped_accelerate_flags_match_the_installed_parser() -> None:
    import importlib.util
    import json

    accelerate = pytest.importorskip("accelerate")
    data = json.loads(
        (Path(launchers.__file__).parent.parent.parent / "data/launchers/accelerate.json").read_text()
    )
    if data["source"]["version"] != accelerate.__version__:
        pytest.skip(f"data from accelerate {data['source']['version']}, {accelerate.__version__} installed")
    gen = Path(__file__).resolve().parents[2] / "tools" / "gen_launcher_flags.py"
    spec = importlib.util.spec_from_file_location("gen_launcher_flags", gen)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.accelerate_flags() == data  # regenerate: python3 tools/gen_launcher_flags.py
