"""The static launch-script reader: launchers, variables, positions, bad input, the real corpus."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from advisor.core.document import Span
from advisor.sources.launch import LaunchCommand, LaunchScript, Word, read_launch

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
LAUNCH_CORPUS = SHARED / "corpus" / "launch"


def read(text: str, name: str = "train.sh") -> LaunchScript:
    doc = read_launch(Path(name), text)
    assert doc.kind == "launch"
    assert isinstance(doc.data, LaunchScript)
    return doc.data


def only(text: str) -> LaunchCommand:
    script = read(text)
    assert len(script.commands) == 1, script.commands
    return script.commands[0]


def texts(words: dict[str, Word]) -> dict[str, str | None]:
    return {k: w.text for k, w in words.items()}


def at(word: Word) -> tuple[int, int]:
    return word.span.line, word.span.col


# --- launchers ---------------------------------------------------------------------------------


def test_accelerate_launch_flags_script_and_script_flags() -> None:
    cmd = only(
        "accelerate launch --config_file configs/zero3.yaml --num_processes=8 --multi_gpu \\\n"
        "    --mixed_precision bf16 scripts/run_sft.py --config recipe.yaml --bf16 \\\n"
        '    --per_device_train_batch_size 4 --fsdp "full_shard auto_wrap" --gradient_checkpointing\n'
    )
    assert cmd.launcher == "accelerate"
    assert texts(cmd.launcher_args) == {
        "config_file": "configs/zero3.yaml",
        "num_processes": "8",
        "multi_gpu": "true",
        "mixed_precision": "bf16",
    }
    assert cmd.script is not None and cmd.script.text == "scripts/run_sft.py" and not cmd.module
    assert texts(cmd.script_args) == {
        "config": "recipe.yaml",
        "bf16": "true",
        "per_device_train_batch_size": "4",
        "fsdp": "full_shard auto_wrap",
        "gradient_checkpointing": "true",
    }
    assert cmd.script_args["fsdp"].raw == '"full_shard auto_wrap"'
    assert at(cmd.launcher_args["num_processes"]) == (1, 68)  # the value after '='
    assert cmd.span == Span(1, 1)


def test_accelerate_boolean_flags_do_not_swallow_the_script() -> None:
    cmd = only("accelerate launch --use_deepspeed --use_fsdp train.py --lr 1e-5\n")
    assert texts(cmd.launcher_args) == {"use_deepspeed": "true", "use_fsdp": "true"}
    assert cmd.script is not None and cmd.script.text == "train.py"
    # an unknown launcher flag followed by a *.py word is taken as boolean
    cmd = only("accelerate launch --some_new_switch train.py\n")
    assert cmd.launcher_args["some_new_switch"].text == "true"
    assert cmd.script is not None and cmd.script.text == "train.py"


def test_accelerate_module_and_python_m_accelerate() -> None:
    cmd = only("accelerate launch --multi_gpu -m axolotl.cli.train cfg.yml --micro_batch_size 2\n")
    assert cmd.launcher == "accelerate" and cmd.module
    assert cmd.script is not None and cmd.script.text == "axolotl.cli.train"
    assert cmd.launcher_args["module"].text == "true"
    assert [w.text for w in cmd.positional] == ["cfg.yml"]
    assert cmd.script_args["micro_batch_size"].text == "2"
    cmd = only("python -u -m accelerate.commands.launch --config_file a.yml sp.py\n")
    assert cmd.launcher == "accelerate" and cmd.launcher_args["config_file"].text == "a.yml"
    assert cmd.script is not None and cmd.script.text == "sp.py"


def test_torchrun_forms() -> None:
    cmd = only("torchrun --standalone --nproc-per-node=4 --nnodes 1 train.py --bf16 True --lr=2e-5\n")
    assert cmd.launcher == "torchrun"
    assert texts(cmd.launcher_args) == {"standalone": "true", "nproc_per_node": "4", "nnodes": "1"}
    assert texts(cmd.script_args) == {"bf16": "True", "lr": "2e-5"}
    cmd = only("torchrun --nproc_per_node gpu -m pkg.train --x 1\n")
    assert cmd.launcher_args["nproc_per_node"].text == "gpu"
    assert cmd.module and cmd.script is not None and cmd.script.text == "pkg.train"


@pytest.mark.parametrize("module", ["torch.distributed.run", "torch.distributed.launch"])
def test_python_m_torch_distributed(module: str) -> None:
    cmd = only(f"python3 -m {module} --nproc_per_node 2 --master_port 29501 train.py --deepspeed ds.json\n")
    assert cmd.launcher == "torchrun"
    assert texts(cmd.launcher_args) == {"nproc_per_node": "2", "master_port": "29501"}
    assert cmd.script is not None and cmd.script.text == "train.py" and not cmd.module
    assert cmd.script_args["deepspeed"].text == "ds.json"


def test_deepspeed_launcher_flags_before_the_script() -> None:
    cmd = only(
        "deepspeed -H /job/hostfile -i worker-1:0,1 -e worker-2:3 --num_gpus 2 --num_nodes 1 "
        "--master_port 29600 --no_local_rank --launcher pdsh train.py --deepspeed --zero_stage 3\n"
    )
    assert cmd.launcher == "deepspeed"
    assert texts(cmd.launcher_args) == {
        "hostfile": "/job/hostfile",
        "include": "worker-1:0,1",
        "exclude": "worker-2:3",
        "num_gpus": "2",
        "num_nodes": "1",
        "master_port": "29600",
        "no_local_rank": "true",
        "launcher": "pdsh",
    }
    assert cmd.script is not None and cmd.script.text == "train.py"
    assert texts(cmd.script_args) == {"deepspeed": "true", "zero_stage": "3"}


def test_deepspeed_module() -> None:
    cmd = only("deepspeed --module openrlhf.cli.train_sft --train.batch_size 256 --ckpt.save_steps -1\n")
    assert cmd.module and cmd.script is not None and cmd.script.text == "openrlhf.cli.train_sft"
    assert texts(cmd.script_args) == {"train.batch_size": "256", "ckpt.save_steps": "-1"}


def test_plain_python() -> None:
    cmd = only("python -u train.py args.yaml\n")
    assert cmd.launcher == "python"
    assert cmd.script is not None and cmd.script.text == "train.py"
    assert [w.text for w in cmd.positional] == ["args.yaml"]
    assert cmd.launcher_args["u"].text == "true"
    assert read("python -c 'import torch; print(torch.cuda.device_count())'\n").commands == []


def test_llamafactory_trl_axolotl() -> None:
    script = read(
        "llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml\n"
        "trl sft --config recipe.yaml --accelerate_config zero3 --num_processes 4 \\\n"
        "    --gradient_accumulation_steps 2\n"
        "axolotl train examples/llama-3/lora-1b.yml --launcher torchrun -- --nproc_per_node=2\n"
        "python -m axolotl.cli.train cfg.yml\n"
        "llamafactory-cli webui\n"
    )
    lf, trl, axo, axo_py = script.commands
    assert lf.launcher == "llamafactory" and lf.script is not None and lf.script.text == "train"
    assert [w.text for w in lf.positional] == ["examples/train_lora/llama3_lora_sft.yaml"]
    assert trl.launcher == "trl" and trl.script is not None and trl.script.text == "sft"
    assert texts(trl.script_args) == {"config": "recipe.yaml", "gradient_accumulation_steps": "2"}
    assert texts(trl.launcher_args) == {"accelerate_config": "zero3", "num_processes": "4"}
    assert axo.launcher == "axolotl" and [w.text for w in axo.positional] == ["examples/llama-3/lora-1b.yml"]
    assert texts(axo.launcher_args) == {"launcher": "torchrun", "nproc_per_node": "2"}
    assert axo_py.launcher == "axolotl" and axo_py.module
    assert [w.text for w in axo_py.positional] == ["cfg.yml"]


def test_vllm_server_forms() -> None:
    script = read(
        "CUDA_VISIBLE_DEVICES=0,1 vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2 "
        "--enforce-eager \\\n"
        "    --port 8000\n"
        "python -m vllm.entrypoints.openai.api_server --model m -tp=4 --pipeline-parallel-size 2\n"
        "srun --nodes=1 trl vllm-serve --model $MODEL --tensor_parallel_size 2 --data_parallel_size 2 &\n"
        "python3 -m vllm.entrypoints.cli.main serve m -tp 2\n"
        "vllm bench latency --model m\n"  # not a server
    )
    serve, api, trl, cli = script.commands
    assert {c.launcher for c in script.commands} == {"vllm"}
    assert all(c.script is None and not c.script_args for c in script.commands)
    assert texts(serve.launcher_args) == {
        "model": "meta-llama/Llama-3.1-8B",
        "tensor_parallel_size": "2",
        "enforce_eager": "true",
        "port": "8000",
    }
    assert serve.env["CUDA_VISIBLE_DEVICES"].text == "0,1"
    assert at(serve.launcher_args["tensor_parallel_size"]) == (1, 84)
    assert texts(api.launcher_args) == {
        "model": "m",
        "tensor_parallel_size": "4",
        "pipeline_parallel_size": "2",
    }
    assert trl.launcher_args["model"].text is None
    assert texts(trl.launcher_args)["tensor_parallel_size"] == "2"
    assert texts(trl.launcher_args)["data_parallel_size"] == "2"
    assert texts(cli.launcher_args) == {"model": "m", "tensor_parallel_size": "2"}


def test_corpus_trl_vllm_serve() -> None:
    script = corpus_script("huggingface__open-r1__slurm__train.slurm")
    vllm, acc = script.commands
    assert vllm.launcher == "vllm" and acc.launcher == "accelerate"
    assert vllm.launcher_args["tensor_parallel_size"].raw == "$TP"


# --- environment, wrappers, separators -----------------------------------------------------------


def test_exports_and_prefixes_make_the_environment() -> None:
    script = read(
        "export NCCL_DEBUG=INFO OMP_NUM_THREADS=8\n"
        "NOT_EXPORTED=1\n"
        "GPUS=0,1\n"
        "export CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
        "CUDA_VISIBLE_DEVICES=$GPUS NPROC_PER_NODE=2 llamafactory-cli train cfg.yaml\n"
        "torchrun --nproc_per_node 2 t.py\n"
    )
    lf, tr = script.commands
    assert texts(lf.env) == {
        "NCCL_DEBUG": "INFO",
        "OMP_NUM_THREADS": "8",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "NPROC_PER_NODE": "2",
    }
    assert lf.env["CUDA_VISIBLE_DEVICES"].raw == "$GPUS"
    assert at(lf.env["CUDA_VISIBLE_DEVICES"]) == (5, 22)
    assert "CUDA_VISIBLE_DEVICES" not in tr.env  # unset: simply absent
    assert "NOT_EXPORTED" not in tr.env
    assert script.variables["NOT_EXPORTED"].text == "1"
    assert "CUDA_VISIBLE_DEVICES" not in script.variables  # a prefix is not a shell variable


def test_export_after_assignment_and_unset() -> None:
    script = read(
        "CUDA_VISIBLE_DEVICES=2,3\nexport CUDA_VISIBLE_DEVICES\ntorchrun t.py\n"
        "unset CUDA_VISIBLE_DEVICES\ntorchrun u.py\n"
    )
    first, second = script.commands
    assert first.env["CUDA_VISIBLE_DEVICES"].text == "2,3"
    assert at(first.env["CUDA_VISIBLE_DEVICES"]) == (1, 22)
    assert "CUDA_VISIBLE_DEVICES" not in second.env


def test_wrappers() -> None:
    script = read(
        "CUDA_VISIBLE_DEVICES=0 srun -N 2 --gres gpu:4 --kill-on-bad-exit=1 torchrun --nnodes 2 t.py\n"
        "nohup env -u FOO NCCL_P2P_DISABLE=1 python train.py > log.txt 2>&1 &\n"
        "time numactl --cpunodebind=0 --membind=0 deepspeed --num_gpus 4 t.py\n"
        "timeout 10h taskset -c 0-15 accelerate launch t.py\n"
        "uv run --with x torchrun --nproc_per_node 8 t.py\n"
    )
    launchers = [c.launcher for c in script.commands]
    assert launchers == ["torchrun", "python", "deepspeed", "accelerate", "torchrun"]
    assert script.commands[0].env["CUDA_VISIBLE_DEVICES"].text == "0"
    assert script.commands[0].launcher_args["nnodes"].text == "2"
    assert script.commands[1].env["NCCL_P2P_DISABLE"].text == "1"
    assert script.commands[1].positional == []  # redirections are not arguments
    assert script.commands[2].launcher_args["num_gpus"].text == "4"
    assert script.commands[4].launcher_args["nproc_per_node"].text == "8"


def test_separators_and_compound_commands() -> None:
    script = read(
        "set -e\n"
        "mkdir -p out && torchrun --nproc_per_node 2 a.py | tee out/log; echo done\n"
        "for seed in 1 2 3; do\n"
        "  deepspeed --num_gpus 2 b.py --seed $seed\n"
        "done\n"
        'if [ -n "$RUN" ]; then accelerate launch c.py; else python d.py; fi\n'
        "while true; do torchrun e.py; break; done\n"
        "run() {\n"
        '  python f.py "$@"\n'
        "}\n"
        "echo torchrun g.py\n"
    )
    scripts = [c.script.text for c in script.commands if c.script is not None]
    assert scripts == ["a.py", "b.py", "c.py", "d.py", "e.py", "f.py"]
    seed = script.commands[1].script_args["seed"]
    assert seed.text is None and seed.unknown == "$seed is a loop variable"
    assert script.commands[2].span == Span(6, 24)  # the command after `then`
    assert script.commands[5].positional[0].text is None  # "$@": the script's own arguments


def test_bash_c_string_is_read_as_a_script() -> None:
    script = read(
        'export LAUNCHER="ACCELERATE_LOG_LEVEL=info accelerate launch --num_processes 8"\n'
        'srun --nodes=2 bash -c "$LAUNCHER train.py --config recipe.yaml"\n'
    )
    cmd = script.commands[0]
    assert cmd.launcher == "accelerate"
    assert cmd.span == Span(2, 1)
    assert cmd.launcher_args["num_processes"].text == "8"
    assert at(cmd.launcher_args["num_processes"]) == (1, 78)  # where the 8 is written
    assert cmd.env["ACCELERATE_LOG_LEVEL"].text == "info"
    assert cmd.script_args["config"].text == "recipe.yaml"


def test_word_splitting_of_unquoted_variables_keeps_positions() -> None:
    script = read(
        "NGPU=$(nvidia-smi -L | wc -l)\n"
        'DIST="\n'
        "    --nproc_per_node $NGPU \\\n"
        '    --nnodes 2"\n'
        "torchrun $DIST train.py\n"
    )
    cmd = script.commands[0]
    nproc = cmd.launcher_args["nproc_per_node"]
    assert nproc.text is None and nproc.unknown == "$NGPU: command substitution"
    assert nproc.raw == "$NGPU" and at(nproc) == (3, 22)
    assert cmd.launcher_args["nnodes"].text == "2" and at(cmd.launcher_args["nnodes"]) == (4, 14)
    assert cmd.script is not None and cmd.script.text == "train.py"
    quoted = read('A="a b"\npython t.py "$A" $A\n').commands[0]
    assert [w.text for w in quoted.positional] == ["a b", "a", "b"]  # quoted: one word, not split


def test_heredoc_read_into_a_variable() -> None:
    script = read(
        "read -r -d '' ARGS <<EOF\n"
        "openrlhf.cli.train_dpo \\\n"
        "   --train.batch_size 256 \\\n"
        "   --ds.zero_stage $STAGE\n"
        "EOF\n"
        "deepspeed --module $ARGS\n"
    )
    cmd = script.commands[0]
    assert cmd.module and cmd.script is not None and cmd.script.text == "openrlhf.cli.train_dpo"
    assert at(cmd.script) == (2, 1)
    assert cmd.script_args["train.batch_size"].text == "256"
    assert at(cmd.script_args["train.batch_size"]) == (3, 23)
    assert cmd.script_args["ds.zero_stage"].unknown == "$STAGE is not set in the script"


# --- values -----------------------------------------------------------------------------------


def test_continuation_lines_keep_exact_positions() -> None:
    text = (
        "torchrun --nproc_per_node=4 --master_port=20001 fastchat/train/train_mem.py \\\n"
        "    --model_name_or_path ~/model_weights/llama-7b  \\\n"
        "    --per_device_train_batch_size 2 \\\n"
        "    --gradient_accumulation_steps 16 \\\n"
        '    --fsdp "full_shard auto_wrap" \\\n'
        "    --bf16\n"
    )
    cmd = only(text)
    accum = cmd.script_args["gradient_accumulation_steps"]
    assert (accum.text, accum.raw, at(accum)) == ("16", "16", (4, 35))
    assert at(cmd.script_args["fsdp"]) == (5, 12)
    assert at(cmd.script_args["bf16"]) == (6, 5) and cmd.script_args["bf16"].raw == "--bf16"
    assert at(cmd.launcher_args["master_port"]) == (1, 43)
    doc = read_launch(Path("x.sh"), text)
    assert doc.key_spans[("commands", 0, "script_args", "gradient_accumulation_steps")] == Span(4, 5)
    assert doc.value_spans[("commands", 0, "script_args", "gradient_accumulation_steps")] == Span(4, 35)
    assert doc.value_spans[("commands", 0, "launcher")] == Span(1, 1)


def test_parameter_defaults() -> None:
    script = read(
        "NUM_GPUS=${NUM_GPUS:-4}\n"
        "EMPTY=\n"
        "A=${EMPTY:-x} B=${EMPTY-y} C=${UNSET-z}\n"
        ": ${PORT:=29501}\n"
        "D=${PORT:+set}\n"
        "MODEL='Qwen/Qwen-7B'\n"
        'OUT="out/${MODEL#*/}-${NUM_GPUS}gpu"\n'
        'torchrun --nproc_per_node ${NUM_GPUS:-1} --master_port $PORT t.py --output_dir "$OUT"\n'
    )
    v = texts(script.variables)
    assert v["NUM_GPUS"] == "4" and v["A"] == "x" and v["B"] == "" and v["C"] == "z"
    assert v["PORT"] == "29501" and v["D"] == "set" and v["OUT"] == "out/Qwen-7B-4gpu"
    assert script.variables["NUM_GPUS"].raw == "${NUM_GPUS:-4}"
    assert at(script.variables["NUM_GPUS"]) == (1, 10)
    cmd = script.commands[0]
    nproc = cmd.launcher_args["nproc_per_node"]
    assert (nproc.text, nproc.raw, at(nproc)) == ("4", "${NUM_GPUS:-1}", (8, 27))
    assert cmd.launcher_args["master_port"].text == "29501"
    assert cmd.script_args["output_dir"].text == "out/Qwen-7B-4gpu"


def test_unknown_values_say_why() -> None:
    script = read(
        "N=$(nvidia-smi -L | wc -l)\n"
        "H=`hostname`\n"
        "torchrun --nproc_per_node $(nvidia-smi -L | wc -l) --nnodes $NUM_NODES --master_addr $H t.py "
        "--per_device_train_batch_size $N --output_dir $1\n"
    )
    cmd = script.commands[0]
    direct = cmd.launcher_args["nproc_per_node"]
    assert direct.text is None and direct.raw == "$(nvidia-smi -L | wc -l)"
    assert direct.unknown == "command substitution" and at(direct) == (3, 27)
    assert cmd.launcher_args["nnodes"].unknown == "$NUM_NODES is not set in the script"
    assert cmd.launcher_args["master_addr"].unknown == "$H: command substitution"
    assert cmd.script_args["per_device_train_batch_size"].unknown == "$N: command substitution"
    assert cmd.script_args["output_dir"].unknown == "$1 is a script argument"
    assert script.variables["N"].text is None and script.variables["N"].raw == "$(nvidia-smi -L | wc -l)"


def test_arithmetic() -> None:
    script = read(
        "NUM_GPUS=8\nPER_GPU=2\nTOTAL=128\n"
        "ACC=$(($TOTAL/$NUM_GPUS/$PER_GPU))\n"
        "LAST=$((NUM_GPUS - 1))\n"
        "NEG=$(( (-7) / 2 ))\n"
        "BAD=$((SLURM_NNODES * NUM_GPUS))\n"
        "ZERO=$((1 / 0))\n"
    )
    v = texts(script.variables)
    assert (v["ACC"], v["LAST"], v["NEG"]) == ("8", "7", "-3")
    assert script.variables["BAD"].unknown == "$SLURM_NNODES is not set in the script"
    # bash 5: "1 / 0: division by 0", and the assignment is not made (test_shell_gpu_list_count.py)
    assert "ZERO" not in script.variables
    problems = read_launch(Path("train.sh"), "ZERO=$((1 / 0))\n").problems
    assert [(p.span.line, "division by 0" in p.message) for p in problems] == [(1, True)]


def test_assignments_in_branches_keep_known_defaults() -> None:
    script = read(
        'MODEL="Qwen/Qwen-7B"\n'
        "OUTPUT=$1\n"
        'TASK=""\n'
        'while [[ "$1" != "" ]]; do\n'
        "  case $1 in\n"
        "    -m | --model ) shift; MODEL=$1 ;;\n"
        '    --task) TASK="$2"; shift 2 ;;\n'
        "    *) exit 1 ;;\n"
        "  esac\n"
        "done\n"
        'if [ "$OUTPUT" == "" ]; then\n'
        "  OUTPUT=./output\n"
        "fi\n"
    )
    v = script.variables
    assert v["MODEL"].text == "Qwen/Qwen-7B"  # an argument may override it; the default is what we know
    assert v["OUTPUT"].text == "./output"
    assert v["TASK"].text is None and v["TASK"].unknown == "$2 is a script argument"


def test_quoting() -> None:
    cmd = only(
        "python t.py --a 'single $NOT' --b \"double $HOME_DIR\" --c $'tab\\tsep' \\\n"
        '  --d "" --e x\\ y --f="q r"\n'
    )
    a = texts(cmd.script_args)
    assert a["a"] == "single $NOT" and a["c"] == "tab\tsep" and a["d"] == ""
    assert a["e"] == "x y" and a["f"] == "q r"
    assert cmd.script_args["b"].unknown == "$HOME_DIR is not set in the script"
    assert cmd.script_args["f"].raw == '"q r"' and at(cmd.script_args["f"]) == (2, 23)


# --- sbatch -----------------------------------------------------------------------------------


def test_sbatch_directives() -> None:
    script = read(
        "#!/bin/bash\n"
        "#SBATCH --job-name=train\n"
        "#SBATCH --nodes=2\n"
        "#SBATCH --gpus-per-node=8 --ntasks-per-node 1   # one launcher per node\n"
        "#SBATCH --gres=gpu:h100:8\n"
        "#SBATCH -c 32\n"
        "#SBATCH --exclusive\n"
        "#SBATCH -t 3-00:00:00\n"
        "##SBATCH --nodes=16\n"
        "srun torchrun --nnodes 2 --nproc_per_node 8 t.py\n"
        "#SBATCH --nodes=64\n",  # after the first command: sbatch ignores it
        "job.slurm",
    )
    assert texts(script.sbatch) == {
        "job_name": "train",
        "nodes": "2",
        "gpus_per_node": "8",
        "ntasks_per_node": "1",
        "gres": "gpu:h100:8",
        "cpus_per_task": "32",
        "exclusive": "true",
        "time": "3-00:00:00",
    }
    assert at(script.sbatch["nodes"]) == (3, 17)
    assert at(script.sbatch["ntasks_per_node"]) == (4, 45)
    assert script.commands[0].launcher == "torchrun"


# --- bad input --------------------------------------------------------------------------------


def test_unbalanced_quote_is_a_problem_and_reading_goes_on() -> None:
    doc = read_launch(
        Path("bad.sh"),
        'torchrun --nproc_per_node 2 a.py\nMODEL="oops\ntorchrun --nproc_per_node 4 b.py\n',
    )
    assert [(p.kind, p.span) for p in doc.problems] == [("launch-syntax", Span(2, 7))]
    assert "double quote" in doc.problems[0].message
    assert [c.script.text for c in doc.data.commands if c.script] == ["a.py", "b.py"]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("A='x\ntorchrun b.py\n", 1),
        ("torchrun --n $(nvidia-smi \ntorchrun b.py\n", 1),
        ("echo ok\nX=${A:-1\ntorchrun b.py\n", 2),
        ("echo `date\ntorchrun b.py\n", 1),
    ],
)
def test_unterminated_constructs(text: str, line: int) -> None:
    doc = read_launch(Path("bad.sh"), text)
    assert [p.kind for p in doc.problems] == ["launch-syntax"]
    assert doc.problems[0].span.line == line
    assert [c.script.text for c in doc.data.commands if c.script] == ["b.py"]


def test_binary_junk_is_reported_per_line() -> None:
    doc = read_launch(Path("bin.sh"), "torchrun a.py\n\x00\x01\x02garbage\x7f\ntorchrun b.py\n")
    assert [(p.kind, p.span) for p in doc.problems] == [("launch-syntax", Span(2, 1))]
    assert len(doc.data.commands) == 2


def test_garbage_never_raises() -> None:
    rng = random.Random(1234)
    alphabet = [*"ab_=-$(){}[]'\"`\\\n \t;|&<>#*@!0123456789:+%/.,~", "$((", "${", "<<EOF\n", "$("]
    seeds = ["torchrun --nproc_per_node 4 t.py\n", "accelerate launch --multi_gpu x.py --a 1\n"]
    for _ in range(1500):
        base = rng.choice(seeds)
        k = rng.randint(0, len(base))
        text = base[:k] + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) + base[k:]
        doc = read_launch(Path("f.sh"), text)
        assert not any("could not be read" in p.message for p in doc.problems), text
        for cmd in doc.data.commands:
            args = [*cmd.launcher_args.values(), *cmd.script_args.values()]
            for w in [*args, *cmd.env.values(), *cmd.positional]:
                assert w.span.line >= 1 and w.span.col >= 1
                assert (w.text is None) == (w.unknown is not None)


def test_runaway_expansion_is_bounded() -> None:
    doc = read_launch(Path("x.sh"), "A=x\n" + 'A="$A $A"\n' * 40 + "torchrun $A t.py\n")
    assert doc.data.commands[0].script is not None


# --- the real corpus --------------------------------------------------------------------------


def _corpus_files() -> list[Path]:
    files = sorted(LAUNCH_CORPUS.glob("*")) if LAUNCH_CORPUS.is_dir() else []
    return files + sorted((SHARED / "seeds").glob("*.sh"))


# Submits other jobs with `sbatch recipes/launch.slurm ...` and runs no launcher itself.
NO_LAUNCHER = {"huggingface__alignment-handbook__recipes__pref_align_scan__launch_scan.sh"}


def test_every_real_launch_script_is_read() -> None:
    files = _corpus_files()
    if not files:
        pytest.skip("../shared/corpus/launch is absent")
    for path in files:
        doc = read_launch(path, path.read_text(encoding="utf-8"))
        assert doc.kind == "launch"
        assert not [p for p in doc.problems if p.severity != "warning"], (path.name, doc.problems)
        if path.name in NO_LAUNCHER:
            assert doc.data.commands == []
        else:
            assert doc.data.commands, path.name


def corpus_script(name: str) -> LaunchScript:
    path = LAUNCH_CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    doc = read_launch(path, path.read_text(encoding="utf-8"))
    assert doc.problems == []
    return doc.data


def test_corpus_qwen_gpu_count_from_torch_is_unknown() -> None:
    cmd = corpus_script("QwenLM__Qwen__finetune__finetune_ds.sh").commands[0]
    assert cmd.launcher == "torchrun"
    nproc = cmd.launcher_args["nproc_per_node"]
    assert nproc.text is None and nproc.unknown == "$GPUS_PER_NODE: command substitution"
    assert nproc.raw == "$GPUS_PER_NODE" and at(nproc) == (60, 22)
    assert texts(cmd.launcher_args) == {
        "nproc_per_node": None,
        "nnodes": "1",
        "node_rank": "0",
        "master_addr": "localhost",
        "master_port": "6001",
    }
    assert cmd.script is not None and cmd.script.text == "finetune.py"
    assert cmd.script_args["gradient_accumulation_steps"].text == "16"
    assert cmd.script_args["model_name_or_path"].text == "Qwen/Qwen-7B"
    assert cmd.script_args["deepspeed"].text == "finetune/ds_config_zero3.json"
    assert cmd.env["CUDA_DEVICE_MAX_CONNECTIONS"].text == "1"


def test_corpus_open_instruct_arithmetic() -> None:
    cmd = corpus_script("allenai__open-instruct__scripts__dpo_train_with_accelerate.sh").commands[0]
    assert cmd.launcher == "accelerate"
    assert cmd.env["CUDA_VISIBLE_DEVICES"].text == "0,1,2,3,4,5,6,7"
    nproc = cmd.launcher_args["num_processes"]
    assert (nproc.text, nproc.raw) == ("8", "$NUM_GPUS")
    assert cmd.launcher_args["use_deepspeed"].text == "true"
    assert cmd.script_args["gradient_accumulation_steps"].text == "4"  # 32 / 8 / 1
    cfg = corpus_script("allenai__open-instruct__scripts__finetune_with_accelerate_config.sh").commands[0]
    assert cfg.env["CUDA_VISIBLE_DEVICES"].unknown == "command substitution"
    assert cfg.launcher_args["num_processes"].unknown == "$NUM_GPUS: $1 is a script argument"
    assert cfg.positional[0].unknown == "$2 is a script argument"


def test_corpus_fastchat_and_llava() -> None:
    cmd = corpus_script("lm-sys__FastChat__scripts__train_vicuna_13b.sh").commands[0]
    nproc = cmd.launcher_args["nproc_per_node"]
    assert nproc.text == "8" and at(nproc) == (1, 27)
    assert cmd.script_args["fsdp"].text == "full_shard auto_wrap offload"
    assert cmd.script_args["per_device_train_batch_size"].text == "4"
    llava = corpus_script("haotian-liu__LLaVA__scripts__v1_5__finetune.sh").commands[0]
    assert llava.launcher == "deepspeed" and llava.launcher_args == {}
    assert llava.script_args["deepspeed"].text == "./scripts/zero3.json"
    assert at(llava.script_args["deepspeed"]) == (4, 17)


def test_corpus_deepspeed_chat_defaults_and_num_gpus() -> None:
    base = (
        "microsoft__DeepSpeedExamples__applications__DeepSpeed-Chat__training__step1_supervised_finetuning__"
    )
    single = corpus_script(base + "training_scripts__opt__single_gpu__run_1.3b.sh").commands[0]
    assert single.launcher_args["num_gpus"].text == "1"
    assert single.script_args["zero_stage"].text == "0"  # ZERO_STAGE=$2, then the script's default
    assert single.script_args["deepspeed"].text == "true"
    node = corpus_script(base + "training_scripts__opt__single_node__run_1.3b.sh").commands[0]
    assert node.launcher_args == {}
    assert node.script_args["data_path"].text == (
        "Dahoas/rm-static Dahoas/full-hh-rlhf Dahoas/synthetic-instruct-gptj-pairwise "
        "yitingxie/rlhf-reward-datasets"
    )


def test_corpus_openrlhf_heredoc_module() -> None:
    cmd = corpus_script("OpenRLHF__OpenRLHF__examples__scripts__train_sft.sh").commands[0]
    assert cmd.launcher == "deepspeed" and cmd.module
    assert cmd.script is not None and cmd.script.text == "openrlhf.cli.train_sft"
    assert cmd.script_args["train.batch_size"].text == "256"
    assert cmd.script_args["train.micro_batch_size"].text == "2"
    assert at(cmd.script_args["train.batch_size"]) == (9, 23)


def test_corpus_slurm_accelerate() -> None:
    script = corpus_script("huggingface__accelerate__examples__slurm__submit_multinode.sh")
    assert texts(script.sbatch)["nodes"] == "4" and script.sbatch["gres"].text == "gpu:4"
    assert script.sbatch["cpus_per_task"].text == "160"
    cmd = script.commands[0]
    assert cmd.launcher == "accelerate" and cmd.span == Span(42, 1)  # `srun $CMD`
    assert cmd.launcher_args["num_processes"].unknown == "$SLURM_NNODES is not set in the script"
    assert cmd.launcher_args["num_processes"].raw == "$((SLURM_NNODES * GPUS_PER_NODE))"
    assert cmd.launcher_args["main_process_port"].text == "29500"
    assert cmd.script is not None and cmd.script.text == "/accelerate/examples/complete_nlp_example.py"
    single = corpus_script("huggingface__accelerate__examples__slurm__submit_multigpu.sh").commands[0]
    assert single.launcher_args["num_processes"].text == "4"


def test_corpus_alignment_handbook_bash_c() -> None:
    script = corpus_script("huggingface__alignment-handbook__recipes__launch.slurm")
    assert script.sbatch["gres"].text == "gpu:8"
    server, cmd = script.commands  # `trl vllm-serve ... &` on the last node, then the training
    assert server.launcher == "vllm"
    assert cmd.launcher == "accelerate" and cmd.span == Span(168, 8)
    assert cmd.env["ACCELERATE_LOG_LEVEL"].text == "info"
    assert cmd.env["NCCL_ASYNC_ERROR_HANDLING"].text == "1"
    assert cmd.launcher_args["main_process_port"].text == "6000"
    assert cmd.launcher_args["num_processes"].text is None
    assert cmd.script is not None and cmd.script.raw == "scripts/$TASK.py"


def test_corpus_llamafactory() -> None:
    fsdp = corpus_script("hiyouga__LLaMA-Factory__examples__extras__fsdp_qlora__train.sh").commands[0]
    assert fsdp.env["CUDA_VISIBLE_DEVICES"].text == "0,1" and at(fsdp.env["CUDA_VISIBLE_DEVICES"]) == (4, 22)
    assert fsdp.launcher_args["config_file"].text == "examples/accelerate/fsdp_config.yaml"
    assert [w.text for w in fsdp.positional] == ["examples/extras/fsdp_qlora/llama3_lora_sft.yaml"]
    cli = corpus_script("hiyouga__LLaMA-Factory__examples__train_lora__qwen3_lora_sft.sh").commands[0]
    assert cli.launcher == "llamafactory"
    assert cli.script_args["model_name_or_path"].text == "Qwen/Qwen3-4B-Instruct-2507"
    assert cli.script_args["bf16"].text == "true"


# --- value spans carry their end; --fix replaces exactly those characters ----------------------


def _ends(text: str) -> dict[str, str]:
    doc = read_launch(Path("run.sh"), text)
    out = {}
    for path, span in doc.value_spans.items():
        if path[0] == "commands" and len(path) == 4 and span.has_end:
            assert span.offset is not None and span.end_offset is not None
            out[str(path[3])] = text[span.offset : span.end_offset]
    return out


def test_value_spans_end_where_the_written_value_ends() -> None:
    text = (
        '#!/bin/bash\nN=4\nA=(--nnodes 2)\ntorchrun --nproc_per_node=$N "${A[@]}" --master_port "29500" '
        "train.py \\\n    --lr 1e-5 --lora_target_modules q k v\n"
    )
    assert _ends(text) == {
        "nproc_per_node": "$N",
        "nnodes": "2",  # an array element ends where it is written in the array
        "master_port": '"29500"',
        "lr": "1e-5",
        "lora_target_modules": "q k v",
    }
    span = read_launch(Path("run.sh"), text).value_spans[("commands", 0, "script_args", "lr")]
    assert (span.line, span.col, span.end_line, span.end_col) == (5, 10, 5, 14)


def test_bash_c_words_have_an_end_only_when_written_unchanged() -> None:
    text = (
        "#!/bin/bash\nbash -c 'accelerate launch --num_processes 8 x.py'\n"
        'P=4\nbash -c "torchrun --nproc_per_node $P y.py"\n'
    )
    doc = read_launch(Path("run.sh"), text)
    first = doc.value_spans[("commands", 0, "launcher_args", "num_processes")]
    assert first.has_end and text[first.offset : first.end_offset] == "8"
    second = doc.value_spans[("commands", 1, "launcher_args", "nproc_per_node")]
    assert second.line == 4 and not second.has_end  # "4" came through the outer shell's $P


def test_span_ends_do_not_change_equality() -> None:
    assert Span(2, 3, 2, 5, 10, 12) == Span(2, 3)


@pytest.mark.parametrize(
    ("line", "col", "replaced"),
    [(3, 10, "8"), (3, 27, "8"), (3, 43, '"29500"'), (4, 10, "1e-5"), (4, 19, "$N"), (2, 3, "4")],
)
def test_fix_replaces_exactly_the_value_span(tmp_path: Path, line: int, col: int, replaced: str) -> None:
    from advisor.core.findings import Edit
    from advisor.engine.fix import load_source, plan_edit

    path = tmp_path / "run.sh"
    path.write_bytes(
        b'#!/bin/bash\nN=4\ntorchrun --nproc_per_node=8 --master_port "29500" train.py \\\r\n'
        b"    --lr 1e-5 --x $N\r\n"
    )
    src = load_source(path)
    edit = plan_edit(Edit(path, None, 2, line, col), src)
    assert src.text[edit.start : edit.end] == replaced and edit.text == "2"


def test_fix_refuses_a_word_whose_end_is_not_known(tmp_path: Path) -> None:
    from advisor.core.findings import Edit
    from advisor.engine.fix import FixError, load_source, plan_edit

    path = tmp_path / "run.sh"
    path.write_text("#!/bin/bash\nbash -c \"torchrun --nproc_per_node 4\"'$(nproc)' train.py\n")
    with pytest.raises(FixError):
        plan_edit(Edit(path, None, 2, 1, 1), load_source(path))


def test_backslash_ending_the_script_is_dropped() -> None:
    # artidoro/qlora scripts/finetune_llama2_guanaco_7b.sh ends with `--seed 0 \` and no newline;
    # bash drops the backslash (`printf '[%s]' a \` at EOF prints [a]), so no "\" word follows.
    cmd = only("python qlora.py --data_seed 42 \\\n    --seed 0 \\")
    assert texts(cmd.script_args) == {"data_seed": "42", "seed": "0"} and cmd.positional == []


def test_array_with_newlines_and_operators_inside() -> None:
    # found by fuzzing: a newline inside ( ... ) separates elements; an operator makes the array unknown
    cmd = only("A=(--nproc_per_node\n  4)\nB=(x ; y)\ntorchrun ${A[@]} train.py --b ${B[0]}\n")
    assert cmd.launcher_args["nproc_per_node"].text == "4"
    assert cmd.script_args["b"].text is None and cmd.script_args["b"].unknown
